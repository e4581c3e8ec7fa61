import LiveRoomMedia
import LiveRoomPublishTasks
import LiveRoomRTP
import LiveRoomWire
import NIOCore

/// One input of a publish task: an anchor's RTP turned back into pictures and sound.
///
/// Video packets are reassembled into frames (``VideoFrameAssembler``) and decoded with
/// libvpx or libavcodec; the latest picture is kept for the compositor. Opus packets are
/// decoded, converted to the task's output rate and channels, and queued until the mixer
/// takes them. Confined to the task's thread.
final class MixInput {
    /// A complete encoded video frame, as a relay passes it on.
    struct EncodedFrame {
        var codec: VideoCodec
        var data: [UInt8]
        var isKeyframe: Bool
        var rtpTimestamp: UInt32
    }

    let user: MixUser
    /// The latest decoded picture.
    private(set) var picture: VideoFrame?
    /// Frames decoded, frames that failed to decode.
    private(set) var decodedFrames = 0
    private(set) var decodeErrors = 0

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
            assembler = VideoFrameAssembler()
        }
        let actions = assembler.insert(packet, codec: codec, now: now)
        return actions.compactMap { action in
            switch action {
            case .frame(let frame):
                guard let data = VideoPayloadFormat.bitstream(of: frame, codec: codec) else { return nil }
                return .frame(EncodedFrame(codec: codec, data: data, isKeyframe: frame.isKeyframe, rtpTimestamp: frame.timestamp))
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
            if let last = try decoder?.decode(EncodedVideoFrame(codec: frame.codec, data: frame.data, isKeyframe: frame.isKeyframe, pts: Int64(frame.rtpTimestamp))).last {
                picture = last
                decodedFrames += 1
            }
            return true
        } catch {
            decodeErrors += 1
            return false
        }
    }

    /// Adds an Opus RTP payload.
    func receiveAudio(_ payload: [UInt8]) {
        guard !payload.isEmpty else { return }
        do {
            if opus == nil { opus = try OpusDecoder(sampleRate: 48_000, channels: 2) }
            guard let decoded = try opus?.decode(payload, pts: 0) else { return }
            audio += try resampler.convert(decoded).samples
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
        if samples.count < wanted {
            samples += [Int16](repeating: 0, count: wanted - samples.count)
            if audio.isEmpty { audioPrimed = false }
        }
        return try? AudioFrame(samples: samples, sampleRate: outputRate, channels: outputChannels, pts: pts)
    }

    static func samples(_ duration: Duration, rate: Int) -> Int {
        Int(duration.ticks(rate: UInt32(rate)))
    }
}
