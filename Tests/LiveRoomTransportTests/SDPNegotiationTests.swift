import LiveRoomWire
import Testing

@testable import LiveRoomTransport

@Suite("SDP negotiation of LiveRoom's SEI header extension")
struct SDPNegotiationTests {
    static let client = TransportDescription(
        iceUfrag: "clientuf", icePwd: "0123456789abcdefghijklmn",
        fingerprint: SDPFingerprint(hashFunction: "sha-256", bytes: Array(repeating: 0xAB, count: 32)), setup: .active)
    static let server = TransportDescription(
        iceUfrag: "serveruf", icePwd: "nmlkjihgfedcba9876543210",
        fingerprint: SDPFingerprint(hashFunction: "sha-256", bytes: Array(repeating: 0xCD, count: 32)), setup: .passive,
        candidates: [ICECandidate(foundation: "1", priority: 2_130_706_431, address: "127.0.0.1", port: 7882)], iceLite: true)

    /// Audio and video to publish, the video offering the SEI extension with `seiID`.
    static func publishSections(seiID: UInt8?, audioSEIID: UInt8? = nil) -> [SDPNegotiation.OfferedSection] {
        [
            .init(kind: .audio, direction: .sendonly, codecs: [(.opus, 111)], localSSRC: 1111, seiExtensionID: audioSEIID),
            .init(kind: .video, direction: .sendonly, codecs: [(.vp8, 96), (.h264, 102)], localSSRC: 2222, seiExtensionID: seiID),
        ]
    }

    /// The offer as text and parsed back from it.
    static func offer(_ sections: [SDPNegotiation.OfferedSection]) throws -> (text: String, parsed: SessionDescription) {
        let text = SDPNegotiation.offer(sections, local: client, sessionID: 1, streamID: "host").serialize()
        return (text, try SessionDescription.parse(text))
    }

    /// The server's answer to `offer`, receiving everything with the first codec offered.
    static func answer(_ offer: SessionDescription) throws -> (text: String, parsed: SessionDescription, tracks: [NegotiatedTrack]) {
        let (answer, tracks) = try SDPNegotiation.answer(to: offer, local: server, sessionID: 2) { _, _, codecs in .init(codec: codecs.first) }
        let text = answer.serialize()
        return (text, try SessionDescription.parse(text), tracks)
    }

    static func seiLines(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map(String.init).filter { $0.hasSuffix(SEIHeaderExtension.uri) }
    }

    @Test(arguments: [SEIHeaderExtension.defaultID, 7, 200])
    func theVideoSectionOffersItAndTheAnswerEchoesTheSameID(id: UInt8) throws {
        let sections = Self.publishSections(seiID: id)
        let offer = try Self.offer(sections)
        #expect(Self.seiLines(offer.text) == ["a=extmap:\(id) urn:liveroom:rtp-hdrext:sei"])
        #expect(offer.parsed.media[0].extensionMaps.isEmpty)
        #expect(offer.parsed.media[1].extensionMaps == [SDPExtensionMap(id: UInt16(id), uri: "urn:liveroom:rtp-hdrext:sei")])

        let answer = try Self.answer(offer.parsed)
        #expect(Self.seiLines(answer.text) == ["a=extmap:\(id) urn:liveroom:rtp-hdrext:sei"])
        #expect(answer.parsed.media[0].extensionMaps.isEmpty)
        #expect(answer.parsed.media[1].extensionMaps.map(\.id) == [UInt16(id)])
        #expect(answer.tracks.map(\.kind) == [.audio, .video])
        #expect(answer.tracks.map(\.seiExtensionID) == [nil, id])

        let tracks = try SDPNegotiation.tracks(ofAnswer: answer.parsed, offered: sections)
        #expect(tracks.map(\.seiExtensionID) == [nil, id])
        #expect(tracks.map(\.codec) == [.opus, .vp8])
    }

    @Test func withoutItInTheOfferNobodyHasIt() throws {
        let sections = Self.publishSections(seiID: nil)
        let offer = try Self.offer(sections)
        #expect(Self.seiLines(offer.text).isEmpty)
        let answer = try Self.answer(offer.parsed)
        #expect(Self.seiLines(answer.text).isEmpty)
        #expect(answer.tracks.map(\.seiExtensionID) == [nil, nil])
        #expect(try SDPNegotiation.tracks(ofAnswer: answer.parsed, offered: sections).map(\.seiExtensionID) == [nil, nil])
    }

    @Test func anAudioSectionGetsNoneInTheAnswer() throws {
        let offer = try Self.offer(Self.publishSections(seiID: nil, audioSEIID: 12))
        #expect(offer.parsed.media[0].extensionMaps.map(\.uri) == [SEIHeaderExtension.uri])
        let answer = try Self.answer(offer.parsed)
        #expect(Self.seiLines(answer.text).isEmpty)
        #expect(answer.tracks.map(\.seiExtensionID) == [nil, nil])
    }

    @Test func theAnswersIDIsTheOneUsedAndOnlyWhenWeOfferedIt() throws {
        let sections = Self.publishSections(seiID: 12)
        let offer = try Self.offer(sections)
        let answer = try Self.answer(offer.parsed)
        // An answerer that numbers it otherwise: its id is the one on the wire.
        let renumbered = try SessionDescription.parse(answer.text.replacingOccurrences(of: "a=extmap:12 ", with: "a=extmap:9 "))
        #expect(try SDPNegotiation.tracks(ofAnswer: renumbered, offered: sections).map(\.seiExtensionID) == [nil, 9])
        // An answer without it: none.
        let without = try SessionDescription.parse(answer.text.replacingOccurrences(of: "a=extmap:12 urn:liveroom:rtp-hdrext:sei\r\n", with: ""))
        #expect(Self.seiLines(without.serialize()).isEmpty)
        #expect(try SDPNegotiation.tracks(ofAnswer: without, offered: sections).map(\.seiExtensionID) == [nil, nil])
        // An answer that has it to an offer that did not: not used.
        #expect(try SDPNegotiation.tracks(ofAnswer: answer.parsed, offered: Self.publishSections(seiID: nil)).map(\.seiExtensionID) == [nil, nil])
    }

    @Test func unusableIDsAndOtherURIsAreNotTakenForIt() throws {
        let offer = try Self.offer(Self.publishSections(seiID: nil))
        func offered(_ line: String) -> String {
            offer.text.replacingOccurrences(of: "a=mid:1\r\n", with: "a=mid:1\r\n\(line)\r\n")
        }
        // Id 0 does not get past the SDP parser; 256 does, but no RTP header extension can carry it.
        #expect(throws: WireError.self) { try SessionDescription.parse(offered("a=extmap:0 urn:liveroom:rtp-hdrext:sei")) }
        for (line, expected) in [
            ("a=extmap:256 urn:liveroom:rtp-hdrext:sei", nil),
            ("a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid", nil), ("a=extmap:4/sendonly urn:liveroom:rtp-hdrext:sei", UInt8(4)),
            ("a=extmap:255 urn:liveroom:rtp-hdrext:sei", UInt8(255)),
        ] as [(String, UInt8?)] {
            let text = offered(line)
            #expect(text != offer.text)
            let answer = try Self.answer(try SessionDescription.parse(text))
            #expect(answer.tracks.last?.seiExtensionID == expected, "\(line)")
            #expect(Self.seiLines(answer.text) == (expected.map { ["a=extmap:\($0) urn:liveroom:rtp-hdrext:sei"] } ?? []))
        }
    }
}

@Suite struct H264PacketizationModeTests {
    /// A video section offering H.264 in the given modes (nil: no fmtp, which means mode 0).
    static func offer(_ modes: [String?]) throws -> SessionDescription {
        var lines = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0", "m=video 9 UDP/TLS/RTP/SAVPF " + modes.indices.map { String(100 + $0) }.joined(separator: " ")]
        for (index, mode) in modes.enumerated() {
            lines.append("a=rtpmap:\(100 + index) H264/90000")
            if let mode { lines.append("a=fmtp:\(100 + index) profile-level-id=42e01f;packetization-mode=\(mode)") }
        }
        lines += ["a=mid:0", "a=sendonly", "a=ice-ufrag:abcd", "a=ice-pwd:0123456789abcdefghijklmn", "a=fingerprint:sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"), "a=setup:actpass", "a=rtcp-mux"]
        return try SessionDescription.parse(lines.joined(separator: "\r\n") + "\r\n")
    }

    @Test func modes0And1AreTakenAndMode2IsNot() throws {
        let offered = SDPNegotiation.supportedCodecs(in: try Self.offer(["2", "0", nil, "1"]).media[0])
        #expect(offered.map(\.payloadType) == [101, 102, 103])
        #expect(offered.map(\.codec) == [.h264SingleNAL, .h264SingleNAL, .h264])
        #expect(SDPNegotiation.supportedCodecs(in: try Self.offer(["2"]).media[0]).isEmpty)
    }

    @Test func theAnswerKeepsTheModeOffered() throws {
        let (answer, tracks) = try SDPNegotiation.answer(to: try Self.offer(["0"]), local: SDPNegotiationTests.server, sessionID: 2) { _, _, codecs in .init(codec: codecs.first) }
        #expect(tracks.map(\.codec) == [.h264SingleNAL])
        #expect(answer.serialize().contains("a=fmtp:100 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f"))
        #expect(RTPCodec.h264SingleNAL.canBeReceived(as: .h264) && !RTPCodec.h264.canBeReceived(as: .h264SingleNAL))
    }
}
