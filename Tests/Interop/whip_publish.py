#!/usr/bin/python3
"""Publishes VP8 + Opus to a WHIP endpoint with GStreamer's webrtcbin (a third-party WebRTC stack).

Usage: whip_publish.py URL TOKEN SECONDS
Prints one JSON line when it ends: {"published": true, "state": "..."}; exits non-zero on failure.
"""
import json
import sys

from webrtc_http import Exchange, GLib, Gst, GstWebRTC, use_loopback

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
    use_loopback(webrtc, url)
    loop = GLib.MainLoop()
    result = {"published": False}

    def fail(message):
        result["error"] = message
        loop.quit()

    exchange = Exchange(webrtc, url, token, fail)

    def on_negotiation_needed(element):
        for transceiver in [element.emit("get-transceiver", i) for i in range(2)]:
            if transceiver is not None:
                transceiver.set_property("direction", GstWebRTC.WebRTCRTPTransceiverDirection.SENDONLY)
        element.emit("create-offer", None, Gst.Promise.new_with_change_func(exchange.on_offer, None))

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
    exchange.delete(result)
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps(result), flush=True)
    sys.exit(0 if result["published"] and "error" not in result else 1)


if __name__ == "__main__":
    main()
