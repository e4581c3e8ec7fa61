import LiveRoomMedia
import LiveRoomTransport
import LiveRoomWire
import Testing

@testable import LiveRoomClientKit

@Suite struct MediaOfferTests {
    func offer(_ sections: [SDPNegotiation.OfferedSection]) throws -> SessionDescription {
        let description = TransportDescription(
            iceUfrag: "abcdefgh", icePwd: "0123456789abcdefghijklmn",
            fingerprint: SDPFingerprint(hashFunction: "sha-256", bytes: Array(repeating: 0xAB, count: 32)), setup: .active)
        let text = SDPNegotiation.offer(sections, local: description, sessionID: 1, streamID: "host").serialize()
        return try SessionDescription.parse(text)
    }

    @Test(arguments: [(VideoCodecChoice.vp8, "VP8", UInt8(96)), (.h264, "H264", UInt8(102))])
    func publishOffer(codec: VideoCodecChoice, name: String, payloadType: UInt8) throws {
        let parsed = try offer(MediaOffer.publishSections(videoCodec: codec.codec, audioSSRC: 1111, videoSSRC: 2222))
        #expect(parsed.bundleGroup == ["0", "1"])
        #expect(parsed.media.map(\.kind) == ["audio", "video"])
        #expect(parsed.media.allSatisfy { $0.direction == .sendonly && $0.isRTCPMux && $0.setup == .active })
        #expect(parsed.media[0].rtpMap(for: 111)?.encodingName == "opus")
        #expect(parsed.media[0].ssrcs == [1111])
        #expect(parsed.media[1].formats == [String(payloadType)])
        #expect(parsed.media[1].rtpMap(for: payloadType)?.encodingName == name)
        #expect(parsed.media[1].ssrcs == [2222])
        if codec == .h264 {
            #expect(parsed.media[1].formatParameters(for: 102)?["packetization-mode"] == "1")
        }
        #expect(parsed.media[1].rtcpFeedback(for: payloadType).contains { $0.type == "nack" && $0.parameter == "pli" })
    }

    @Test func subscribeOfferReceivesBothVideoCodecs() throws {
        let parsed = try offer(MediaOffer.subscribeSections())
        #expect(parsed.media.allSatisfy { $0.direction == .recvonly && $0.ssrcs.isEmpty })
        #expect(parsed.media[0].rtpMap(for: 111)?.encodingName == "opus")
        #expect(parsed.media[1].formats == ["96", "102"])
        #expect(SDPNegotiation.supportedCodecs(in: parsed.media[1]).map(\.codec) == [.vp8, .h264])
    }

    @Test func serverAddressesAreTheIPv4UDPCandidatesBestFirst() throws {
        var remote = TransportDescription(
            iceUfrag: "u", icePwd: "p", fingerprint: SDPFingerprint(hashFunction: "sha-256", bytes: [1]), setup: .passive)
        #expect(throws: NegotiationError.self) { try MediaOffer.serverAddresses(of: remote) }
        remote.candidates = [
            ICECandidate(foundation: "1", priority: 100, address: "10.0.0.1", port: 7882, type: "host"),
            ICECandidate(foundation: "2", priority: 300, address: "2001:db8::1", port: 7882, type: "host"),
            ICECandidate(foundation: "3", priority: 200, address: "203.0.113.7", port: 7882, type: "host"),
            ICECandidate(foundation: "4", component: 1, transport: "tcp", priority: 400, address: "203.0.113.8", port: 7881, type: "host"),
        ]
        #expect(try MediaOffer.serverAddresses(of: remote) == [
            TransportAddress(address: IPAddress("203.0.113.7")!, port: 7882), TransportAddress(address: IPAddress("10.0.0.1")!, port: 7882),
        ])
        remote.candidates = [ICECandidate(foundation: "1", priority: 1, address: "::1", port: 7882, type: "host")]
        #expect(throws: NegotiationError.self) { try MediaOffer.serverAddresses(of: remote) }
    }

    @Test func passiveICETCPCandidatesFollowUDPAndTheTransportPolicyChooses() throws {
        var remote = TransportDescription(
            iceUfrag: "u", icePwd: "p", fingerprint: SDPFingerprint(hashFunction: "sha-256", bytes: [1]), setup: .passive)
        let passive = [ICECandidate.Extension(name: "tcptype", value: "passive")]
        remote.candidates = [
            ICECandidate(foundation: "2", transport: "tcp", priority: 1_518_280_447, address: "203.0.113.7", port: 7881, extensions: passive),
            ICECandidate(foundation: "1", priority: 2_130_706_431, address: "203.0.113.7", port: 7882),
            ICECandidate(
                foundation: "3", transport: "tcp", priority: 1_518_280_000, address: "203.0.113.7", port: 9, extensions: [.init(name: "tcptype", value: "active")]),
        ]
        let udp = TransportAddress(address: IPAddress("203.0.113.7")!, port: 7882)
        let tcp = TransportAddress(address: IPAddress("203.0.113.7")!, port: 7881, transport: .tcp)
        #expect(try MediaOffer.serverAddresses(of: remote) == [udp, tcp], "an active server candidate is no use to an active client")
        #expect(try MediaOffer.serverAddresses(of: remote, policy: .udp) == [udp])
        #expect(try MediaOffer.serverAddresses(of: remote, policy: .tcp) == [tcp])
        remote.candidates.removeFirst()
        #expect(throws: NegotiationError.self) { try MediaOffer.serverAddresses(of: remote, policy: .tcp) }
    }
}

/// Video codecs as test arguments.
enum VideoCodecChoice: Sendable, CustomTestStringConvertible {
    case vp8, h264
    var codec: LiveRoomWire.VideoCodec { self == .vp8 ? .vp8 : .h264 }
    var testDescription: String { self == .vp8 ? "VP8" : "H.264" }
}
