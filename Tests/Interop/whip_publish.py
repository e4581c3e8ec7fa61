#!/usr/bin/python3
"""Publishes video + Opus to a WHIP endpoint with GStreamer's webrtcbin (a third-party WebRTC stack).

Usage: whip_publish.py URL TOKEN SECONDS [CODEC [SOURCE]]
CODEC: vp8 (default), h264 (x264, packetization-mode 1) or h264-mode0 (x264 with slices that
fit one packet, packetization-mode 0: single NAL units only).
SOURCE: a media file to publish (decoded and played at its own pace, e.g. a clapper), instead
of a test picture and a tone.
Prints one JSON line when it ends: {"published": true, "state": "...", "nalTypes": {...}} (for H.264,
how many RTP packets of each NAL unit type it sent: 24 is STAP-A, 28 FU-A); exits non-zero on failure.
"""
import json
import sys

from webrtc_http import Exchange, GLib, Gst, GstWebRTC, use_loopback

VIDEO_ENCODERS = {
    "vp8": "vp8enc deadline=1 cpu-used=8 keyframe-max-dist=30 target-bitrate=600000 ! rtpvp8pay pt=96 mtu=1200 ! "
           "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000",
    "h264": "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=600 ! "
            "video/x-h264,profile=constrained-baseline ! rtph264pay name=pay pt=102 mtu=1200 config-interval=-1 ! "
            "application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,packetization-mode=(string)1",
    "h264-mode0": "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=600 option-string=slice-max-size=1100 ! "
                  "video/x-h264,profile=constrained-baseline ! rtph264pay name=pay pt=102 mtu=1200 config-interval=-1 aggregate-mode=none ! "
                  # rtph264pay always says mode 1; with slices that fit and no aggregation its packets are mode 0's.
                  "capssetter caps=\"application/x-rtp,packetization-mode=(string)0\" ! "
                  "application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000",
}

AUDIO_ENCODER = ("audioconvert ! audioresample ! opusenc ! rtpopuspay pt=111 ! "
                 "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! webrtc.")


def pipeline_text(codec, source):
    video = "videoconvert ! " + VIDEO_ENCODERS[codec] + " ! webrtc."
    if source:
        return (f"webrtcbin name=webrtc bundle-policy=max-bundle "
                f"filesrc location={source} ! decodebin name=d "
                f"d. ! queue ! videoconvert ! clocksync ! {video} "
                f"d. ! queue ! audioconvert ! clocksync ! {AUDIO_ENCODER}")
    return (f"webrtcbin name=webrtc bundle-policy=max-bundle "
            f"videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=15/1 ! {video} "
            f"audiotestsrc is-live=true wave=sine freq=440 ! {AUDIO_ENCODER}")


def main():
    url, token, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    codec = sys.argv[4] if len(sys.argv) > 4 else "vp8"
    source = sys.argv[5] if len(sys.argv) > 5 else None
    Gst.init(None)
    pipeline = Gst.parse_launch(pipeline_text(codec, source))
    webrtc = pipeline.get_by_name("webrtc")
    use_loopback(webrtc, url)
    loop = GLib.MainLoop()
    result = {"published": False}
    if codec.startswith("h264"):
        result["nalTypes"] = {}

        def count_nal_types(_, info):
            buffer = info.get_buffer()
            ok, mapped = buffer.map(Gst.MapFlags.READ)
            if ok:
                header = 12 + 4 * (mapped.data[0] & 0x0F)
                if mapped.data[0] & 0x10:
                    header += 4 + 4 * int.from_bytes(mapped.data[header + 2:header + 4], "big")
                kind = str(mapped.data[header] & 0x1F)
                result["nalTypes"][kind] = result["nalTypes"].get(kind, 0) + 1
                buffer.unmap(mapped)
            return Gst.PadProbeReturn.OK

        payloader = pipeline.get_by_name("pay")
        payloader.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, count_nal_types)

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
