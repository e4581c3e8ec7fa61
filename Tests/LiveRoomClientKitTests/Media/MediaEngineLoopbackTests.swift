import LiveRoomProtocol
import LiveRoomMedia
import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomClientKit

/// Records keyframe requests and mutes instead of encoding.
final class FakePipeline: PublishPipelineControl {
    var keyframeRequests = 0
    var stopped = false
    func requestKeyframe() { keyframeRequests += 1 }
    func setMuted(video: Bool?, audio: Bool?) {}
    func stop() { stopped = true }
}

/// A ``MediaEngine`` against an in-memory ICE-lite, DTLS-passive server transport.
final class EngineHarness {
    let serverAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)
    let clientAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 50_000)
    var engine: MediaEngine!
    var server: PeerTransport?
    var outbox: [(MediaEngine.ConnectionID, ByteBuffer)] = []
    var events: [JSONValue] = []
    var released: [MediaEngine.ConnectionID] = []
    var serverRTP: [RTPPacket] = []
    var serverRTCP: [RTCPPacket] = []
    let pipeline = FakePipeline()
    var wall = NTPTime(unixSeconds: 1_700_000_000)
    /// Drops the video RTP datagram with this index (0-based) on its way to the server.
    var dropVideoDatagram: Int?
    private var videoDatagrams = 0

    init(options: MediaOptions) throws {
        let environment = MediaEngine.Environment(
            send: { [unowned self] id, bytes, to in
                #expect(to == serverAddress)
                outbox.append((id, bytes))
            },
            release: { [unowned self] in released.append($0) },
            event: { [unowned self] in events.append($0) },
            notify: { _ in },
            makePipeline: { [unowned self] _, _, _ in pipeline },
            wallClock: { [unowned self] in wall })
        engine = MediaEngine(userId: "host", options: options, certificate: try ClientCertificate(), environment: environment)
    }

    /// Answers an offer as the server would: ICE-lite, passive, one host candidate.
    func answer(_ offer: String, serverSSRCs: (audio: UInt32, video: UInt32)? = nil, video: RTPCodec = .vp8, now: ContinuousClock.Instant) throws -> String {
        let parsed = try SessionDescription.parse(offer)
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let local = TransportDescription(
            iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .passive,
            candidates: [ICECandidate(foundation: "1", priority: 2_130_706_431, address: "127.0.0.1", port: serverAddress.port)], iceLite: true)
        let (answer, _) = try SDPNegotiation.answer(to: parsed, local: local, sessionID: 9) { kind, _, codecs in
            .init(codec: codecs.first { $0 == video } ?? codecs.first, localSSRC: kind == .audio ? serverSSRCs?.audio : serverSSRCs?.video)
        }
        let remote = try TransportDescription(of: parsed)
        server = try PeerTransport(
            ice: .lite(ICELiteAgent(local: ice, remoteUfrag: remote.iceUfrag, now: now)), certificate: certificate,
            localDescription: local, remoteDescription: remote)
        return answer.serialize()
    }

    /// Carries datagrams both ways until quiet.
    func pump(now: ContinuousClock.Instant) {
        var rounds = 0
        while !outbox.isEmpty, rounds < 1000, let server {
            rounds += 1
            let (id, bytes) = outbox.removeFirst()
            if let drop = dropVideoDatagram, bytes.readableBytes > 12, DatagramKind(datagram: bytes) == .rtp,
                bytes.getInteger(at: bytes.readerIndex + 1, as: UInt8.self)! & 0x7F == 96
            {
                videoDatagrams += 1
                if videoDatagrams - 1 == drop { continue }
            }
            for event in server.receive(bytes, from: clientAddress, now: now) { handleServer(event, id: id, now: now) }
        }
    }

    func handleServer(_ event: PeerTransport.Event, id: MediaEngine.ConnectionID, now: ContinuousClock.Instant) {
        switch event {
        case .send(let bytes, _): engine.receive(bytes, connection: id, from: serverAddress, now: now)
        case .rtp(let bytes): if let packet = try? RTPPacket.parse(ByteBuffer(bytes: bytes)) { serverRTP.append(packet) }
        case .rtcp(let bytes): serverRTCP += (try? RTCPPacket.parseCompound(ByteBuffer(bytes: bytes))) ?? []
        default: break
        }
    }

    /// Sends RTCP or RTP from the server to the client connection `id`.
    func serverSendRTCP(_ packets: [RTCPPacket], id: MediaEngine.ConnectionID, now: ContinuousClock.Instant) throws {
        let protected = try #require(server?.protectRTCP(packets))
        engine.receive(protected.datagram, connection: id, from: serverAddress, now: now)
        pump(now: now)
    }

    func serverSendRTP(_ packet: RTPPacket, id: MediaEngine.ConnectionID, now: ContinuousClock.Instant) throws {
        var bytes = Array(buffer: try packet.serialize())
        let protected = try #require(server?.protectRTP(&bytes))
        engine.receive(protected, connection: id, from: serverAddress, now: now)
        pump(now: now)
    }
}

@Suite struct MediaEngineLoopbackTests {
    /// A VP8 keyframe header for 540x960 and some data.
    static let keyframe: [UInt8] = [0x50, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x1C, 0x02, 0xC0, 0x03] + Array(repeating: 0x42, count: 3000)

    @Test func publisherConnectsSendsRetransmitsAndReports() throws {
        let t0 = ContinuousClock.now
        let harness = try EngineHarness(options: MediaOptions(publish: .testCard))
        let engine = harness.engine!
        let answer = try harness.answer(engine.makePublishOffer(), now: t0)
        harness.dropVideoDatagram = 1
        try engine.startPublishing(answer: answer, connection: 1, now: t0)
        harness.pump(now: t0)
        #expect(harness.server?.isConnected == true)
        #expect(engine.publisher?.isConnected == true)

        engine.publish(.video(EncodedVideoFrame(codec: .vp8, data: Self.keyframe, isKeyframe: true, pts: 0)), now: t0)
        engine.publish(.audio(EncodedAudioFrame(data: [1, 2, 3], pts: 960, duration: 960)), now: t0)
        harness.pump(now: t0)
        let video = harness.serverRTP.filter { $0.header.payloadType == 96 }
        let audio = harness.serverRTP.filter { $0.header.payloadType == 111 }
        #expect(video.count == 2, "the middle packet was lost")
        #expect(video.map(\.header.marker) == [false, true])
        #expect(Set(video.map(\.header.timestamp)).count == 1)
        #expect(video.allSatisfy { $0.payload.readableBytes <= 1200 })
        #expect(audio.count == 1)
        let videoSSRC = try #require(video.first?.header.ssrc)

        // NACK: the lost packet comes again.
        let lostSequenceNumber = video[0].header.sequenceNumber &+ 1
        harness.serverRTP.removeAll()
        try harness.serverSendRTCP(
            [.genericNACK(RTCPGenericNACK(senderSSRC: 5, mediaSSRC: videoSSRC, lostSequenceNumbers: [lostSequenceNumber]))], id: 1, now: t0)
        #expect(harness.serverRTP.map(\.header.sequenceNumber) == [lostSequenceNumber])
        #expect(harness.serverRTP.first?.header.timestamp == video[0].header.timestamp)

        // PLI and FIR: one keyframe request per 500 ms.
        try harness.serverSendRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: videoSSRC))], id: 1, now: t0)
        try harness.serverSendRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: videoSSRC))], id: 1, now: t0 + .milliseconds(100))
        try harness.serverSendRTCP(
            [.fullIntraRequest(RTCPFullIntraRequest(senderSSRC: 5, entries: [.init(ssrc: videoSSRC, sequenceNumber: 1)]))], id: 1, now: t0 + .milliseconds(600))
        #expect(harness.pipeline.keyframeRequests == 2)

        // Sender reports for both streams, with the RTP clock of the media.
        engine.tick(now: t0 + .seconds(1))
        harness.pump(now: t0 + .seconds(1))
        let reports = harness.serverRTCP.compactMap { if case .senderReport(let r) = $0 { r } else { nil } }
        let videoReport = try #require(reports.first { $0.ssrc == videoSSRC })
        #expect(videoReport.rtpTimestamp &- video[0].header.timestamp == 90_000)
        #expect(videoReport.packetCount == 3, "the SR counts packets sent, lost or not")
        #expect(videoReport.ntpTimestamp == harness.wall.value)
        #expect(reports.count == 2)

        // Unpublish: close_notify goes out and the socket is released.
        engine.stopPublishing(now: t0 + .seconds(1))
        harness.pump(now: t0 + .seconds(1))
        #expect(harness.pipeline.stopped)
        #expect(harness.released == [1])
    }

    @Test func subscriberAssemblesFramesReportsFirstFrameAndAsksForKeyframes() throws {
        let t0 = ContinuousClock.now
        let harness = try EngineHarness(options: MediaOptions())
        let engine = harness.engine!
        let answer = try harness.answer(engine.makeSubscribeOffer(userId: "anchor"), serverSSRCs: (111_111, 222_222), now: t0)
        try engine.startSubscription(userId: "anchor", answer: answer, connection: 7, now: t0)
        #expect(engine.subscriptions["anchor"]?.videoCodec == .vp8)
        harness.pump(now: t0)
        #expect(harness.server?.isConnected == true)

        // The first tick asks for a keyframe.
        engine.tick(now: t0 + .milliseconds(10))
        harness.pump(now: t0 + .milliseconds(10))
        #expect(harness.serverRTCP.contains { if case .pictureLossIndication(let p) = $0 { p.mediaSSRC == 222_222 } else { false } })

        // A keyframe in three packets, the middle one late.
        var packetizer = VP8Packetizer(maxPayloadSize: 1200)
        let payloads = try packetizer.packetize(frame: ByteBuffer(bytes: Self.keyframe))
        let packets = payloads.enumerated().map { i, payload in
            RTPPacket(header: RTPHeader(marker: i == payloads.count - 1, payloadType: 96, sequenceNumber: UInt16(100 + i), timestamp: 9000, ssrc: 222_222), payload: payload)
        }
        let now = t0 + .milliseconds(20)
        harness.serverRTCP.removeAll()
        try harness.serverSendRTP(packets[0], id: 7, now: now)
        try harness.serverSendRTP(packets[2], id: 7, now: now)
        #expect(harness.serverRTCP.contains { if case .genericNACK(let n) = $0 { n.lostSequenceNumbers == [101] } else { false } })
        #expect(!harness.events.contains { $0["event"] == "onFirstVideoFrame" })
        try harness.serverSendRTP(packets[1], id: 7, now: now)
        let first = try #require(harness.events.first { $0["event"] == "onFirstVideoFrame" })
        #expect(first["userId"] == "anchor" && first["width"] == 540 && first["height"] == 960)

        // Audio, a sender report and statistics.
        try harness.serverSendRTP(RTPPacket(header: RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 0, ssrc: 111_111), payload: ByteBuffer(bytes: [9, 9])), id: 7, now: now)
        let sample = try #require(engine.subscriptions["anchor"]?.sample)
        #expect(sample.videoFrames == 1 && sample.width == 540 && sample.height == 960)
        #expect(sample.packetsExpected == 4 && sample.packetsReceived == 4)
        engine.tick(now: t0 + .seconds(3))
        harness.pump(now: t0 + .seconds(3))
        let statistics = try #require(harness.events.last { $0["event"] == "onStatistics" })
        #expect(statistics["remoteStatistics"]?.arrayValue?.first?["userId"] == "anchor")
        #expect(harness.serverRTCP.contains { if case .receiverReport(let r) = $0 { !r.reportBlocks.isEmpty } else { false } })

        engine.closeSubscription(userId: "anchor", now: t0 + .seconds(3))
        #expect(harness.released == [7])
        #expect(engine.subscriptions.isEmpty)
    }
}
