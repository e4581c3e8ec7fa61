import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Testing

@testable import LiveRoomServer

/// The trickle-ice-sdpfrag bodies of WHIP/WHEP PATCH (RFC 9725 section 4.4, RFC 8840).
@Suite struct WHIPFragmentTests {
    @Test func readsTheClientsCredentialsAndRefusesMalformedOnes() {
        let fragment = "a=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\nm=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\na=candidate:1 1 udp 1 10.0.0.2 5000 typ host\r\n"
        #expect(WHIPRoutes.iceCredentials(inFragment: fragment) == ICECredentials(ufrag: "EsAw", pwd: "P2uYro0UCOQ4zxjKXaWCBui1"))
        #expect(WHIPRoutes.iceCredentials(inFragment: "a=ice-ufrag:EsAw\r\n") == nil, "no password")
        #expect(WHIPRoutes.iceCredentials(inFragment: "a=ice-ufrag:ab\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n") == nil, "ufrag too short")
        #expect(WHIPRoutes.iceCredentials(inFragment: "a=ice-ufrag:Es\"w\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n") == nil, "not an ICE character")
        #expect(WHIPRoutes.iceCredentials(inFragment: "a=ice-ufrag:\(String(repeating: "x", count: 257))\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n") == nil)
    }

    @Test func answersWithOurCredentialsAndCandidatesUnderTheFirstMid() {
        let candidate = ICECandidate(foundation: "1", priority: 2_130_706_431, address: "203.0.113.5", port: 7882)
        let sdp = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 7882 UDP/TLS/RTP/SAVPF 96\r\na=mid:v1\r\n"
        let answer = SFURouter.ICERestartAnswer(sdp: sdp, local: ICECredentials(ufrag: "srv1", pwd: "serverpasswordserverpass"), candidates: [candidate])
        let lines = WHIPRoutes.fragment(answer).components(separatedBy: "\r\n")
        #expect(lines.contains("a=ice-ufrag:srv1") && lines.contains("a=ice-pwd:serverpasswordserverpass") && lines.contains("a=ice-lite"))
        #expect(lines.contains("m=video 9 UDP/TLS/RTP/SAVPF 96") && lines.contains("a=mid:v1"))
        #expect(lines.contains("a=candidate:1 1 udp 2130706431 203.0.113.5 7882 typ host") && lines.contains("a=end-of-candidates"))
    }
}
