import BenchSupport
import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// When the media steps of one join happened, on the audience member's side (nil: not yet).
struct MediaTimeline: Sendable {
    /// The answer was applied and the first ICE check sent.
    var started: ContinuousClock.Instant?
    /// ICE chose the server's candidate (its check was answered).
    var selected: ContinuousClock.Instant?
    /// DTLS finished: SRTP keys are in place.
    var connected: ContinuousClock.Instant?
    var firstVideoPacket: ContinuousClock.Instant?
    /// The first complete keyframe came out of the frame assembler.
    var firstKeyframe: ContinuousClock.Instant?
    /// Video frames completed (or dropped) before the first keyframe.
    var framesDroppedBeforeKeyframe: UInt64 = 0
    var keyframeRequests: UInt64 = 0
    var sequenceNumbersNacked: UInt64 = 0
    /// SRTP packets that came before DTLS finished here, and were dropped.
    var droppedBeforeConnected = 0
    var closedReason: String?
}

/// A light audience member: ICE, DTLS, SRTP unprotect, and its video RTP through a
/// ``VideoFrameAssembler`` (whose NACKs and PLIs go back as RTCP), noting when the first
/// complete keyframe comes out. Audio is ignored and nothing is decoded, so what is measured
/// is the server's share of the time to first frame. Confined to its event loop.
final class JoinSubscriber: LoopSubscriber {
    let channel: any Channel
    let transport: PeerTransport
    private let videoPayloadType: UInt8?
    /// Our SSRC as the sender of RTCP feedback.
    private let localSSRC = UInt32.random(in: 1...UInt32.max)
    private var videoSSRC: UInt32?
    private var assembler = VideoFrameAssembler()
    private(set) var timeline = MediaTimeline()

    init(channel: any Channel, transport: PeerTransport, tracks: [NegotiatedTrack]) {
        self.channel = channel
        self.transport = transport
        let video = tracks.first { $0.kind == .video }
        videoPayloadType = video?.payloadType
        videoSSRC = video?.remoteSSRCs.first
    }

    static func makeLoopShared() {}

    var hasKeyframe: Bool { timeline.firstKeyframe != nil }

    func start(now: ContinuousClock.Instant) {
        timeline.started = now
        handle(transport.start(now: now), now: now)
        channel.flush()
    }

    func receive(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) {
        handle(transport.receive(datagram, from: source, now: now), now: now)
        channel.flush()
    }

    func runTimers(now: ContinuousClock.Instant) {
        if let timeout = transport.nextTimeout, now >= timeout {
            handle(transport.handleTimers(now: now), now: now)
        }
        // Completion timeouts, NACK retries, and keyframe requests while waiting for one.
        if transport.isConnected, !transport.isClosed, videoPayloadType != nil {
            act(on: assembler.tick(now: now), now: now)
        }
        channel.flush()
    }

    /// Sends DTLS close_notify and closes the socket.
    func close() {
        _ = writeSends(transport.close(reason: "join-bench done"), to: channel)
        channel.flush()
        channel.close(promise: nil)
    }

    private func handle(_ events: [PeerTransport.Event], now: ContinuousClock.Instant) {
        for event in writeSends(events, to: channel) {
            switch event {
            case .selected:
                if timeline.selected == nil { timeline.selected = now }
            case .connected:
                if timeline.connected == nil { timeline.connected = now }
            case .rtp(let bytes):
                receiveRTP(bytes, now: now)
            case .closed(let reason):
                timeline.closedReason = reason
            case .send, .rtcp:
                break
            }
        }
        timeline.droppedBeforeConnected = transport.drops.beforeConnected
    }

    private func receiveRTP(_ bytes: [UInt8], now: ContinuousClock.Instant) {
        guard let videoPayloadType, bytes.count >= 12, bytes[1] & 0x7F == videoPayloadType,
            let packet = try? RTPPacket.parse(ByteBuffer(bytes: bytes))
        else { return }
        if videoSSRC == nil { videoSSRC = packet.header.ssrc }
        guard packet.header.ssrc == videoSSRC else { return }
        if timeline.firstVideoPacket == nil { timeline.firstVideoPacket = now }
        act(on: assembler.insert(packet, codec: .vp8, now: now), now: now)
    }

    private func act(on actions: [VideoFrameAssembler.Action], now: ContinuousClock.Instant) {
        for action in actions {
            switch action {
            case .frame(let frame):
                if frame.isKeyframe, timeline.firstKeyframe == nil { timeline.firstKeyframe = frame.released }
            case .nack(let sequenceNumbers):
                guard let ssrc = videoSSRC else { continue }
                sendRTCP([
                    .receiverReport(RTCPReceiverReport(ssrc: localSSRC)),
                    .genericNACK(RTCPGenericNACK(senderSSRC: localSSRC, mediaSSRC: ssrc, lostSequenceNumbers: sequenceNumbers)),
                ])
            case .requestKeyframe:
                sendRTCP([
                    .receiverReport(RTCPReceiverReport(ssrc: localSSRC)),
                    .pictureLossIndication(RTCPPictureLossIndication(senderSSRC: localSSRC, mediaSSRC: videoSSRC ?? 0)),
                ])
            }
        }
        let counters = assembler.counters
        if timeline.firstKeyframe == nil { timeline.framesDroppedBeforeKeyframe = counters.framesDropped }
        timeline.keyframeRequests = counters.keyframeRequests
        timeline.sequenceNumbersNacked = counters.sequenceNumbersNacked
    }

    private func sendRTCP(_ packets: [RTCPPacket]) {
        guard let protected = transport.protectRTCP(packets), let remote = protected.to.socketAddress else { return }
        channel.write(AddressedEnvelope(remoteAddress: remote, data: protected.datagram), promise: nil)
    }
}
