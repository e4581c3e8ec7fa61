#!/usr/bin/python3
"""Plays a room's anchor from a WHEP endpoint with GStreamer's webrtcbin and counts what it decodes.

Usage: whep_play.py URL TOKEN SECONDS [CODEC]
CODEC: the video codec to ask for, vp8 (default) or h264 (packetization-mode 1).
Prints one JSON line: {"videoFrames": N, "width": W, "height": H, "audioBuffers": M, "state": "..."};
exits non-zero when no video frame was decoded.
"""
import json
import sys

from webrtc_http import Exchange, GLib, Gst, GstWebRTC, use_loopback

VIDEO_CAPS = {
    "vp8": "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000",
    "h264": "application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,"
            "packetization-mode=(string)1,profile-level-id=(string)42e01f",
}


def main():
    url, token, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    codec = sys.argv[4] if len(sys.argv) > 4 else "vp8"
    Gst.init(None)
    pipeline = Gst.Pipeline.new("whep")
    webrtc = Gst.ElementFactory.make("webrtcbin", "webrtc")
    webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
    pipeline.add(webrtc)
    use_loopback(webrtc, url)
    loop = GLib.MainLoop()
    result = {"videoFrames": 0, "audioBuffers": 0}

    def fail(message):
        result["error"] = message
        loop.quit()

    exchange = Exchange(webrtc, url, token, fail)

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

    def on_state(element, _):
        state = element.get_property("connection-state")
        result["state"] = state.value_nick
        if state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            fail("peer connection failed")

    recvonly = GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY
    webrtc.emit("add-transceiver", recvonly,
                Gst.Caps.from_string(VIDEO_CAPS[codec]))
    webrtc.emit("add-transceiver", recvonly,
                Gst.Caps.from_string("application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000"))
    webrtc.connect("pad-added", on_incoming_pad)
    webrtc.connect("notify::connection-state", on_state)
    webrtc.connect("on-negotiation-needed",
                   lambda element: element.emit("create-offer", None, Gst.Promise.new_with_change_func(exchange.on_offer, None)))
    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message::error", lambda _, message: fail(str(message.parse_error()[0])))
    pipeline.set_state(Gst.State.PLAYING)
    GLib.timeout_add(int(seconds * 1000), loop.quit)
    loop.run()
    exchange.delete(result)
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps(result), flush=True)
    sys.exit(0 if result["videoFrames"] > 0 and "error" not in result else 1)


if __name__ == "__main__":
    main()
