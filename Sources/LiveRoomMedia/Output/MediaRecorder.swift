import CFFmpeg
import LiveRoomWire

/// Writes already-encoded VP8 or H.264 video and Opus audio into a Matroska file (or
/// another container libavformat picks from the file name) without re-encoding.
///
/// Add the streams, then write packets; the header is written with the first packet and
/// ``finish()`` writes the trailer. Timestamps are in each stream's RTP clock, counted
/// from the start of the recording: video `pts` in 90 kHz, audio `pts` in 48 kHz samples.
/// Both must not decrease within a stream.
///
/// Recording starts at a video key frame: video frames before the first key frame are
/// dropped. H.264 access units are Annex B; if no parameter sets were given when adding
/// the stream, they are taken from the first key frame (audio that arrives before it is
/// held back), and the muxer converts the Annex B data to the `avcC` form Matroska uses.
///
/// Not thread-safe; use from one isolation domain (and off the event loop: writes block).
public final class MediaRecorder {
    /// The output file.
    public let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let packet: FFmpegPacket

    private struct VideoStream {
        let index: Int32
        let codec: VideoCodec
        var timeBase = AVRational(num: 1, den: 90_000)
    }
    private struct AudioStream {
        let index: Int32
        var timeBase = AVRational(num: 1, den: 48_000)
    }
    private var video: VideoStream?
    private var audio: AudioStream?
    private var headerWritten = false
    private var waitingForKeyframe = true
    private var heldAudio: [EncodedAudioFrame] = []
    private var finished = false
    /// Packets written per stream.
    public private(set) var videoFramesWritten = 0
    /// Audio packets written so far.
    public private(set) var audioFramesWritten = 0

    /// Creates the output. The container is chosen from the file extension (`.mkv`, `.webm`,
    /// `.mp4`, ...); `format` overrides it (e.g. `"matroska"`).
    public init(path: String, format: String? = nil) throws {
        self.path = path
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        let status = avformat_alloc_output_context2(&context, nil, format, path)
        guard status >= 0, let context else { throw CodecError.ffmpeg(status, "avformat_alloc_output_context2(\(path))") }
        self.context = context
        packet = try FFmpegPacket()
    }

    deinit {
        if !finished { try? finish() }
        if let context {
            if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
            avformat_free_context(context)
        }
    }

    /// Adds the video stream.
    /// - Parameter parameterSets: for H.264, the SPS and PPS in Annex B form (as
    ///   ``AnnexB/parameterSets(in:)`` returns them); nil to take them from the first key frame.
    public func addVideoStream(codec: VideoCodec, width: Int, height: Int, parameterSets: [UInt8]? = nil) throws {
        guard !headerWritten, video == nil else { throw MediaFormatError("video stream must be added once, before the first packet") }
        guard width > 0, height > 0 else { throw MediaFormatError("invalid video size \(width)x\(height)") }
        let stream = try newStream()
        let par = stream.pointee.codecpar!
        par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        par.pointee.codec_id = codec == .vp8 ? AV_CODEC_ID_VP8 : AV_CODEC_ID_H264
        par.pointee.width = Int32(width)
        par.pointee.height = Int32(height)
        par.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        stream.pointee.time_base = AVRational(num: 1, den: 90_000)
        if let parameterSets { try setCodecExtradata(par, parameterSets) }
        video = VideoStream(index: stream.pointee.index, codec: codec)
    }

    /// Adds an Opus audio stream, with an `OpusHead` (RFC 7845 §5.1) as codec private data.
    /// - Parameter preSkip: samples at 48 kHz the decoder discards at the start.
    public func addOpusStream(sampleRate: Int = 48_000, channels: Int = 2, preSkip: Int = OpusEncoder.preSkip) throws {
        guard !headerWritten, audio == nil else { throw MediaFormatError("audio stream must be added once, before the first packet") }
        guard channels == 1 || channels == 2, sampleRate > 0, (0...65_535).contains(preSkip) else {
            throw MediaFormatError("invalid Opus stream \(sampleRate) Hz x \(channels), pre-skip \(preSkip)")
        }
        let stream = try newStream()
        let par = stream.pointee.codecpar!
        par.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        par.pointee.codec_id = AV_CODEC_ID_OPUS
        par.pointee.sample_rate = 48_000  // Opus always decodes at 48 kHz in Matroska
        av_channel_layout_default(&par.pointee.ch_layout, Int32(channels))
        par.pointee.initial_padding = Int32(preSkip)
        stream.pointee.time_base = AVRational(num: 1, den: 48_000)
        try setCodecExtradata(par, Self.opusHead(channels: channels, preSkip: preSkip, inputSampleRate: sampleRate))
        audio = AudioStream(index: stream.pointee.index)
    }

    /// The 19-byte `OpusHead` for channel mapping family 0.
    public static func opusHead(channels: Int, preSkip: Int, inputSampleRate: Int) -> [UInt8] {
        var head = Array("OpusHead".utf8)
        head.append(1)  // version
        head.append(UInt8(channels))
        head += [UInt8(preSkip & 0xFF), UInt8((preSkip >> 8) & 0xFF)]
        head += (0..<4).map { UInt8(truncatingIfNeeded: inputSampleRate >> (8 * $0)) }
        head += [0, 0]  // output gain
        head.append(0)  // mapping family 0: mono or stereo
        return head
    }

    /// Writes one compressed video frame (`pts` in 90 kHz).
    public func writeVideo(_ frame: EncodedVideoFrame) throws {
        guard let video, !finished else { throw MediaFormatError("no video stream to write to") }
        guard frame.codec == video.codec else { throw MediaFormatError("\(frame.codec) frame for a \(video.codec) stream") }
        if waitingForKeyframe {
            guard frame.isKeyframe else { return }
            waitingForKeyframe = false
        }
        if !headerWritten {
            if video.codec == .h264, context!.pointee.streams[Int(video.index)]!.pointee.codecpar.pointee.extradata_size == 0 {
                guard let sets = AnnexB.parameterSets(in: frame.data) else {
                    throw MediaFormatError("first H.264 key frame carries no SPS/PPS and none were given")
                }
                try setCodecExtradata(context!.pointee.streams[Int(video.index)]!.pointee.codecpar, sets)
            }
            try writeHeader()
        }
        try write(frame.data, pts: frame.pts, duration: 0, from: AVRational(num: 1, den: 90_000), stream: video.index, timeBase: self.video!.timeBase, keyframe: frame.isKeyframe)
        videoFramesWritten += 1
    }

    /// Writes one Opus packet (`pts` in 48 kHz samples).
    public func writeAudio(_ frame: EncodedAudioFrame) throws {
        guard audio != nil, !finished else { throw MediaFormatError("no audio stream to write to") }
        if !headerWritten {
            if video != nil {
                // Hold audio until the video key frame that writes the header; keep the newest 10 s.
                heldAudio.append(frame)
                if heldAudio.count > 500 { heldAudio.removeFirst(heldAudio.count - 500) }
                return
            }
            try writeHeader()
        }
        try writeAudioPacket(frame)
    }

    private func writeAudioPacket(_ frame: EncodedAudioFrame) throws {
        let audio = self.audio!
        try write(frame.data, pts: frame.pts, duration: Int64(frame.duration), from: AVRational(num: 1, den: 48_000), stream: audio.index, timeBase: audio.timeBase, keyframe: true)
        audioFramesWritten += 1
    }

    /// Writes the trailer and closes the file. Safe to call more than once.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        guard let context else { return }
        if !headerWritten && video == nil && audio == nil { return }
        if !headerWritten {
            // Nothing usable arrived: write an empty but valid file.
            try writeHeader()
        }
        let status = av_write_trailer(context)
        let closed = avio_closep(&context.pointee.pb)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_write_trailer(\(path))") }
        guard closed >= 0 else { throw CodecError.ffmpeg(closed, "avio_closep(\(path))") }
    }

    private func newStream() throws -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "avformat_new_stream")
        }
        return stream
    }


    private func writeHeader() throws {
        guard let context else { return }
        if context.pointee.oformat.pointee.flags & liveroom_avfmt_flag_nofile() == 0 {
            let status = avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
            guard status >= 0 else { throw CodecError.ffmpeg(status, "avio_open(\(path))") }
        }
        let status = avformat_write_header(context, nil)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avformat_write_header(\(path))") }
        headerWritten = true
        // The muxer may have replaced the time bases (Matroska uses milliseconds).
        if let index = video?.index { video!.timeBase = context.pointee.streams[Int(index)]!.pointee.time_base }
        if let index = audio?.index { audio!.timeBase = context.pointee.streams[Int(index)]!.pointee.time_base }
        let held = heldAudio
        heldAudio.removeAll()
        for frame in held { try writeAudioPacket(frame) }
    }

    private func write(_ data: [UInt8], pts: Int64, duration: Int64, from clock: AVRational, stream: Int32, timeBase: AVRational, keyframe: Bool) throws {
        guard !data.isEmpty else { throw MediaFormatError("empty packet") }
        try packet.fill(with: data)
        let p = packet.pointer
        p.pointee.pts = av_rescale_q(pts, clock, timeBase)
        p.pointee.dts = p.pointee.pts
        p.pointee.duration = av_rescale_q(duration, clock, timeBase)
        p.pointee.stream_index = stream
        p.pointee.flags = keyframe ? AV_PKT_FLAG_KEY : 0
        let status = av_interleaved_write_frame(context, p)  // takes the packet's reference
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_interleaved_write_frame(\(path))") }
    }
}
