import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// The publisher: one peer connection sending the pre-encoded VP8 and Opus in a loop, paced
/// at the frame rate and 50 audio packets a second. Every RTP packet carries a one-byte
/// header extension (RFC 8285, id 1) with its send time in monotonic nanoseconds; the SFU
/// forwards it untouched. Confined to its event loop.
public final class BenchPublisher {
    /// The one-byte header extension id of the send time (no extmap negotiation needed: the SFU copies extensions).
    public static let sendTimeExtensionID: UInt8 = 1
    public static let maxPayloadSize = 1200

    public let channel: any Channel
    public let transport: PeerTransport
    private let media: PreencodedMedia
    private let audio: (ssrc: UInt32, payloadType: UInt8)?
    private let video: (ssrc: UInt32, payloadType: UInt8)?
    private var packetizer = VP8Packetizer(maxPayloadSize: BenchPublisher.maxPayloadSize)
    private var audioSequence = UInt16.random(in: 0...0x7FFF)
    private var videoSequence = UInt16.random(in: 0...0x7FFF)
    private let audioTimestampBase = UInt32.random(in: 0...UInt32.max)
    private let videoTimestampBase = UInt32.random(in: 0...UInt32.max)
    private var paceStart: NIODeadline?
    private var audioFramesSent = 0
    private var videoFramesSent = 0
    private var pacing: Scheduled<Void>?
    private var remote: SocketAddress?
    public private(set) var counts = PublishedCounts()
    public private(set) var closedReason: String?

    public init(channel: any Channel, transport: PeerTransport, tracks: [NegotiatedTrack], media: PreencodedMedia) {
        self.channel = channel
        self.transport = transport
        self.media = media
        audio = tracks.first { $0.kind == .audio }.flatMap { track in track.localSSRC.map { ($0, track.payloadType) } }
        video = tracks.first { $0.kind == .video }.flatMap { track in track.localSSRC.map { ($0, track.payloadType) } }
    }

    public func start(now: ContinuousClock.Instant) {
        _ = writeSends(transport.start(now: now), to: channel)
        channel.flush()
    }

    public func receive(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) {
        // RTCP from the SFU (PLI, NACK) is ignored: the replayed stream has a keyframe every two seconds.
        for case .closed(let reason) in writeSends(transport.receive(datagram, from: source, now: now), to: channel) {
            closedReason = reason
        }
    }

    public func runTimers(now: ContinuousClock.Instant) {
        guard let timeout = transport.nextTimeout, now >= timeout else { return }
        for case .closed(let reason) in writeSends(transport.handleTimers(now: now), to: channel) {
            closedReason = reason
        }
        channel.flush()
    }

    /// Starts sending media; call once DTLS is up.
    public func startPacing() {
        guard paceStart == nil else { return }
        remote = transport.remoteAddress?.socketAddress
        paceStart = .now()
        pace()
    }

    public func stop() {
        pacing?.cancel()
        pacing = nil
        paceStart = nil
    }

    /// Sends every frame that is due, then sleeps until the next one.
    private func pace() {
        guard let start = paceStart else { return }
        let now = NIODeadline.now()
        let videoInterval = 1_000_000_000 / Int64(media.fps)
        func audioDue() -> NIODeadline { start + .nanoseconds(Int64(audioFramesSent) * 20_000_000) }
        func videoDue() -> NIODeadline { start + .nanoseconds(Int64(videoFramesSent) * videoInterval) }
        while audioDue() <= now { sendAudioFrame() }
        while videoDue() <= now { sendVideoFrame() }
        channel.flush()
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        pacing = channel.eventLoop.scheduleTask(deadline: min(audioDue(), videoDue())) { bound.value.pace() }
    }

    private func sendAudioFrame() {
        defer { audioFramesSent += 1 }
        guard let audio else { return }
        let frame = media.audioFrames[audioFramesSent % media.audioFrames.count]
        let timestamp = audioTimestampBase &+ UInt32(truncatingIfNeeded: audioFramesSent &* 960)
        send(payload: ByteBuffer(bytes: frame.data), payloadType: audio.payloadType, ssrc: audio.ssrc, sequence: &audioSequence, timestamp: timestamp, marker: false)
        counts.audioPackets += 1
    }

    private func sendVideoFrame() {
        defer { videoFramesSent += 1 }
        guard let video else { return }
        let frame = media.videoFrames[videoFramesSent % media.videoFrames.count]
        let timestamp = videoTimestampBase &+ UInt32(truncatingIfNeeded: videoFramesSent &* (90_000 / media.fps))
        guard let payloads = try? packetizer.packetize(frame: ByteBuffer(bytes: frame.data)) else { return }
        for (index, payload) in payloads.enumerated() {
            send(payload: payload, payloadType: video.payloadType, ssrc: video.ssrc, sequence: &videoSequence, timestamp: timestamp, marker: index == payloads.count - 1)
        }
        counts.videoPackets += payloads.count
    }

    private func send(payload: ByteBuffer, payloadType: UInt8, ssrc: UInt32, sequence: inout UInt16, timestamp: UInt32, marker: Bool) {
        let sendTime = monotonicNanoseconds()
        let timeBytes = (0..<8).map { UInt8(truncatingIfNeeded: sendTime >> (56 - 8 * $0)) }
        let header = RTPHeader(
            marker: marker, payloadType: payloadType, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc,
            headerExtension: .oneByte([.init(id: Self.sendTimeExtensionID, data: timeBytes)]))
        sequence &+= 1
        guard let buffer = try? RTPPacket(header: header, payload: payload).serialize() else { return }
        var bytes = Array(buffer: buffer)
        bytes.reserveCapacity(bytes.count + SRTPSession.maximumTrailerLength)
        guard let remote, let protected = transport.protectRTP(&bytes) else { return }
        counts.bytes += protected.readableBytes
        channel.write(AddressedEnvelope(remoteAddress: remote, data: protected), promise: nil)
    }
}

/// Packets and bytes the publisher has sent so far.
public struct PublishedCounts: Sendable {
    public init() {}

    public var audioPackets = 0
    public var videoPackets = 0
    public var bytes = 0

    public var packets: Int { audioPackets + videoPackets }
}
