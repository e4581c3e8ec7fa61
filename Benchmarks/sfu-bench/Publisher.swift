import BenchSupport
import LiveRoomMedia
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Media encoded once and replayed in a loop, so the load generator stays light: VP8 from a
/// moving test card with fresh noise in every frame (hard enough that the encoder spends its
/// whole budget), and Opus from a tone with noise.
struct PreencodedMedia: Sendable {
    let videoFrames: [EncodedVideoFrame]
    let audioFrames: [EncodedAudioFrame]
    let width: Int
    let height: Int
    let fps: Int

    /// The real bitrates of what is replayed, in kbit/s of codec payload.
    var videoKbps: Double { Double(videoFrames.reduce(0) { $0 + $1.data.count } * 8) / (Double(videoFrames.count) / Double(fps)) / 1000 }
    /// Average sizes in bytes of key frames and of the other frames.
    var frameSizes: (keyframe: Int, interframe: Int) {
        func average(_ frames: [EncodedVideoFrame]) -> Int { frames.isEmpty ? 0 : frames.reduce(0) { $0 + $1.data.count } / frames.count }
        return (average(videoFrames.filter(\.isKeyframe)), average(videoFrames.filter { !$0.isKeyframe }))
    }
    var audioKbps: Double { Double(audioFrames.reduce(0) { $0 + $1.data.count } * 8) / (Double(audioFrames.count) * 0.02) / 1000 }

    /// Encodes `seconds` of video (after one second for rate control to settle, dropped),
    /// with a keyframe every two seconds so the loop joins cleanly, and `audioFrameCount`
    /// 20 ms Opus frames.
    static func make(width: Int, height: Int, fps: Int, videoKbps: Int, seconds: Int, audioKbps: Int, audioFrameCount: Int) throws -> PreencodedMedia {
        var random = XorShiftRandom(seed: 0x5EED_1234_ABCD_0001)
        let encoder = try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: videoKbps, keyframeInterval: 60, threads: 1)
        let card = TestCardSource(width: width, height: height, fps: fps, label: "SFU-BENCH")
        let warmup = fps, keyframeEvery = 2 * fps
        var video: [EncodedVideoFrame] = []
        for index in 0..<(warmup + seconds * fps) {
            var frame = card.nextFrame(index: index)
            random.addNoise(to: &frame.y, amplitude: 20)
            random.addNoise(to: &frame.u, amplitude: 6)
            random.addNoise(to: &frame.v, amplitude: 6)
            let keyframe = index >= warmup && (index - warmup) % keyframeEvery == 0
            let encoded = try encoder.encode(frame, forceKeyframe: keyframe)
            if index >= warmup { video += encoded }
        }

        let tone = ToneSource(frequency: 440, amplitude: 0.2)
        let opus = try OpusEncoder(bitrateKbps: audioKbps)
        var audio: [EncodedAudioFrame] = []
        for index in 0..<audioFrameCount {
            var frame = tone.nextFrame(index: index)
            for i in frame.samples.indices {
                let noise = Int32(truncatingIfNeeded: random.next() % 6001) - 3000
                frame.samples[i] = Int16(clamping: Int32(frame.samples[i]) + noise)
            }
            audio.append(try opus.encode(frame))
        }
        return PreencodedMedia(videoFrames: video, audioFrames: audio, width: width, height: height, fps: fps)
    }
}

/// A small fast generator for noise (xorshift64*); deterministic, so runs are comparable.
struct XorShiftRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 1 : seed }

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }

    /// Adds uniform noise in ±`amplitude` to every sample, clamped to the limited video range.
    mutating func addNoise(to plane: inout [UInt8], amplitude: Int) {
        let span = UInt64(2 * amplitude + 1)
        plane.withUnsafeMutableBufferPointer { samples in
            var bits: UInt64 = 0
            var left = 0
            for i in samples.indices {
                if left == 0 {
                    bits = next()
                    left = 8
                }
                let noise = Int(bits & 0xFF) % Int(span) - amplitude
                bits >>= 8
                left -= 1
                samples[i] = UInt8(clamping: min(235, max(16, Int(samples[i]) + noise)))
            }
        }
    }
}

/// The publisher: one peer connection sending the pre-encoded VP8 and Opus in a loop, paced
/// at the frame rate and 50 audio packets a second. Every RTP packet carries a one-byte
/// header extension (RFC 8285, id 1) with its send time in monotonic nanoseconds; the SFU
/// forwards it untouched. Confined to its event loop.
final class BenchPublisher {
    /// The one-byte header extension id of the send time (no extmap negotiation needed: the SFU copies extensions).
    static let sendTimeExtensionID: UInt8 = 1
    static let maxPayloadSize = 1200

    let channel: any Channel
    let transport: PeerTransport
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
    private(set) var counts = PublishedCounts()
    private(set) var closedReason: String?

    init(channel: any Channel, transport: PeerTransport, tracks: [NegotiatedTrack], media: PreencodedMedia) {
        self.channel = channel
        self.transport = transport
        self.media = media
        audio = tracks.first { $0.kind == .audio }.flatMap { track in track.localSSRC.map { ($0, track.payloadType) } }
        video = tracks.first { $0.kind == .video }.flatMap { track in track.localSSRC.map { ($0, track.payloadType) } }
    }

    func start(now: ContinuousClock.Instant) {
        _ = writeSends(transport.start(now: now), to: channel)
        channel.flush()
    }

    func receive(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) {
        // RTCP from the SFU (PLI, NACK) is ignored: the replayed stream has a keyframe every two seconds.
        for case .closed(let reason) in writeSends(transport.receive(datagram, from: source, now: now), to: channel) {
            closedReason = reason
        }
    }

    func runTimers(now: ContinuousClock.Instant) {
        guard let timeout = transport.nextTimeout, now >= timeout else { return }
        for case .closed(let reason) in writeSends(transport.handleTimers(now: now), to: channel) {
            closedReason = reason
        }
        channel.flush()
    }

    /// Starts sending media; call once DTLS is up.
    func startPacing() {
        guard paceStart == nil else { return }
        remote = transport.remoteAddress?.socketAddress
        paceStart = .now()
        pace()
    }

    func stop() {
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
struct PublishedCounts: Sendable {
    var audioPackets = 0
    var videoPackets = 0
    var bytes = 0

    var packets: Int { audioPackets + videoPackets }
}
