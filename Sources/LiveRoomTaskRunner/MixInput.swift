import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomRTP
import LiveRoomWire
import NIOCore

/// One input of a publish task: an anchor's RTP turned back into pictures and sound.
///
/// Video packets are reassembled into frames (``VideoFrameAssembler``) and decoded with
/// libvpx or libavcodec; the latest picture is kept for the compositor. Complete frames wait
/// in a short queue until the next output frame needs the picture, so each is decoded just
/// before it is drawn, while it is still in the cache. Opus packets are
/// decoded, converted to the task's output rate and channels, and queued until the mixer
/// takes them. Confined to the task's thread.
///
/// Lip sync: the sound mixed now arrived as long ago as the audio queue is deep (60 ms or
/// more, against network jitter), so a frame is drawn only once it has waited as long
/// (``audioLatency``); drawn as it came, the picture ran ahead of the sound by that much.
final class MixInput {
    /// A complete encoded video frame, as a relay passes it on.
    struct EncodedFrame {
        var codec: VideoCodec
        var data: [UInt8]
        var isKeyframe: Bool
        var rtpTimestamp: UInt32
        /// When its first packet arrived.
        var arrival: ContinuousClock.Instant
        /// The SEI messages it carries, as far as the input's limits admit them.
        var sei: [TaggedSEIMessage] = []
    }

    let user: MixUser
    /// The latest decoded picture.
    private(set) var picture: VideoFrame?
    /// Frames decoded, frames that failed to decode.
    private(set) var decodedFrames = 0
    private(set) var decodeErrors = 0
    /// Pixels decoded since ``takeDecodedPixels()`` last took them (for the encoding budget).
    private var decodedPixels = 0
    /// SEI messages over TRTC's limits (30 a second, 8 KB a second per sender), not passed on.
    private(set) var seiDropped = 0
    private var seiLimiter = CustomMessageLimiter()
    /// The anchor's audio level now, 0–100 (for the layout-and-volume SEI).
    private(set) var audioLevel = 0

    /// Complete frames not decoded yet, oldest first.
    private var queuedFrames: [EncodedFrame] = []
    private var assembler = VideoFrameAssembler()
    private var videoCodec: VideoCodec?
    private var decoder: (any VideoDecoding)?
    private var opus: OpusDecoder?
    private let resampler: AudioResampler
    private let outputRate: Int
    private let outputChannels: Int
    /// Decoded audio in the output format, interleaved, oldest first.
    private var audio: [Int16] = []
    /// Audio is taken only once a little is queued, so network jitter does not cut it up.
    private var audioPrimed = false
    /// How long the sound taken for the mix waited in the queue, smoothed; zero while the
    /// input has no audio.
    private(set) var audioLatency = Duration.zero

    /// - Parameters:
    ///   - outputRate: the task's audio sample rate.
    ///   - outputChannels: the task's audio channels.
    init(user: MixUser, outputRate: Int, outputChannels: Int) throws {
        self.user = user
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        resampler = try AudioResampler(outputRate: outputRate, outputChannels: outputChannels)
    }

    /// Audio queued ahead of the mixer at most; older samples are dropped past it.
    static let maximumAudioQueue = Duration.milliseconds(300)
    /// Audio queued before the input joins the mix.
    static let audioPrimingDelay = Duration.milliseconds(60)

    enum VideoResult {
        case frame(EncodedFrame)
        case requestKeyframe
    }

    /// Adds a video RTP packet; returns complete frames and keyframe requests. Lost packets
    /// are not asked for again: the mix shows the last good picture until the next keyframe.
    func receiveVideo(_ packet: RTPPacket, codec: VideoCodec, now: ContinuousClock.Instant) -> [VideoResult] {
        if videoCodec != codec {
            videoCodec = codec
            decoder = nil
            queuedFrames.removeAll()
            assembler = VideoFrameAssembler()
        }
        let actions = assembler.insert(packet, codec: codec, now: now)
        return actions.compactMap { action in
            switch action {
            case .frame(let frame):
                guard let data = VideoPayloadFormat.bitstream(of: frame, codec: codec) else { return nil }
                let sei = VideoPayloadFormat.sei(of: frame, bitstream: data, codec: codec, extensionID: SEIHeaderExtension.defaultID).filter { message in
                    do {
                        try seiLimiter.admit(size: message.message.data.count, now: now)
                        return true
                    } catch {
                        seiDropped += 1
                        return false
                    }
                }
                return .frame(EncodedFrame(codec: codec, data: data, isKeyframe: frame.isKeyframe, rtpTimestamp: frame.timestamp, arrival: frame.firstArrival, sei: sei))
            case .requestKeyframe:
                return .requestKeyframe
            case .nack:
                return nil
            }
        }
    }

    /// Gives up on frames that stay incomplete; may ask for a keyframe.
    func tick(now: ContinuousClock.Instant) -> Bool {
        assembler.tick(now: now).contains(.requestKeyframe)
    }

    /// Frames queued at most; past it the queue is decoded at once. Between two output frames
    /// one or two arrive.
    static let maximumQueuedFrames = 16

    /// What ``decodeQueued(drawnAt:)`` did: frames decoded and failed, and the SEI messages of
    /// those frames, which go into the output frame that draws them.
    struct Decoded {
        var decoded = 0
        var failed = 0
        var sei: [TaggedSEIMessage] = []
    }

    /// Keeps a frame for ``decodeQueued(drawnAt:)``. When the queue is full it is decoded
    /// now, and the result is returned; otherwise nothing is decoded.
    func queue(_ frame: EncodedFrame) -> Decoded {
        queuedFrames.append(frame)
        guard queuedFrames.count > Self.maximumQueuedFrames else { return Decoded() }
        return decodeQueued()
    }

    /// Whether frames are waiting for ``decodeQueued(drawnAt:)``.
    var hasQueuedFrames: Bool { !queuedFrames.isEmpty }

    /// Decodes the queued frames, oldest first, into ``picture``: with `drawnAt` those due
    /// by then (arrived at least ``audioLatency`` before it), without it all of them.
    func decodeQueued(drawnAt time: ContinuousClock.Instant? = nil) -> Decoded {
        var result = Decoded()
        var due = queuedFrames.count
        if let time { due = queuedFrames.firstIndex { $0.arrival + audioLatency > time } ?? queuedFrames.count }
        for frame in queuedFrames.prefix(due) {
            if decode(frame) { result.decoded += 1 } else { result.failed += 1 }
            result.sei += frame.sei
        }
        queuedFrames.removeFirst(due)
        return result
    }

    /// Decodes a frame into ``picture``. Returns false when it could not be decoded.
    @discardableResult
    func decode(_ frame: EncodedFrame) -> Bool {
        do {
            if decoder == nil {
                decoder = switch frame.codec {
                case .vp8: try VP8Decoder()
                case .h264: try H264Decoder()
                }
            }
            let encoded = EncodedVideoFrame(codec: frame.codec, data: frame.data, isKeyframe: frame.isKeyframe, pts: Int64(frame.rtpTimestamp))
            if try decoder?.decode(encoded, into: &picture) == true {
                decodedFrames += 1
                decodedPixels += picture.map { $0.width * $0.height } ?? 0
            }
            return true
        } catch {
            decodeErrors += 1
            return false
        }
    }

    /// The pixels decoded since the last call, and their codec; nil when none were.
    func takeDecodedPixels() -> (pixels: Int, codec: VideoCodec)? {
        defer { decodedPixels = 0 }
        guard decodedPixels > 0, let videoCodec else { return nil }
        return (decodedPixels, videoCodec)
    }

    /// Adds an Opus RTP payload.
    func receiveAudio(_ payload: [UInt8]) {
        guard !payload.isEmpty else { return }
        do {
            if opus == nil { opus = try OpusDecoder(sampleRate: 48_000, channels: 2) }
            guard let decoded = try opus?.decode(payload, pts: 0) else { return }
            let samples = try resampler.convert(decoded).samples
            audioLevel = Self.level(of: samples)
            audio += samples
        } catch {
            decodeErrors += 1
            return
        }
        let limit = Self.samples(Self.maximumAudioQueue, rate: outputRate) * outputChannels
        if audio.count > limit {
            // The mixer fell behind the sender's clock: keep the newest 100 ms.
            audio.removeFirst(audio.count - Self.samples(.milliseconds(100), rate: outputRate) * outputChannels)
        }
        if audio.count >= Self.samples(Self.audioPrimingDelay, rate: outputRate) * outputChannels { audioPrimed = true }
    }

    /// Takes `count` samples per channel for the mix; missing samples are silence. Nil
    /// while nothing is queued yet.
    func takeAudio(count: Int, pts: Int64) -> AudioFrame? {
        guard audioPrimed else { return nil }
        let wanted = count * outputChannels
        var samples = Array(audio.prefix(wanted))
        audio.removeFirst(samples.count)
        // The samples taken waited, on average, what is left behind them and half of themselves.
        let waited = Duration.seconds(Double(audio.count / outputChannels + count / 2) / Double(outputRate))
        audioLatency = audioLatency == .zero ? waited : audioLatency * 0.9 + waited * 0.1
        if samples.count < wanted {
            samples += [Int16](repeating: 0, count: wanted - samples.count)
            if audio.isEmpty { audioPrimed = false }
        }
        return try? AudioFrame(samples: samples, sampleRate: outputRate, channels: outputChannels, pts: pts)
    }

    /// The level of some samples, 0–100: their RMS from -60 dBFS (0) to full scale (100).
    static func level(of samples: [Int16]) -> Int {
        guard !samples.isEmpty else { return 0 }
        // Exact in integers: 2^30 per sample leaves room for 2^33 samples.
        let sum = samples.withUnsafeBufferPointer { samples in
            var sum: Int64 = 0
            for sample in samples { sum &+= Int64(Int32(sample) &* Int32(sample)) }
            return sum
        }
        let power = Double(sum) / Double(samples.count)
        guard power > 0 else { return 0 }
        let dbfs = 10 * log10(power / (32768.0 * 32768.0))
        return max(0, min(100, Int(((dbfs + 60) / 60 * 100).rounded())))
    }

    static func samples(_ duration: Duration, rate: Int) -> Int {
        Int(duration.ticks(rate: UInt32(rate)))
    }
}
