import CFFmpeg

/// Decodes a media file (anything libavformat opens) into I420 video at a chosen size and
/// 48 kHz stereo Int16 audio in 20 ms frames, looping forever.
///
/// ``nextFrame()`` returns frames in file order. Video `pts` is in 90 kHz and audio `pts`
/// in 48 kHz samples, both starting at 0 and continuing across loops: at the end of the
/// file the source seeks back to the start and carries on from where the longer of the
/// two streams ended (the shorter audio track is padded with silence), so the timelines
/// stay aligned.
public final class FileSource {
    /// Output picture width.
    public let width: Int
    /// Output picture height.
    public let height: Int
    /// Output audio format: 48 kHz, 2 channels, 960 samples per channel per frame.
    public static let sampleRate = 48_000
    /// Output channel count (interleaved).
    public static let channels = 2
    /// Samples per channel in each audio frame (20 ms).
    public static let samplesPerFrame = 960

    /// Whether the file has a video stream.
    public var hasVideo: Bool { video != nil }
    /// Whether the file has an audio stream.
    public var hasAudio: Bool { audio != nil }
    /// How many times the source has wrapped to the start.
    public private(set) var loopCount = 0

    private struct VideoTrack {
        let index: Int
        let decoder: FFmpegCodecContext
        let timeBase: AVRational
        let startTime: Int64
        let frameDuration90k: Int64
    }

    private struct AudioTrack {
        let index: Int
        let decoder: FFmpegCodecContext
    }

    private let demuxer: FFmpegDemuxer
    private let video: VideoTrack?
    private let audio: AudioTrack?
    private let packet: FFmpegPacket
    private let frame: FFmpegFrame
    private let scaler = FFmpegScaler()
    private let resampler = FFmpegResampler(outputRate: FileSource.sampleRate, outputChannels: FileSource.channels)

    private var pending: [MediaFrame] = []
    private var pendingHead = 0
    private var audioFIFO: [Int16] = []
    /// Samples per channel emitted or queued since the start, across loops.
    private var audioSamplesQueued: Int64 = 0
    private var audioFramesEmitted: Int64 = 0
    /// Offset of the current loop in 90 kHz.
    private var loopOffset90k: Int64 = 0
    /// End of the latest video frame, in 90 kHz, across loops.
    private var videoEnd90k: Int64 = 0

    /// Opens `path`; throws if it cannot be opened or has neither video nor audio.
    /// - Parameters:
    ///   - width: output picture width (even).
    ///   - height: output picture height (even).
    public init(path: String, width: Int = 640, height: Int = 360) throws {
        guard width > 0, height > 0 else { throw MediaFormatError("invalid output size \(width)x\(height)") }
        self.width = width
        self.height = height
        demuxer = try FFmpegDemuxer(path: path)
        packet = try FFmpegPacket()
        frame = try FFmpegFrame()

        if let index = demuxer.bestStream(AVMEDIA_TYPE_VIDEO) {
            let stream = demuxer.stream(index)
            let decoder = try Self.openDecoder(for: stream)
            let rate = demuxer.frameRate(index)
            let duration = rate.num > 0 && rate.den > 0 ? Int64(90_000) * Int64(rate.den) / Int64(rate.num) : 3_000
            let start = stream.pointee.start_time == liveroom_av_nopts_value() ? 0 : stream.pointee.start_time
            video = VideoTrack(index: index, decoder: decoder, timeBase: stream.pointee.time_base, startTime: start, frameDuration90k: duration)
        } else {
            video = nil
        }
        if let index = demuxer.bestStream(AVMEDIA_TYPE_AUDIO) {
            audio = AudioTrack(index: index, decoder: try Self.openDecoder(for: demuxer.stream(index)))
        } else {
            audio = nil
        }
        guard video != nil || audio != nil else { throw MediaFormatError("\(path) has no video or audio stream") }
    }

    private static func openDecoder(for stream: UnsafeMutablePointer<AVStream>) throws -> FFmpegCodecContext {
        let decoder = try FFmpegCodecContext(decoderFor: stream.pointee.codecpar.pointee.codec_id)
        let status = avcodec_parameters_to_context(decoder.pointer, stream.pointee.codecpar)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avcodec_parameters_to_context") }
        decoder.pointer.pointee.pkt_timebase = stream.pointee.time_base
        decoder.pointer.pointee.thread_count = 1
        try decoder.open()
        return decoder
    }

    /// The next video or audio frame in file order.
    public func nextFrame() throws -> MediaFrame {
        var emptyLoops = 0
        while true {
            if pendingHead < pending.count {
                let next = pending[pendingHead]
                pendingHead += 1
                if pendingHead == pending.count {
                    pending.removeAll(keepingCapacity: true)
                    pendingHead = 0
                }
                return next
            }
            if try demuxer.read(into: packet) {
                defer { packet.unref() }
                let index = Int(packet.pointer.pointee.stream_index)
                if let video, index == video.index {
                    try video.decoder.send(packet)
                    try drainVideo(video)
                } else if let audio, index == audio.index {
                    try audio.decoder.send(packet)
                    try drainAudio(audio)
                }
            } else {
                // End of file: flush the decoders, then start the next loop.
                if let video {
                    try video.decoder.send(nil as FFmpegPacket?)
                    try drainVideo(video)
                    video.decoder.flush()
                }
                if let audio {
                    try audio.decoder.send(nil as FFmpegPacket?)
                    try drainAudio(audio)
                    audio.decoder.flush()
                }
                let audioEnd90k = audioSamplesQueued * 90_000 / Int64(Self.sampleRate)
                loopOffset90k = max(videoEnd90k, audioEnd90k)
                if audio != nil {
                    let target = loopOffset90k * Int64(Self.sampleRate) / 90_000
                    if target > audioSamplesQueued {
                        audioFIFO += [Int16](repeating: 0, count: Int(target - audioSamplesQueued) * Self.channels)
                        audioSamplesQueued = target
                    }
                    emitAudioFrames()
                }
                if pending.isEmpty {
                    emptyLoops += 1
                    guard emptyLoops < 2 else { throw MediaFormatError("\(demuxer.path) decodes to no frames") }
                }
                try demuxer.rewind()
                loopCount += 1
            }
        }
    }

    private func drainVideo(_ track: VideoTrack) throws {
        while try track.decoder.receive(into: frame) == .got {
            defer { frame.unref() }
            let raw = frame.pointer.pointee.best_effort_timestamp
            let relative = raw == liveroom_av_nopts_value() ? 0 : raw - track.startTime
            let pts = loopOffset90k + av_rescale_q(relative, track.timeBase, AVRational(num: 1, den: 90_000))
            videoEnd90k = max(videoEnd90k, pts + track.frameDuration90k)
            pending.append(.video(try scaler.convert(frame, width: width, height: height, pts: pts)))
        }
    }

    private func drainAudio(_ track: AudioTrack) throws {
        while try track.decoder.receive(into: frame) == .got {
            defer { frame.unref() }
            let samples = try resampler.convert(frame)
            audioFIFO += samples
            audioSamplesQueued += Int64(samples.count / Self.channels)
            emitAudioFrames()
        }
    }

    private func emitAudioFrames() {
        let chunk = Self.samplesPerFrame * Self.channels
        var consumed = 0
        while audioFIFO.count - consumed >= chunk {
            let samples = Array(audioFIFO[consumed..<(consumed + chunk)])
            consumed += chunk
            pending.append(.audio(AudioFrame(
                validSamples: samples, sampleRate: Self.sampleRate, channels: Self.channels,
                pts: audioFramesEmitted * Int64(Self.samplesPerFrame))))
            audioFramesEmitted += 1
        }
        audioFIFO.removeFirst(consumed)
    }
}
