import Testing
@testable import LiveRoomWire

@Suite("SDP (RFC 8866, WebRTC usage)")
struct SessionDescriptionTests {
    static func crlf(_ lines: String) -> String {
        lines.split(separator: "\n", omittingEmptySubsequences: true).map { $0 + "\r\n" }.joined()
    }

    static let chromeOffer = crlf("""
        v=0
        o=- 4611731400430051336 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=extmap-allow-mixed
        a=msid-semantic: WMS 9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=candidate:3348617402 1 udp 2122260223 192.168.1.23 54400 typ host generation 0 network-id 1 network-cost 10
        a=candidate:1525423246 1 udp 1686052607 203.0.113.9 54400 typ srflx raddr 192.168.1.23 rport 54400 generation 0 network-id 1 network-cost 10
        a=candidate:2999745851 1 tcp 1518280447 192.168.1.23 9 typ host tcptype active generation 0 network-id 1 network-cost 10
        a=ice-ufrag:Kq3c
        a=ice-pwd:wE3U5eY7hR2Qb9Xk1mNfT0aZ
        a=ice-options:trickle
        a=fingerprint:sha-256 1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09:1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10 5f1e0d8c-7b6a-4c3d-9e2f-1a0b9c8d7e6f
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        a=ssrc:3735928559 cname:8dGqk1TW0pYvGq2M
        a=ssrc:3735928559 msid:9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10 5f1e0d8c-7b6a-4c3d-9e2f-1a0b9c8d7e6f
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:Kq3c
        a=ice-pwd:wE3U5eY7hR2Qb9Xk1mNfT0aZ
        a=ice-options:trickle
        a=fingerprint:sha-256 1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09:1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09
        a=setup:actpass
        a=mid:1
        a=extmap:14 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:13 urn:3gpp:video-orientation
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:5/sendrecv http://www.webrtc.org/experiments/rtp-hdrext/playout-delay
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=sendrecv
        a=msid:9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10 0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:102 H264/90000
        a=rtcp-fb:102 goog-remb
        a=rtcp-fb:102 transport-cc
        a=rtcp-fb:102 ccm fir
        a=rtcp-fb:102 nack
        a=rtcp-fb:102 nack pli
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:103 rtx/90000
        a=fmtp:103 apt=102
        a=ssrc-group:FID 2231627014 632943048
        a=ssrc:2231627014 cname:8dGqk1TW0pYvGq2M
        a=ssrc:2231627014 msid:9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10 0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e
        a=ssrc:632943048 cname:8dGqk1TW0pYvGq2M
        a=ssrc:632943048 msid:9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10 0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e
        """)

    // Hand-written in the shape GStreamer webrtcbin produces (session-level fingerprint
    // style differs: per-media ice credentials, bundle-only on later sections, rtcp-fb *).
    static let gstreamerOffer = crlf("""
        v=0
        o=- 8385478573539441766 0 IN IP4 0.0.0.0
        s=-
        t=0 0
        a=ice-options:trickle
        a=group:BUNDLE video0 audio1
        m=video 9 UDP/TLS/RTP/SAVPF 96 97
        c=IN IP4 0.0.0.0
        a=setup:actpass
        a=ice-ufrag:xEqQzsB9TeLhZbvvdLMqmaQ8QIhfWEQW
        a=ice-pwd:O0Y6dF0Ubd4uUn7dBrSnQ0xHZyMuZcJp
        a=rtcp-mux
        a=rtcp-rsize
        a=sendonly
        a=rtpmap:96 H264/90000
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtcp-fb:96 ccm fir
        a=fmtp:96 packetization-mode=1;profile-level-id=42c01f;sprop-parameter-sets=Z0LAH9oBQBbpUgAAAwACAAADAHgeMGVA,aM4yyA==
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=ssrc-group:FID 1815419470 3071307353
        a=ssrc:1815419470 msid:user2573428391@host-6c4e0c4e webrtctransceiver0
        a=ssrc:1815419470 cname:user2573428391@host-6c4e0c4e
        a=ssrc:3071307353 msid:user2573428391@host-6c4e0c4e webrtctransceiver0
        a=ssrc:3071307353 cname:user2573428391@host-6c4e0c4e
        a=mid:video0
        a=fingerprint:sha-256 A0:B1:C2:D3:E4:F5:06:17:28:39:4A:5B:6C:7D:8E:9F:A0:B1:C2:D3:E4:F5:06:17:28:39:4A:5B:6C:7D:8E:9F
        a=candidate:1 1 UDP 2015363327 10.0.0.5 43210 typ host
        a=candidate:2 1 TCP 1015021823 10.0.0.5 9 typ host tcptype active
        a=end-of-candidates
        m=audio 0 UDP/TLS/RTP/SAVPF 111
        c=IN IP4 0.0.0.0
        a=setup:actpass
        a=ice-ufrag:xEqQzsB9TeLhZbvvdLMqmaQ8QIhfWEQW
        a=ice-pwd:O0Y6dF0Ubd4uUn7dBrSnQ0xHZyMuZcJp
        a=bundle-only
        a=rtcp-mux
        a=sendonly
        a=rtpmap:111 OPUS/48000/2
        a=rtcp-fb:* transport-cc
        a=fmtp:111 sprop-stereo=0;sprop-maxcapturerate=48000
        a=ssrc:3484078950 msid:user2573428391@host-6c4e0c4e webrtctransceiver1
        a=ssrc:3484078950 cname:user2573428391@host-6c4e0c4e
        a=mid:audio1
        a=fingerprint:sha-256 A0:B1:C2:D3:E4:F5:06:17:28:39:4A:5B:6C:7D:8E:9F:A0:B1:C2:D3:E4:F5:06:17:28:39:4A:5B:6C:7D:8E:9F
        """)

    @Test func chromeOfferRoundTrips() throws {
        let description = try SessionDescription.parse(Self.chromeOffer)
        #expect(description.serialize() == Self.chromeOffer)
        #expect(try SessionDescription.parse(description.serialize()) == description)
    }

    @Test func chromeOfferFields() throws {
        let description = try SessionDescription.parse(Self.chromeOffer)
        #expect(description.origin.sessionID == "4611731400430051336")
        #expect(description.origin.sessionVersion == "2")
        #expect(description.bundleGroup == ["0", "1"])
        #expect(description.attributes.contains(.other(name: "msid-semantic", value: " WMS 9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10")))
        #expect(description.attributes.contains(.other(name: "extmap-allow-mixed", value: nil)))
        #expect(!description.isICELite)
        #expect(description.iceUfrag == "Kq3c")
        #expect(description.icePwd == "wE3U5eY7hR2Qb9Xk1mNfT0aZ")
        #expect(description.fingerprint?.hashFunction == "sha-256")
        #expect(description.fingerprint?.bytes.count == 32)
        #expect(description.fingerprint?.bytes.first == 0x1A)
        #expect(description.media.count == 2)

        let audio = description.media[0]
        #expect(audio.kind == "audio" && audio.port == 9 && audio.proto == "UDP/TLS/RTP/SAVPF")
        #expect(audio.formats == ["111", "63", "9", "0", "8", "13", "110", "126"])
        #expect(audio.mid == "0")
        #expect(audio.direction == .sendrecv)
        #expect(audio.isRTCPMux)
        #expect(audio.setup == .actpass)
        #expect(audio.rtpMap(for: 111) == SDPRTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2))
        #expect(audio.formatParameters(for: 111)?["useinbandfec"] == "1")
        #expect(audio.formatParameters(for: 111)?["minptime"] == "10")
        #expect(audio.ssrcs == [3_735_928_559])
        #expect(audio.ssrcAttribute(3_735_928_559, "cname") == "8dGqk1TW0pYvGq2M")
        #expect(audio.extensionMaps.first == SDPExtensionMap(id: 1, uri: "urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(audio.attributes.contains(.msid(streamID: "9b3d3fd6-1c4e-4a7f-8f1b-8d2f0f1c2a10", trackID: "5f1e0d8c-7b6a-4c3d-9e2f-1a0b9c8d7e6f")))

        let candidates = audio.candidates
        #expect(candidates.count == 3)
        #expect(candidates[0] == ICECandidate(
            foundation: "3348617402", component: 1, transport: "udp", priority: 2_122_260_223, address: "192.168.1.23",
            port: 54_400, type: "host",
            extensions: [.init(name: "generation", value: "0"), .init(name: "network-id", value: "1"), .init(name: "network-cost", value: "10")]))
        #expect(candidates[1].type == "srflx")
        #expect(candidates[1].relatedAddress == "192.168.1.23")
        #expect(candidates[1].relatedPort == 54_400)
        #expect(candidates[2][extension: "tcptype"] == "active")

        let video = description.media[1]
        #expect(video.mid == "1")
        #expect(video.rtpMap(for: 96)?.encodingName == "VP8")
        #expect(video.rtpMap(for: 102)?.encodingName == "H264")
        #expect(video.formatParameters(for: 102)?["packetization-mode"] == "1")
        #expect(video.formatParameters(for: 102)?["profile-level-id"] == "42e01f")
        #expect(video.formatParameters(for: 97)?["apt"] == "96")
        #expect(video.formatParameters(for: 103)?["apt"] == "102")
        #expect(video.ssrcGroups("FID") == [[2_231_627_014, 632_943_048]])
        #expect(video.ssrcs == [2_231_627_014, 632_943_048])
        let feedback = video.rtcpFeedback(for: 96)
        #expect(feedback.count == 5)
        #expect(feedback.contains { $0.type == "nack" && $0.parameter == "pli" })
        #expect(feedback.contains { $0.type == "ccm" && $0.parameter == "fir" })
        #expect(video.extensionMaps.contains(SDPExtensionMap(id: 5, direction: .sendrecv, uri: "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay")))
        #expect(description.media(withMid: "1") == video)
    }

    @Test func gstreamerOfferRoundTrips() throws {
        let description = try SessionDescription.parse(Self.gstreamerOffer)
        #expect(description.serialize() == Self.gstreamerOffer)
        #expect(description.bundleGroup == ["video0", "audio1"])
        #expect(description.iceOptions == ["trickle"])
        let video = try #require(description.media(withMid: "video0"))
        #expect(video.direction == .sendonly)
        #expect(video.rtpMap(for: 96)?.encodingName == "H264")
        #expect(video.formatParameters(for: 96)?["sprop-parameter-sets"] == "Z0LAH9oBQBbpUgAAAwACAAADAHgeMGVA,aM4yyA==")
        #expect(video.ssrcGroups("FID") == [[1_815_419_470, 3_071_307_353]])
        #expect(video.candidates.map(\.transport) == ["UDP", "TCP"])
        #expect(video.attributes.last == .other(name: "end-of-candidates", value: nil))
        let audio = try #require(description.media(withMid: "audio1"))
        #expect(audio.port == 0)
        #expect(audio.isBundleOnly)
        #expect(audio.rtpMap(for: 111)?.encodingName == "OPUS")
        #expect(audio.rtcpFeedback(for: 111).map(\.type) == ["transport-cc"])
        #expect(audio.attributes.contains(.rtcpFeedback(payloadType: nil, type: "transport-cc", parameter: nil)))
    }

    @Test func buildsAnICELiteAnswer() throws {
        let offer = try SessionDescription.parse(Self.chromeOffer)
        let fingerprint = SDPFingerprint(hashFunction: "sha-256", bytes: Array(0..<32))
        var answer = SessionDescription(origin: SDPOrigin(sessionID: "1", sessionVersion: "1"), attributes: [
            .group(semantics: "BUNDLE", identificationTags: offer.bundleGroup ?? []), .iceLite,
        ])
        for section in offer.media {
            answer.media.append(SDPMediaDescription(kind: section.kind, formats: [section.formats[0]], attributes: [
                .mid(section.mid ?? ""), .iceUfrag("srv1"), .icePwd("serverpasswordserverpass"), .fingerprint(fingerprint),
                .setup(.passive), .direction(section.direction.reversed), .rtcpMux,
                .candidate(ICECandidate(foundation: "1", priority: 2_130_706_431, address: "127.0.0.1", port: 40_000)),
            ]))
        }
        let text = answer.serialize()
        #expect(text.hasPrefix("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\na=ice-lite\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\n"))
        #expect(text.contains("a=fingerprint:sha-256 00:01:02:03:04:05:06:07:08:09:0A:0B"))
        #expect(text.contains("a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"))
        let parsed = try SessionDescription.parse(text)
        #expect(parsed == answer)
        #expect(parsed.isICELite)
        #expect(parsed.media[0].setup == .passive)
    }

    @Test func acceptsLFOnlyAndWritesCRLF() throws {
        let lf = Self.gstreamerOffer.split(separator: "\r\n").joined(separator: "\n") + "\n"
        #expect(!lf.contains("\r"))
        #expect(try SessionDescription.parse(lf).serialize() == Self.gstreamerOffer)
    }

    @Test func candidateParsingStandalone() throws {
        let candidate = try ICECandidate(parsing: "candidate:842163049 1 udp 1677729535 198.51.100.4 61665 typ srflx raddr 0.0.0.0 rport 0 generation 0 ufrag Kq3c network-cost 999")
        #expect(candidate.priority == 1_677_729_535)
        #expect(candidate.relatedAddress == "0.0.0.0" && candidate.relatedPort == 0)
        #expect(candidate[extension: "ufrag"] == "Kq3c")
        #expect(candidate.attributeValue == "842163049 1 udp 1677729535 198.51.100.4 61665 typ srflx raddr 0.0.0.0 rport 0 generation 0 ufrag Kq3c network-cost 999")
        let mdns = try ICECandidate(parsing: "1 1 udp 2122260223 4b1f2c3d-aaaa-bbbb-cccc-0123456789ab.local 5000 typ host")
        #expect(mdns.address.hasSuffix(".local"))
    }

    @Test func malformedDescriptionsThrow() {
        let bad: [String] = [
            "",
            "\r\n",
            "v=1\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\n",
            "o=- 1 1 IN IP4 0.0.0.0\r\n",
            "v=0\r\ns=-\r\nt=0 0\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nt=0 0\r\n",
            "v=0\r\no=- x 1 IN IP4 0.0.0.0\r\ns=-\r\n",
            "v=0\r\no=- 1 1 IN IP4\r\ns=-\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nnot a line\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio x RTP/AVP 0\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:300 PCMU/8000\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=setup:sideways\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=fingerprint:sha-256 ZZ:00\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=candidate:1 1 udp 1 1.2.3.4 99999 typ host\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=candidate:1 1 udp 1 1.2.3.4 9 host\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=ssrc:abc cname:x\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=ssrc-group:FID 1 x\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=extmap:0 urn:x\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=rtcp-mux:yes\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\na=mid\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nm=audio 9 RTP/AVP 0\r\no=- 1 1 IN IP4 0.0.0.0\r\n",
            "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nb=AS\r\n",
        ]
        for text in bad {
            #expect(throws: WireError.self, "\(text.debugDescription)") { try SessionDescription.parse(text) }
        }
    }

    @Test func parserIsTotal() throws {
        var generator = SeededGenerator(seed: 0x5D9)
        let seeds = [Self.chromeOffer, Self.gstreamerOffer]
        let alphabet = Array("v=0o-sta:mc IN IP4 9\r\n/1rtpmap candidate typ host ssrc fmtp ;=*\u{00e9}\u{1F600}")
        var parsed = 0
        for _ in 0..<600 {
            var characters = Array(seeds.randomElement(using: &generator)!)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:  // truncate
                characters = Array(characters.prefix(Int.random(in: 0...characters.count, using: &generator)))
            case 1:  // mutate characters
                for _ in 0..<Int.random(in: 1...10, using: &generator) {
                    characters[Int.random(in: 0..<characters.count, using: &generator)] = alphabet.randomElement(using: &generator)!
                }
            default:  // random text
                characters = (0..<Int.random(in: 0...200, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
                if Bool.random(using: &generator) { characters = Array("v=0\r\n") + characters }
            }
            do {
                let description = try SessionDescription.parse(String(characters))
                parsed += 1
                #expect(try SessionDescription.parse(description.serialize()) == description)
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        #expect(parsed > 50)
    }
}
