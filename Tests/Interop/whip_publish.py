#!/usr/bin/python3
"""Publishes VP8 + Opus to a WHIP endpoint with GStreamer's webrtcbin (a third-party WebRTC stack).

Usage: whip_publish.py URL TOKEN SECONDS
Prints one JSON line when it ends: {"published": true, "state": "..."}; exits non-zero on failure.
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

PIPELINE = """
webrtcbin name=webrtc bundle-policy=max-bundle
videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=15/1 ! videoconvert !
  vp8enc deadline=1 cpu-used=8 keyframe-max-dist=30 target-bitrate=600000 ! rtpvp8pay pt=96 mtu=1200 !
  application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000 ! webrtc.
audiotestsrc is-live=true wave=sine freq=440 ! audioconvert ! audioresample ! opusenc ! rtpopuspay pt=111 !
  application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! webrtc.
"""


def main():
    url, token, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    Gst.init(None)
    pipeline = Gst.parse_launch(PIPELINE)
    webrtc = pipeline.get_by_name("webrtc")
    use_loopback(webrtc)
    loop = GLib.MainLoop()
    result = {"published": False}
    location = {}

    def fail(message):
        result["error"] = message
        loop.quit()

    def post_offer(offer_sdp):
        request = urllib.request.Request(url, data=offer_sdp.encode(), method="POST",
                                         headers={"Content-Type": "application/sdp", "Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                location["url"] = urllib.request.urljoin(url, response.headers["Location"])
                answer_sdp = response.read().decode()
                if "-v" in sys.argv:
                    print(offer_sdp, answer_sdp, file=sys.stderr)
        except Exception as error:  # noqa: BLE001
            GLib.idle_add(fail, "WHIP POST failed: %s" % error)
            return
        GLib.idle_add(set_answer, answer_sdp)

    def set_answer(answer_sdp):
        ok, sdp = GstSdp.SDPMessage.new_from_text(answer_sdp)
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp)
        webrtc.emit("set-remote-description", answer, Gst.Promise.new())
        return False

    def on_offer(promise, _):
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        webrtc.emit("set-local-description", offer, Gst.Promise.new())
        threading.Thread(target=post_offer, args=(offer.sdp.as_text(),), daemon=True).start()

    def on_negotiation_needed(element):
        for transceiver in [element.emit("get-transceiver", i) for i in range(2)]:
            if transceiver is not None:
                transceiver.set_property("direction", GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY)
        element.emit("create-offer", None, Gst.Promise.new_with_change_func(on_offer, None))

    def on_state(element, _):
        state = element.get_property("connection-state")
        result["state"] = state.value_nick
        if state == GstWebRTC.WebRTCPeerConnectionState.CONNECTED:
            result["published"] = True
        elif state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            fail("peer connection failed")

    webrtc.connect("on-negotiation-needed", on_negotiation_needed)
    webrtc.connect("notify::connection-state", on_state)
    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message::error", lambda _, message: fail(str(message.parse_error()[0])))
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
    sys.exit(0 if result["published"] and "error" not in result else 1)


if __name__ == "__main__":
    main()
