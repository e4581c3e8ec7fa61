import LiveRoomSecureTransport
import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomSFU

/// A client peer connection talking to an SFURouter in memory.
final class FakeClient {
    let address: TransportAddress
    let transport: PeerTransport
    let tracks: [NegotiatedTrack]
    var rtp: [[UInt8]] = []
    var rtcp: [[UInt8]] = []

    init(port: UInt16, sections: [SDPNegotiation.OfferedSection], negotiate: (String) throws -> String, now: ContinuousClock.Instant) throws {
        address = TransportAddress(address: IPAddress("127.0.0.1")!, port: port)
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let local = TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active)
        let offer = SDPNegotiation.offer(sections, local: local, sessionID: 1, streamID: "client\(port)")
        let answer = try SessionDescription.parse(try negotiate(offer.serialize()))
        let remote = try TransportDescription(of: answer)
        tracks = try SDPNegotiation.tracks(ofAnswer: answer, offered: sections)
        let candidate = try #require(remote.candidates.first)
        let server = TransportAddress(address: IPAddress(candidate.address)!, port: candidate.port)
        transport = try PeerTransport(
            ice: .controlling(ICEControllingAgent(local: ice, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddress: server, now: now)),
            certificate: certificate, localDescription: local, remoteDescription: remote)
    }
}

/// Carries datagrams between a router and its clients until nothing moves.
struct Network {
    let router: SFURouter
    var clients: [FakeClient]
    let serverAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)

    func deliver(router outputs: [SFURouter.Output], now: ContinuousClock.Instant) {
        var queue: [(from: FakeClient?, bytes: ByteBuffer, to: TransportAddress?)] = outputs.compactMap {
            if case .send(let b, let to) = $0 { return (nil, b, to) }
            return nil
        }
        var rounds = 0
        while !queue.isEmpty, rounds < 2000 {
            rounds += 1
            let item = queue.removeFirst()
            if let client = item.from {
                for case .send(let b, let to) in router.receive(item.bytes, from: client.address, now: now) { queue.append((nil, b, to)) }
            } else if let client = clients.first(where: { $0.address == item.to }) {
                for event in client.transport.receive(item.bytes, from: serverAddress, now: now) {
                    switch event {
                    case .send(let b, _): queue.append((client, b, nil))
                    case .rtp(let p): client.rtp.append(p)
                    case .rtcp(let p): client.rtcp.append(p)
                    default: break
                    }
                }
            }
        }
    }

    func send(from client: FakeClient, _ events: [PeerTransport.Event], now: ContinuousClock.Instant) {
        var outputs: [SFURouter.Output] = []
        for case .send(let b, _) in events { outputs += router.receive(b, from: client.address, now: now) }
        deliver(router: outputs, now: now)
    }
}

@Suite struct SFURouterTests {
    let audio = RTPCodec.opus
    let now = ContinuousClock.now

    func rtpPacket(pt: UInt8, seq: UInt16, ts: UInt32, ssrc: UInt32, payload: [UInt8]) -> [UInt8] {
        var p: [UInt8] = [0x80, 0x80 | pt, UInt8(seq >> 8), UInt8(seq & 0xFF)]
        for shift in [24, 16, 8, 0] { p.append(UInt8(truncatingIfNeeded: ts >> UInt32(shift))) }
        for shift in [24, 16, 8, 0] { p.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        return p + payload
    }

    func header(_ packet: [UInt8]) throws -> RTPHeader {
        try RTPPacket.parse(ByteBuffer(bytes: packet)).header
    }

    @Test func forwardsRewritesRetransmitsAndRequestsKeyframes() throws {
        let certificate = try DTLSCertificate()
        let router = SFURouter(certificate: certificate, host: "127.0.0.1", port: 7882)
        let wall = 1_800_000_000.0
        router.wallClock = { wall }
        let publisherSections = [
            SDPNegotiation.OfferedSection(kind: .audio, direction: .sendonly, codecs: [(.opus, 111)], localSSRC: 1111),
            SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 2222),
        ]
        var published: (audio: Bool, video: Bool) = (false, false)
        let publisher = try FakeClient(port: 40_001, sections: publisherSections, negotiate: { offer in
            let r = try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer, now: now)
            published = (r.audio, r.video)
            return r.answer
        }, now: now)
        #expect(published == (true, true))
        var network = Network(router: router, clients: [publisher])
        network.send(from: publisher, publisher.transport.start(now: now), now: now)
        #expect(publisher.transport.isConnected)

        let subscriberSections = [
            SDPNegotiation.OfferedSection(kind: .audio, direction: .recvonly, codecs: [(.opus, 109)]),
            SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.h264, 100), (.vp8, 98)]),
        ]
        let subscriber = try FakeClient(port: 40_002, sections: subscriberSections, negotiate: { offer in
            try router.subscribe(owner: 2, roomId: "room", publisherId: "anchor", offer: offer, now: now)
        }, now: now)
        let videoTrack = try #require(subscriber.tracks.first { $0.kind == .video })
        #expect(videoTrack.codec == .vp8, "the publisher's codec is chosen")
        #expect(videoTrack.payloadType == 98)
        let downSSRC = try #require(videoTrack.remoteSSRCs.first)
        network.clients.append(subscriber)
        network.send(from: subscriber, subscriber.transport.start(now: now), now: now)
        #expect(subscriber.transport.isConnected)

        // A VP8 keyframe start (descriptor S=1, PID 0; payload header P bit 0).
        let keyframe = rtpPacket(pt: 96, seq: 500, ts: 9000, ssrc: 2222, payload: [0x10, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A])
        var out = keyframe
        network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&out)), to: publisher.address)], now: now)
        let forwarded = try #require(subscriber.rtp.last)
        #expect(forwarded[1] & 0x7F == 98, "payload type rewritten to the subscriber's")
        #expect(try header(forwarded).ssrc == downSSRC, "SSRC rewritten")
        #expect(Array(forwarded[12...]) == Array(keyframe[12...]), "payload untouched")
        let forwardedSeq = UInt16(forwarded[2]) << 8 | UInt16(forwarded[3])

        // A second later the publisher gets a receiver report for its video stream.
        network.deliver(router: router.handleTimers(now: now.advanced(by: .milliseconds(1100))), now: now)
        let receiverReports = publisher.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.joined().compactMap {
            if case .receiverReport(let r) = $0 { r } else { nil }
        }
        #expect(receiverReports.last?.reportBlocks.map(\.ssrc) == [2222])
        #expect(receiverReports.last?.reportBlocks.first?.extendedHighestSequenceNumber == 500)

        // The next packet is lost on the way to the subscriber: a NACK brings it back from the history.
        let lost = rtpPacket(pt: 96, seq: 501, ts: 9000, ssrc: 2222, payload: [0x00, 0x00, 0x01, 0x02])
        var lostOut = lost
        let dropped = router.receive(try #require(publisher.transport.protectRTP(&lostOut)), from: publisher.address, now: now)
        #expect(dropped.count == 1, "forwarded once, and lost")
        let nack: [RTCPPacket] = [.genericNACK(RTCPGenericNACK(senderSSRC: 5, mediaSSRC: downSSRC, lostSequenceNumbers: [forwardedSeq &+ 1]))]
        let count = subscriber.rtp.count
        network.send(from: subscriber, [.send(try #require(subscriber.transport.protectRTCP(nack)).datagram, to: subscriber.address)], now: now)
        #expect(subscriber.rtp.count == count + 1)
        #expect(subscriber.rtp.last.map { Array($0[12...]) } == Array(lost[12...]))
        #expect(subscriber.rtp.last.map { UInt16($0[2]) << 8 | UInt16($0[3]) } == forwardedSeq &+ 1)
        #expect(router.counters.retransmitted == 1)

        // A NACK for something never seen is forwarded to the publisher.
        let unknown: [RTCPPacket] = [.genericNACK(RTCPGenericNACK(senderSSRC: 5, mediaSSRC: downSSRC, lostSequenceNumbers: [forwardedSeq &- 3]))]
        network.send(from: subscriber, [.send(try #require(subscriber.transport.protectRTCP(unknown)).datagram, to: subscriber.address)], now: now)
        #expect(router.counters.nacksForwarded == 1)
        let publisherNACKs = publisher.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.joined().compactMap {
            if case .genericNACK(let n) = $0 { n } else { nil }
        }
        #expect(publisherNACKs.last?.lostSequenceNumbers == [497])
        #expect(publisherNACKs.last?.mediaSSRC == 2222)

        // PLI from the subscriber reaches the publisher, rate-limited.
        let plisBefore = router.counters.keyframeRequests
        for _ in 0..<3 {
            let pli: [RTCPPacket] = [.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: downSSRC))]
            network.send(from: subscriber, [.send(try #require(subscriber.transport.protectRTCP(pli)).datagram, to: subscriber.address)], now: now.advanced(by: .seconds(2)))
        }
        #expect(router.counters.keyframeRequests == plisBefore + 1)

        // Sender reports are rewritten per subscriber. The first is passed on in the server's
        // mapping: its wall clock on arrival against the timestamp of a packet arriving then.
        func lastReport() throws -> RTCPSenderReport? {
            subscriber.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.joined().compactMap {
                if case .senderReport(let r) = $0 { r } else { nil }
            }.last
        }
        func sendReport(ntp: UInt64, rtp: UInt32, count: Int = 1, after milliseconds: Int) throws {
            let reports: [RTCPPacket] = (0..<count).map { _ in
                .senderReport(RTCPSenderReport(ssrc: 2222, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: 1, octetCount: 7))
            }
            network.send(from: publisher, [.send(try #require(publisher.transport.protectRTCP(reports)).datagram, to: publisher.address)], now: now.advanced(by: .milliseconds(milliseconds)))
        }
        let forwardedTimestamp = try header(forwarded).timestamp
        try sendReport(ntp: NTPTime(unixSeconds: wall - 0.002).value, rtp: 9000, after: 0)
        #expect(try lastReport()?.ssrc == downSSRC)
        #expect(try lastReport()?.ntpTimestamp == NTPTime(unixSeconds: wall).value)
        #expect(try lastReport()?.rtpTimestamp == forwardedTimestamp)
        #expect(router.counters.senderReportsReplaced == 1)

        // A flood of sender reports (a packet full of them, again and again) is passed on once a
        // track per interval. The one passed, 150 ms on and agreeing with the first and with the
        // packets, is believed: it is passed on as it is.
        let passed = subscriber.rtcp.count
        let believedNTP = NTPTime(unixSeconds: wall + 0.148).value
        for round in 0..<5 { try sendReport(ntp: believedNTP, rtp: 9000 + 13_500, count: 20, after: 10 * round) }
        #expect(subscriber.rtcp.count == passed, "within 100 ms of the last one, none passes")
        try sendReport(ntp: believedNTP, rtp: 9000 + 13_500, count: 20, after: 150)
        #expect(subscriber.rtcp.count == passed + 1, "then one")
        #expect(try lastReport()?.ntpTimestamp == believedNTP)
        #expect(try lastReport()?.rtpTimestamp == forwardedTimestamp &+ 13_500)
        #expect(router.counters.senderReportsReplaced == 1)

        // One that does not match the packets (150 ms behind them) and the publisher is no longer
        // believed: the server's mapping again.
        try sendReport(ntp: NTPTime(unixSeconds: wall + 0.298).value, rtp: 9000 + 13_500, after: 300)
        #expect(try lastReport()?.ntpTimestamp == NTPTime(unixSeconds: wall).value)
        #expect(try lastReport()?.rtpTimestamp == forwardedTimestamp &+ 27_000)
        #expect(router.counters.senderReportsReplaced == 2)

        // The publisher reconnects (a new publish, new SSRC and sequence base): the subscriber's
        // stream continues with its SSRC and the next sequence number.
        let lastSeq = try #require(subscriber.rtp.last.map { UInt16($0[2]) << 8 | UInt16($0[3]) })
        let republisher = try FakeClient(port: 40_003, sections: [
            SDPNegotiation.OfferedSection(kind: .audio, direction: .sendonly, codecs: [(.opus, 111)], localSSRC: 3333),
            SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 4444),
        ], negotiate: { offer in try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer, now: now).answer }, now: now)
        network.clients.append(republisher)
        network.send(from: republisher, republisher.transport.start(now: now), now: now)
        var again = rtpPacket(pt: 96, seq: 7, ts: 1, ssrc: 4444, payload: [0x10, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A])
        network.send(from: republisher, [.send(try #require(republisher.transport.protectRTP(&again)), to: republisher.address)], now: now)
        let continued = try #require(subscriber.rtp.last)
        #expect(try header(continued).ssrc == downSSRC)
        #expect(UInt16(continued[2]) << 8 | UInt16(continued[3]) == lastSeq &+ 1)

        // Stopping the publisher ends forwarding.
        _ = router.stopPublishing(roomId: "room", userId: "anchor")
        #expect(throws: NegotiationError.self) {
            try router.subscribe(owner: 3, roomId: "room", publisherId: "anchor", offer: "v=0", now: now)
        }
    }

    /// A publisher connected to a fresh router, and a way to send it VP8 packets.
    func connectedPublisher(_ router: SFURouter, codecs: [(RTPCodec, UInt8)] = [(.vp8, 96)]) throws -> (Network, FakeClient) {
        let sections = [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: codecs, localSSRC: 2222)]
        let publisher = try FakeClient(port: 40_101, sections: sections, negotiate: { offer in
            try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer, now: now).answer
        }, now: now)
        let network = Network(router: router, clients: [publisher])
        network.send(from: publisher, publisher.transport.start(now: now), now: now)
        return (network, publisher)
    }

    func subscribe(_ router: SFURouter, _ network: inout Network, owner: UInt64, port: UInt16) throws -> FakeClient {
        let sections = [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.vp8, 98)])]
        let subscriber = try FakeClient(port: port, sections: sections, negotiate: { offer in
            try router.subscribe(owner: owner, roomId: "room", publisherId: "anchor", offer: offer, now: now)
        }, now: now)
        network.clients.append(subscriber)
        network.send(from: subscriber, subscriber.transport.start(now: now), now: now)
        return subscriber
    }

    func vp8(seq: UInt16, ts: UInt32, keyframe: Bool) -> [UInt8] {
        rtpPacket(pt: 96, seq: seq, ts: ts, ssrc: 2222, payload: keyframe ? [0x10, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A] : [0x10, 0x11, 0x02, 0x00])
    }

    func sequence(_ packet: [UInt8]) -> UInt16 { UInt16(packet[2]) << 8 | UInt16(packet[3]) }

    /// Collects what a router writes into its sink.
    final class RecordingSink: DatagramSink {
        var datagrams: [(bytes: [UInt8], to: TransportAddress)] = []
        var arrivals: [ContinuousClock.Instant?] = []

        func write(
            to destination: TransportAddress, capacity: Int, arrival: ContinuousClock.Instant?, _ fill: (UnsafeMutableRawBufferPointer) -> Int?
        ) -> Int? {
            var storage = [UInt8](repeating: 0, count: capacity)
            guard let length = storage.withUnsafeMutableBytes(fill) else { return nil }
            datagrams.append((Array(storage[..<length]), destination))
            arrivals.append(arrival)
            return length
        }

        func send(_ datagram: ByteBuffer, to destination: TransportAddress) {
            datagrams.append((Array(buffer: datagram), destination))
            arrivals.append(nil)
        }

        func take() -> [(bytes: [UInt8], to: TransportAddress)] {
            defer { (datagrams, arrivals) = ([], []) }
            return datagrams
        }
    }

    /// The port's order: what the router gave the sink during a call, then its outputs.
    func exchange(_ router: SFURouter, _ sink: RecordingSink, with client: FakeClient, start events: [PeerTransport.Event]) {
        var toRouter = events.compactMap { if case .send(let b, _) = $0 { b } else { nil } }
        for _ in 0..<50 where !toRouter.isEmpty {
            let outputs = toRouter.flatMap { router.receive($0, from: client.address, now: now) }
            toRouter = []
            let datagrams = sink.take().map(\.bytes) + outputs.compactMap { if case .send(let b, _) = $0 { Array(buffer: b) } else { nil } }
            for datagram in datagrams {
                for event in client.transport.receive(ByteBuffer(bytes: datagram), from: TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882), now: now) {
                    switch event {
                    case .send(let b, _): toRouter.append(b)
                    case .rtp(let p): client.rtp.append(p)
                    default: break
                    }
                }
            }
        }
    }

    @Test func withASinkANewSubscribersKeptKeyframeComesAfterItsLastDTLSFlight() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let (network, publisher) = try connectedPublisher(router)
        var packet = vp8(seq: 300, ts: 9000, keyframe: true)
        network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&packet)), to: publisher.address)], now: now)
        let sink = RecordingSink()
        router.datagramSink = sink
        let subscriber = try FakeClient(port: 40_107, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.vp8, 98)])], negotiate: { offer in
            try router.subscribe(owner: 2, roomId: "room", publisherId: "anchor", offer: offer, now: now)
        }, now: now)
        exchange(router, sink, with: subscriber, start: subscriber.transport.start(now: now))
        #expect(subscriber.transport.isConnected)
        #expect(router.counters.keyframesReplayed == 1)
        #expect(subscriber.rtp.count == 1, "the kept keyframe arrives after DTLS, not before it where it is lost")
    }

    @Test func withASinkForwardedPacketsAndRetransmissionsAreWrittenIntoItAndDecrypt() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        var (network, publisher) = try connectedPublisher(router)
        let subscriber = try subscribe(router, &network, owner: 2, port: 40_106)
        let sink = RecordingSink()
        router.datagramSink = sink
        var outputs: [SFURouter.Output] = []
        for seq in UInt16(200)..<205 {
            var packet = vp8(seq: seq, ts: UInt32(seq) * 3000, keyframe: seq == 200)
            outputs += router.receive(try #require(publisher.transport.protectRTP(&packet)), from: publisher.address, now: now)
        }
        #expect(!outputs.contains { if case .send(_, let to) = $0 { to == subscriber.address } else { false } }, "no output per forwarded packet")
        // Into the sink, in order: the sender report a subscriber gets before its first packet
        // (the server's mapping: the publisher has sent none), then the packets.
        #expect(sink.datagrams.count == 6 && sink.datagrams.allSatisfy { $0.to == subscriber.address })
        #expect(router.counters.rtpForwarded == 5)
        let report = subscriber.transport.receive(ByteBuffer(bytes: sink.datagrams[0].bytes), from: network.serverAddress, now: now).compactMap { received -> [RTCPPacket]? in
            if case .rtcp(let bytes) = received { try? RTCPPacket.parseCompound(ByteBuffer(bytes: bytes)) } else { nil }
        }
        if case .senderReport(let first)? = report.first?.first {
            #expect(first.ssrc == subscriber.tracks.first?.remoteSSRCs.first)
        } else {
            Issue.record("not a sender report: \(report)")
        }
        func decrypt(_ datagrams: ArraySlice<(bytes: [UInt8], to: TransportAddress)>) -> [[UInt8]] {
            datagrams.flatMap { datagram in
                subscriber.transport.receive(ByteBuffer(bytes: datagram.bytes), from: network.serverAddress, now: now).compactMap {
                    if case .rtp(let packet) = $0 { packet } else { nil }
                }
            }
        }
        let received = decrypt(sink.datagrams[1...])
        #expect(received.map { Array($0[12...]) } == (UInt16(200)..<205).map { Array(vp8(seq: $0, ts: 0, keyframe: $0 == 200)[12...]) })
        #expect(try header(received[0]).timestamp == (report.first?.first).flatMap { if case .senderReport(let r) = $0 { r.rtpTimestamp } else { nil } })
        // The subscriber misses the third: its NACK is answered from the history, into the sink.
        let missing = sequence(received[2])
        let nack = try #require(subscriber.transport.protectRTCP([
            .genericNACK(RTCPGenericNACK(senderSSRC: 1, mediaSSRC: try header(received[0]).ssrc, lostSequenceNumbers: [missing]))
        ]))
        _ = router.receive(nack.datagram, from: subscriber.address, now: now)
        #expect(router.counters.retransmitted == 1 && sink.datagrams.count == 7)
        #expect(sink.arrivals == [nil] + Array(repeating: now, count: 5) + [nil], "live copies carry their packet's arrival, a resent one none")
        #expect(sink.datagrams.last.map { Array($0.bytes[..<4]) } == Array(sink.datagrams[3].bytes[..<4]), "the same number again")
    }

    @Test func aNewSubscriberStartsFromTheKeptKeyframeWithoutAskingForANewOne() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        var (network, publisher) = try connectedPublisher(router)
        // No keyframe yet: nothing to replay to the first subscriber.
        let early = try subscribe(router, &network, owner: 2, port: 40_102)
        #expect(early.rtp.isEmpty && router.counters.keyframesReplayed == 0)
        // A keyframe and two more frames go by.
        for (seq, ts, key) in [(100, 3000, true), (101, 6000, false), (102, 9000, false)] as [(UInt16, UInt32, Bool)] {
            var packet = vp8(seq: seq, ts: ts, keyframe: key)
            network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&packet)), to: publisher.address)], now: now)
        }
        #expect(early.rtp.count == 3)

        // A later subscriber gets the keyframe and everything since at once, numbered on from
        // there, and the live stream goes on after them.
        let requests = router.counters.keyframeRequests
        let late = try subscribe(router, &network, owner: 3, port: 40_103)
        #expect(late.rtp.count == 3, "the kept keyframe and the two frames after it")
        #expect(late.rtp.first.map { Array($0[12...]) } == Array(vp8(seq: 100, ts: 3000, keyframe: true)[12...]))
        #expect(router.counters.keyframesReplayed == 1 && router.counters.keyframeRequests == requests, "no new keyframe asked for")
        var live = vp8(seq: 103, ts: 12000, keyframe: false)
        network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&live)), to: publisher.address)], now: now)
        let numbers = late.rtp.map(sequence)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 &+ 1 } && numbers.count == 4, "\(numbers)")
    }

    @Test func aLongReplayIsPacedWithLivePacketsQueuedBehindIt() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        var (network, publisher) = try connectedPublisher(router)
        func publish(_ seq: UInt16, keyframe: Bool) throws {
            var packet = vp8(seq: seq, ts: 3000 * UInt32(seq / 10), keyframe: keyframe)
            network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&packet)), to: publisher.address)], now: now)
        }
        try publish(1000, keyframe: true)
        for seq in UInt16(1001)..<1100 { try publish(seq, keyframe: false) }
        let subscriber = try subscribe(router, &network, owner: 2, port: 40_105)
        #expect(subscriber.rtp.count == SFURouter.replayPacketsPerTurn, "the first turn's worth at once")
        try publish(1100, keyframe: false)
        #expect(subscriber.rtp.count == SFURouter.replayPacketsPerTurn, "a live packet waits behind the replay")
        network.deliver(router: router.handleTimers(now: now.advanced(by: .milliseconds(20))), now: now)
        #expect(subscriber.rtp.count == 101, "the rest of the replay, then the live packet")
        let numbers = subscriber.rtp.map(sequence)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "in order, numbered on")
        try publish(1101, keyframe: false)
        #expect(subscriber.rtp.count == 102, "then live again")
    }

    @Test func aPausedKindStopsAndVideoResumesAtAKeyframeNumberedOn() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        var (network, publisher) = try connectedPublisher(router)
        let subscriber = try subscribe(router, &network, owner: 2, port: 40_104)
        func publish(_ seq: UInt16, keyframe: Bool) throws {
            var packet = vp8(seq: seq, ts: UInt32(seq) * 3000, keyframe: keyframe)
            network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&packet)), to: publisher.address)], now: now)
        }
        try publish(10, keyframe: true)
        try publish(11, keyframe: false)
        let key = SFURouter.PublisherKey(roomId: "room", userId: "anchor")
        #expect(router.setForwarding(owner: 2, publisher: key, audio: true, video: false, now: now).isEmpty)
        try publish(12, keyframe: false)
        #expect(subscriber.rtp.count == 2, "paused")
        let requests = router.counters.keyframeRequests
        network.deliver(router: router.setForwarding(owner: 2, publisher: key, audio: true, video: true, now: now.advanced(by: .seconds(2))), now: now)
        #expect(router.counters.keyframeRequests == requests + 1, "resuming asks for a keyframe")
        try publish(13, keyframe: false)
        #expect(subscriber.rtp.count == 2, "nothing before the keyframe")
        try publish(14, keyframe: true)
        let numbers = subscriber.rtp.map(sequence)
        #expect(numbers.count == 3 && numbers[2] == numbers[1] &+ 1, "numbered on from the last one sent: \(numbers)")
    }

    @Test func videoThatDidNotArriveIsAskedForAtOnceAndAgainUntilItComes() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let (network, publisher) = try connectedPublisher(router)
        func nacks() -> [[UInt16]] {
            publisher.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.joined().compactMap {
                if case .genericNACK(let n) = $0, n.mediaSSRC == 2222 { n.lostSequenceNumbers } else { nil }
            }
        }
        for seq: UInt16 in [10, 12] {
            var packet = vp8(seq: seq, ts: 3000, keyframe: seq == 10)
            network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&packet)), to: publisher.address)], now: now)
        }
        #expect(nacks() == [[11]], "asked for as soon as 12 shows the gap, with no subscriber yet")
        network.deliver(router: router.handleTimers(now: now + .milliseconds(130)), now: now)
        #expect(nacks() == [[11], [11]], "asked again a round trip later")
        var late = vp8(seq: 11, ts: 3000, keyframe: false)
        network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&late)), to: publisher.address)], now: now + .milliseconds(140))
        network.deliver(router: router.handleTimers(now: now + .milliseconds(400)), now: now)
        #expect(nacks().count == 2 && router.counters.nacksSent == 2, "not after it came")
    }

    @Test func receiverReportsToPublishersCarryInterarrivalJitter() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let publisher = try FakeClient(
            port: 40_021, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 2222)],
            negotiate: { try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: $0, now: now).answer }, now: now)
        let network = Network(router: router, clients: [publisher])
        network.send(from: publisher, publisher.transport.start(now: now), now: now)
        #expect(publisher.transport.isConnected)
        // Frames 3000 ticks (33.3 ms at 90 kHz) apart, arriving alternately 10 ms late and on time:
        // |D| is 900 ticks each time, so the RFC 3550 A.8 estimate converges to 900.
        for i in 0..<200 {
            var packet = rtpPacket(pt: 96, seq: UInt16(i), ts: UInt32(i * 3000), ssrc: 2222, payload: [0x00, 0x00, 0x01])
            let arrival = now + .nanoseconds(Int64(i) * 33_333_333) + (i % 2 == 0 ? .milliseconds(10) : .zero)
            _ = router.receive(try #require(publisher.transport.protectRTP(&packet)), from: publisher.address, now: arrival)
        }
        network.deliver(router: router.handleTimers(now: now + .seconds(7)), now: now + .seconds(7))
        let reports = publisher.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.joined().compactMap {
            if case .receiverReport(let r) = $0 { r } else { nil }
        }
        let block = try #require(reports.last?.reportBlocks.first)
        #expect(block.ssrc == 2222)
        #expect(block.extendedHighestSequenceNumber == 199)
        #expect(abs(Int(block.jitter) - 900) < 20, "jitter \(block.jitter), not 0")
    }

    @Test func tapsReceivePublishersPacketsAndLocalPublishersReachSubscribers() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let publisher = try FakeClient(
            port: 40_011, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 2222)],
            negotiate: { try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: $0, now: now).answer }, now: now)
        var network = Network(router: router, clients: [publisher])
        network.send(from: publisher, publisher.transport.start(now: now), now: now)
        let key = SFURouter.PublisherKey(roomId: "room", userId: "anchor")

        // A tap gets every packet of the publishers it names, decrypted, until it lets go.
        _ = router.setTap(7, publishers: [key], now: now)
        let packet = rtpPacket(pt: 96, seq: 10, ts: 900, ssrc: 2222, payload: [0x10, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A])
        var out = packet
        let outputs = router.receive(try #require(publisher.transport.protectRTP(&out)), from: publisher.address, now: now)
        let tapped = outputs.compactMap { output -> (SFURouter.TapID, SFURouter.PublisherKey, RTPCodec, RTPPacket)? in
            if case .tapped(let tap, let publisher, let codec, let bytes) = output { return (tap, publisher, codec, bytes) }
            return nil
        }
        #expect(tapped.count == 1)
        let parsed = try RTPPacket.parse(ByteBuffer(bytes: packet))
        #expect(tapped.first?.0 == 7 && tapped.first?.1 == key && tapped.first?.2 == .vp8 && tapped.first?.3 == parsed, "parsed once: header and payload")
        let later = now.advanced(by: .seconds(2))
        let pli = router.requestKeyframe(for: 7, of: key, now: later)
        #expect(pli.count == 1, "a tap may ask the publisher for a keyframe")
        #expect(router.requestKeyframe(for: 8, of: key, now: later).isEmpty, "an unknown tap may not")
        _ = router.setTap(7, publishers: [], now: now)
        var again = rtpPacket(pt: 96, seq: 11, ts: 900, ssrc: 2222, payload: [0x00, 0x00, 0x01])
        let untapped = router.receive(try #require(publisher.transport.protectRTP(&again)), from: publisher.address, now: now)
        #expect(!untapped.contains { if case .tapped = $0 { true } else { false } })

        // A local publisher (the mix in the room) reaches subscribers like any other.
        let mix = SFURouter.PublisherKey(roomId: "room", userId: "mix")
        router.publishLocal(mix, codecs: [.h264, .opus])
        let subscriber = try FakeClient(
            port: 40_012, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.h264, 102)])],
            negotiate: { try router.subscribe(owner: 2, roomId: "room", publisherId: "mix", offer: $0, now: now) }, now: now)
        network.clients.append(subscriber)
        network.send(from: subscriber, subscriber.transport.start(now: now), now: now)
        #expect(subscriber.transport.isConnected)
        let local = rtpPacket(pt: 0, seq: 1, ts: 0, ssrc: 77, payload: [0x65, 0x88, 0x84])
        network.deliver(router: router.sendLocal(local, kind: .video, of: mix, now: now), now: now)
        let received = try #require(subscriber.rtp.last)
        #expect(received[1] & 0x7F == 102 && Array(received[12...]) == [0x65, 0x88, 0x84])
        // Its subscribers' keyframe requests go to whoever feeds it.
        let downSSRC = try #require(subscriber.tracks.first?.remoteSSRCs.first)
        let request: [RTCPPacket] = [.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: downSSRC))]
        let feedback = router.receive(try #require(subscriber.transport.protectRTCP(request)).datagram, from: subscriber.address, now: later)
        #expect(feedback.contains { if case .localKeyframeRequest(mix) = $0 { true } else { false } })
        _ = router.stopLocal(mix)
        #expect(router.sendLocal(local, kind: .video, of: mix, now: now).isEmpty)
    }

    @Test func anH264PublisherInSingleNALModeReachesSubscribersThatOfferMode1() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let sections = [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.h264SingleNAL, 102)], localSSRC: 2222)]
        let publisher = try FakeClient(port: 40_120, sections: sections, negotiate: { offer in
            let answer = try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer, now: now).answer
            #expect(answer.contains("a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f"))
            return answer
        }, now: now)
        var network = Network(router: router, clients: [publisher])
        network.send(from: publisher, publisher.transport.start(now: now), now: now)
        let subscriber = try FakeClient(port: 40_121, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.h264, 100)])], negotiate: { offer in
            try router.subscribe(owner: 2, roomId: "room", publisherId: "anchor", offer: offer, now: now)
        }, now: now)
        #expect(subscriber.tracks.first?.codec == .h264)
        network.clients.append(subscriber)
        network.send(from: subscriber, subscriber.transport.start(now: now), now: now)
        // An IDR slice as one single NAL unit packet reaches the subscriber as it is.
        var packet = rtpPacket(pt: 102, seq: 1, ts: 9000, ssrc: 2222, payload: [0x65, 0x88, 0x84, 0x00])
        network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&packet)), to: publisher.address)], now: now)
        #expect(subscriber.rtp.last.map { Array($0[12...]) } == [0x65, 0x88, 0x84, 0x00])
        #expect(subscriber.rtp.last.map { $0[1] & 0x7F } == 100)

        // The other way round does not go: a mode 1 publisher's FU-A cannot reach a receiver of single NAL units only.
        let other = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        _ = try connectedPublisher(other, codecs: [(.h264, 102)])
        #expect(throws: NegotiationError.self) {
            _ = try FakeClient(port: 40_122, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.h264SingleNAL, 100)])], negotiate: { offer in
                try other.subscribe(owner: 2, roomId: "room", publisherId: "anchor", offer: offer, now: now)
            }, now: now)
        }
    }

    @Test func badOffersAreRefused() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        #expect(throws: NegotiationError.self) { try router.publish(owner: 1, roomId: "r", userId: "u", offer: "garbage", now: now) }
        let noICE = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\na=sendonly\r\n"
        #expect(throws: NegotiationError.self) { try router.publish(owner: 1, roomId: "r", userId: "u", offer: noICE, now: now) }
        #expect(router.peerCount == 0)
    }
}

@Suite struct SFURouterConsentTests {
    /// A VP8 publisher (SSRC 7) of owner 9, connected at `now`, that then sends no ICE check.
    func connectedPublisher(_ router: SFURouter, port: UInt16, userId: String, now: ContinuousClock.Instant) throws -> FakeClient {
        let sections = [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 7)]
        let publisher = try FakeClient(port: port, sections: sections, negotiate: { offer in
            try router.publish(owner: 9, roomId: "room", userId: userId, offer: offer, now: now).answer
        }, now: now)
        Network(router: router, clients: [publisher]).send(from: publisher, publisher.transport.start(now: now), now: now)
        return publisher
    }

    @Test func silentPublisherIsClosedAndReported() throws {
        let now = ContinuousClock.now
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let publisher = try connectedPublisher(router, port: 40_010, userId: "quiet", now: now)
        #expect(publisher.transport.isConnected)
        #expect(router.handleTimers(now: now.advanced(by: .seconds(29))).allSatisfy { if case .peerClosed = $0 { false } else { true } })
        let outputs = router.handleTimers(now: now.advanced(by: .seconds(31)))
        let closed = outputs.compactMap { output -> String? in
            guard case .peerClosed(let owner, let key?, _) = output else { return nil }
            return "\(owner) \(key.roomId) \(key.userId)"
        }
        #expect(closed == ["9 room quiet"])
        #expect(router.peerCount == 0)
    }

    /// A publisher that sends media but no ICE checks (libnice, as GStreamer's webrtcbin uses
    /// it, keeps a session with binding indications instead) keeps consent while its media
    /// decrypts, and loses it 30 s after its media stops.
    @Test func mediaKeepsConsentWithoutChecks() throws {
        let now = ContinuousClock.now
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let publisher = try connectedPublisher(router, port: 40_012, userId: "gst", now: now)
        #expect(publisher.transport.isConnected)
        func isOpen(at seconds: Int) -> Bool {
            router.handleTimers(now: now.advanced(by: .seconds(seconds))).allSatisfy { if case .peerClosed = $0 { false } else { true } }
        }
        for second in stride(from: 5, through: 50, by: 5) {
            var packet = SFURouterTests().rtpPacket(pt: 96, seq: UInt16(second), ts: UInt32(second) * 90_000, ssrc: 7, payload: [0x10, 0x11, 0x02, 0x00])
            _ = router.receive(try #require(publisher.transport.protectRTP(&packet)), from: publisher.address, now: now.advanced(by: .seconds(second)))
            #expect(isOpen(at: second), "at \(second) s")
        }
        #expect(isOpen(at: 79))
        #expect(!isOpen(at: 81), "30 s after the last media")
        #expect(router.peerCount == 0)
    }

    @Test func aPeerThatNeverConnectsIsClosedAtTheConnectDeadline() throws {
        let now = ContinuousClock.now
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882, connectTimeout: .seconds(5))
        let sections = [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 7)]
        // Negotiated, but the client never sends a packet.
        _ = try FakeClient(port: 40_011, sections: sections, negotiate: { offer in
            try router.publish(owner: 4, roomId: "room", userId: "ghost", offer: offer, now: now).answer
        }, now: now)
        _ = try FakeClient(port: 40_012, sections: [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.vp8, 98)])], negotiate: { offer in
            try router.subscribe(owner: 5, roomId: "room", publisherId: "ghost", offer: offer, now: now)
        }, now: now)
        #expect(router.handleTimers(now: now.advanced(by: .milliseconds(4900))).isEmpty)
        let outputs = router.handleTimers(now: now.advanced(by: .seconds(5)))
        let closed = outputs.compactMap { output -> String? in
            guard case .peerClosed(let owner, let key, let reason) = output else { return nil }
            return "\(owner) \(key?.userId ?? "subscriber") \(reason.hasPrefix("not connected in time"))"
        }
        #expect(closed.sorted() == ["4 ghost true", "5 subscriber true"])
        #expect(router.peerCount == 0)
    }
}

@Suite struct SFURouterICETests {
    let now = ContinuousClock.now
    let sections = [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 7)]

    @Test func answersNamePassiveICETCPCandidatesBelowTheUDPOnes() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), hosts: ["203.0.113.5", "198.51.100.5"], port: 7882, tcpPort: 7881)
        let udp = router.candidates.filter { $0.transport == "udp" }
        let tcp = router.candidates.filter { $0.transport == "tcp" }
        #expect(udp.map(\.port) == [7882, 7882] && tcp.map(\.port) == [7881, 7881])
        #expect(tcp.allSatisfy { $0[extension: "tcptype"] == "passive" })
        #expect(tcp.map(\.address) == ["203.0.113.5", "198.51.100.5"])
        #expect(udp.map(\.priority).min()! > tcp.map(\.priority).max()!, "UDP is preferred")
        #expect(Set(router.candidates.map(\.foundation)).count == 4)
        let withoutTCP = SFURouter(certificate: try DTLSCertificate(), hosts: ["203.0.113.5"], port: 7882)
        #expect(withoutTCP.candidates.map(\.transport) == ["udp"])
    }

    @Test func anICERestartAnswersWithNewCredentialsAndTakesChecksOnlyWithThem() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        var firstAnswer = ""
        let publisher = try FakeClient(port: 40_020, sections: sections, negotiate: { offer in
            firstAnswer = try router.publish(owner: 3, roomId: "room", userId: "host", offer: offer, now: now).answer
            return firstAnswer
        }, now: now)
        let network = Network(router: router, clients: [publisher])
        network.send(from: publisher, publisher.transport.start(now: now), now: now)
        #expect(publisher.transport.isConnected)
        let before = try TransportDescription(of: try SessionDescription.parse(firstAnswer))

        // The same credentials restart nothing; another owner's or a missing connection is refused.
        let current = publisher.transport.iceCredentials.local
        #expect(try router.restartICE(owner: 3, target: .publishing, remote: current, fingerprint: nil, now: now) == nil)
        #expect(throws: NegotiationError.self) { try router.restartICE(owner: 99, target: .publishing, remote: .random(), fingerprint: nil, now: now) }
        #expect(throws: NegotiationError.self) {
            try router.restartICE(owner: 3, target: .subscription(publisherId: "nobody"), remote: .random(), fingerprint: nil, now: now)
        }
        // A new certificate is not an ICE restart.
        let otherFingerprint = PeerTransport.sdpFingerprint(of: try DTLSCertificate())
        #expect(throws: NegotiationError.self) {
            try router.restartICE(owner: 3, target: .publishing, remote: .random(), fingerprint: otherFingerprint, now: now)
        }

        let fresh = ICECredentials.random()
        let restart = try #require(
            try router.restartICE(owner: 3, target: .publishing, remote: fresh, fingerprint: publisher.transport.localDescription.fingerprint, now: now))
        let after = try SessionDescription.parse(restart.sdp)
        let transport = try TransportDescription(of: after)
        #expect(transport.iceUfrag == restart.local.ufrag && transport.iceUfrag != before.iceUfrag)
        let formats = try SessionDescription.parse(firstAnswer).media.map(\.formats)
        #expect(transport.fingerprint == before.fingerprint && after.media.map(\.formats) == formats)

        // The client restarts too; its checks with the new credentials are answered.
        let server = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)
        let agent = ICEControllingAgent(local: fresh, remote: restart.local, remoteAddresses: [server], now: now)
        network.send(from: publisher, publisher.transport.restartICE(.controlling(agent), local: fresh, remote: restart.local, now: now), now: now)
        #expect(publisher.transport.roundTripTime != nil, "the new agent's check was answered")
        #expect(router.isBound(publisher.address))

        // A check with the old credentials is not for anyone any more.
        let dropped = router.counters.dropped
        let stale = STUNMessage(
            type: .bindingRequest, transactionID: .random(), attributes: [.username("\(before.iceUfrag):\(current.ufrag)"), .iceControlling(1), .useCandidate]
        ).serialize(integrityKey: STUNIntegrity.shortTermKey(password: before.icePwd), fingerprint: true)
        #expect(router.receive(stale, from: publisher.address, now: now).isEmpty)
        #expect(router.counters.dropped == dropped + 1)
    }
}
