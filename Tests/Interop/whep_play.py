#!/usr/bin/python3
"""Plays a room's anchor from a WHEP endpoint with GStreamer's webrtcbin and counts what it decodes.

Usage: whep_play.py URL TOKEN SECONDS
Prints one JSON line: {"videoFrames": N, "width": W, "height": H, "audioBuffers": M, "state": "..."};
exits non-zero when no video frame was decoded.
"""
import json
import sys
import threading
import urllib.request

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC, Nice  # noqa: E402

KEEP = []


def use_loopback(webrtc):
    """libnice leaves out loopback addresses; the tests run on 127.0.0.1, so add it."""
    ice = webrtc.get_property("ice-agent")
    agent = ice.get_property("agent")
    KEEP.extend([ice, agent])
    address = Nice.Address.new()
    address.set_from_string("127.0.0.1")
    agent.add_local_address(address)


def main():
    url, token, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    Gst.init(None)
    pipeline = Gst.Pipeline.new("whep")
    webrtc = Gst.ElementFactory.make("webrtcbin", "webrtc")
    webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
    pipeline.add(webrtc)
    use_loopback(webrtc)
    loop = GLib.MainLoop()
    result = {"videoFrames": 0, "audioBuffers": 0}
    location = {}

    def fail(message):
        result["error"] = message
        loop.quit()

    def count(kind):
        def probe(pad, info):
            if kind == "video":
                result["videoFrames"] += 1
                caps = pad.get_current_caps()
                if caps is not None:
                    structure = caps.get_structure(0)
                    result["width"] = structure.get_value("width")
                    result["height"] = structure.get_value("height")
            else:
                result["audioBuffers"] += 1
            return Gst.PadProbeReturn.OK
        return probe

    def on_decoded_pad(_, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        kind = "video" if caps.to_string().startswith("video") else "audio"
        sink = Gst.ElementFactory.make("fakesink", None)
        sink.set_property("sync", False)
        pipeline.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))
        sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, count(kind))

    def on_incoming_pad(_, pad):
        if pad.direction != Gst.PadDirection.SRC:
            return
        decode = Gst.ElementFactory.make("decodebin", None)
        decode.connect("pad-added", on_decoded_pad)
        pipeline.add(decode)
        decode.sync_state_with_parent()
        pad.link(decode.get_static_pad("sink"))

    def post_offer(offer_sdp):
        request = urllib.request.Request(url, data=offer_sdp.encode(), method="POST",
                                         headers={"Content-Type": "application/sdp", "Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                location["url"] = urllib.request.urljoin(url, response.headers["Location"])
                answer_sdp = response.read().decode()
        except Exception as error:  # noqa: BLE001
            GLib.idle_add(fail, "WHEP POST failed: %s" % error)
            return
        GLib.idle_add(set_answer, answer_sdp)

    def set_answer(answer_sdp):
        ok, sdp = GstSdp.SDPMessage.new_from_text(answer_sdp)
        webrtc.emit("set-remote-description", GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp), Gst.Promise.new())
        return False

    def on_offer(promise, _):
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        if offer is None:
            GLib.idle_add(fail, "create-offer failed: %s" % reply.to_string())
            return
        webrtc.emit("set-local-description", offer, Gst.Promise.new())
        threading.Thread(target=post_offer, args=(offer.sdp.as_text(),), daemon=True).start()

    def on_state(element, _):
        state = element.get_property("connection-state")
        result["state"] = state.value_nick
        if state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            fail("peer connection failed")

    recvonly = GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY
    webrtc.emit("add-transceiver", recvonly,
                Gst.Caps.from_string("application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000"))
    webrtc.emit("add-transceiver", recvonly,
                Gst.Caps.from_string("application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000"))
    webrtc.connect("pad-added", on_incoming_pad)
    webrtc.connect("notify::connection-state", on_state)
    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message::error", lambda _, message: fail(str(message.parse_error()[0])))
    webrtc.connect("on-negotiation-needed", lambda element: element.emit("create-offer", None, Gst.Promise.new_with_change_func(on_offer, None)))
    pipeline.set_state(Gst.State.PLAYING)
    GLib.timeout_add(int(seconds * 1000), loop.quit)
    loop.run()
    if "url" in location:
        try:
            urllib.request.urlopen(urllib.request.Request(location["url"], method="DELETE",
                                                          headers={"Authorization": "Bearer " + token}), timeout=5)
        except Exception as error:  # noqa: BLE001
            result["deleteError"] = str(error)
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps(result), flush=True)
    sys.exit(0 if result["videoFrames"] > 0 and "error" not in result else 1)


if __name__ == "__main__":
    main()
