"""What the WHIP publisher and the WHEP player share: GStreamer set-up, loopback ICE, and the
HTTP offer/answer exchange of RFC 9725."""
import threading
import urllib.parse
import urllib.request

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC, Nice  # noqa: E402,F401

_KEEP = []


def use_loopback(webrtc, url):
    """libnice leaves out loopback addresses; tests on 127.0.0.1 need it added. Only then: once
    an address is added, libnice gathers no other, so a server on a real interface (a network
    namespace's veth) would stay unreachable."""
    host = urllib.parse.urlparse(url).hostname or ""
    if not host.startswith("127."):
        return
    ice = webrtc.get_property("ice-agent")
    agent = ice.get_property("agent")
    _KEEP.extend([ice, agent])
    address = Nice.Address.new()
    address.set_from_string("127.0.0.1")
    agent.add_local_address(address)


class Exchange:
    """POSTs our offer to a WHIP/WHEP URL, applies the answer, and DELETEs the session at the end."""

    def __init__(self, webrtc, url, token, fail):
        self.webrtc, self.url, self.token, self.fail = webrtc, url, token, fail
        self.location = None

    def on_offer(self, promise, _):
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        if offer is None:
            GLib.idle_add(self.fail, "create-offer failed: %s" % reply.to_string())
            return
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())
        threading.Thread(target=self._post, args=(offer.sdp.as_text(),), daemon=True).start()

    def _post(self, offer_sdp):
        request = urllib.request.Request(self.url, data=offer_sdp.encode(), method="POST",
                                         headers={"Content-Type": "application/sdp", "Authorization": "Bearer " + self.token})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                self.location = urllib.request.urljoin(self.url, response.headers["Location"])
                answer_sdp = response.read().decode()
        except Exception as error:  # noqa: BLE001
            GLib.idle_add(self.fail, "POST %s failed: %s" % (self.url, error))
            return
        GLib.idle_add(self._set_answer, answer_sdp)

    def _set_answer(self, answer_sdp):
        _, sdp = GstSdp.SDPMessage.new_from_text(answer_sdp)
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp)
        self.webrtc.emit("set-remote-description", answer, Gst.Promise.new())
        return False

    def delete(self, result):
        if self.location is None:
            return
        try:
            urllib.request.urlopen(urllib.request.Request(self.location, method="DELETE",
                                                          headers={"Authorization": "Bearer " + self.token}), timeout=5)
        except Exception as error:  # noqa: BLE001
            result["deleteError"] = str(error)


# The GStreamer elements the WHIP publisher and the WHEP player use.
ELEMENTS = ["webrtcbin", "nicesrc", "nicesink", "videotestsrc", "audiotestsrc", "videoconvert", "audioconvert", "audioresample",
            "vp8enc", "vp8dec", "rtpvp8pay", "rtpvp8depay", "opusenc", "opusdec", "rtpopuspay", "rtpopusdepay", "decodebin", "fakesink"]

if __name__ == "__main__":
    # Run by itself, this checks that everything the scripts need is installed (the imports
    # above, and every element); the Swift tests run it before they start a script.
    import sys
    Gst.init(None)
    missing = [name for name in ELEMENTS if Gst.ElementFactory.find(name) is None]
    if missing:
        print("missing GStreamer elements: " + ", ".join(missing), file=sys.stderr)
        sys.exit(1)
