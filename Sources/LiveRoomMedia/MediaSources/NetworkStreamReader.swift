import CFFmpeg

/// Pulls a live stream as a CDN viewer does (RTMP, HTTP-FLV or HLS, whatever libavformat
/// opens), decodes its video, and optionally copies every packet into a file.
///
/// Video comes out as Annex B access units (FLV's length-prefixed NAL units are converted,
/// and a keyframe gets the stream's SPS and PPS in front), so SEI is read the same way
/// whatever the container. Every blocking call is bounded by `timeout`.
/// Confined to one thread, but for ``abort()``, which any thread may call.
public final class NetworkStreamReader: @unchecked Sendable {
    public enum Item {
        /// One video access unit: Annex B bytes, its time in ms, whether it is a keyframe, and
        /// the pictures it decoded to (0 while waiting for a keyframe or when it failed).
        case video(accessUnit: [UInt8], ptsMilliseconds: Int64, isKeyframe: Bool, decoded: [VideoFrame], failed: Bool)
        /// One audio packet: its size in bytes.
        case audio(bytes: Int, ptsMilliseconds: Int64)
    }

    public let url: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let interrupt = FFmpegInterrupt()
    private let timeout: Duration
    private let packet: FFmpegPacket
    private let frame: FFmpegFrame
    private var videoIndex: Int32 = -1
    private var audioIndex: Int32 = -1
    private var videoDecoder: FFmpegCodecContext?
    /// FLV's NAL length size (from avcC), or nil for an Annex B stream.
    private var nalLengthSize: Int?
    private var parameterSets: [UInt8] = []
    private let recording: StreamRecording?

    /// Opens `url` (within `timeout`); every packet read is also copied into `recording`.
    public init(url: String, timeout: Duration, recording: StreamRecording? = nil) throws {
        self.recording = recording
        self.url = url
        self.timeout = timeout
        // libavformat's notes (every HLS segment it opens) are no viewer's business; errors still show.
        av_log_set_level(AV_LOG_ERROR)
        packet = try FFmpegPacket()
        frame = try FFmpegFrame()
        guard let allocated = avformat_alloc_context() else { throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "avformat_alloc_context") }
        _ = liveroom_set_interrupt_callback(allocated, { FFmpegInterrupt.check($0) }, interrupt.opaque)
        var context: UnsafeMutablePointer<AVFormatContext>? = allocated
        interrupt.arm(timeout: timeout)
        var status = avformat_open_input(&context, url, nil, nil)
        guard status >= 0, let opened = context else { throw CodecError.ffmpeg(status, "avformat_open_input(\(url))") }
        self.context = opened
        status = avformat_find_stream_info(opened, nil)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avformat_find_stream_info(\(url))") }
        videoIndex = av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        audioIndex = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard videoIndex >= 0 || audioIndex >= 0 else { throw MediaFormatError("\(url) has no video or audio stream") }
        if videoIndex >= 0 {
            let stream = opened.pointee.streams[Int(videoIndex)]!
            let par = stream.pointee.codecpar!
            guard par.pointee.codec_id == AV_CODEC_ID_H264 else { throw MediaFormatError("\(url): only H.264 video is played") }
            (nalLengthSize, parameterSets) = Self.readExtradata(par)
            let decoder = try FFmpegCodecContext(decoderFor: AV_CODEC_ID_H264)
            decoder.pointer.pointee.thread_count = 1
            try decoder.open()
            videoDecoder = decoder
        }
        try recording?.attach(opened, video: videoIndex, audio: audioIndex)
    }

    deinit {
        interrupt.abort()
        avformat_close_input(&context)
    }

    /// The picture size the stream announces, if it has video.
    public var videoSize: VideoSize? {
        guard videoIndex >= 0, let par = context?.pointee.streams[Int(videoIndex)]?.pointee.codecpar else { return nil }
        return VideoSize(width: Int(par.pointee.width), height: Int(par.pointee.height))
    }

    /// Ends a blocking read from another thread.
    public func abort() { interrupt.abort() }

    /// The next video or audio item; nil at the end of the stream. Throws when the stream
    /// breaks or stays silent for the timeout.
    public func next() throws -> Item? {
        while true {
            interrupt.arm(timeout: timeout)
            let status = av_read_frame(context, packet.pointer)
            if status == liveroom_averror_eof() { return nil }
            guard status >= 0 else { throw CodecError.ffmpeg(status, "av_read_frame(\(url))") }
            defer { packet.unref() }
            let index = packet.pointer.pointee.stream_index
            guard index == videoIndex || index == audioIndex, let stream = context?.pointee.streams[Int(index)] else { continue }
            let pts = packet.pointer.pointee.pts != liveroom_av_nopts_value() ? packet.pointer.pointee.pts : packet.pointer.pointee.dts
            let milliseconds = pts == liveroom_av_nopts_value() ? 0 : av_rescale_q(pts, stream.pointee.time_base, AVRational(num: 1, den: 1000))
            try recording?.write(packet, from: stream)
            if index == audioIndex { return .audio(bytes: Int(packet.pointer.pointee.size), ptsMilliseconds: milliseconds) }
            let keyframe = packet.isKeyframe
            var accessUnit = annexB(packet.bytes)
            if keyframe, nalLengthSize != nil { accessUnit = parameterSets + accessUnit }
            var decoded: [VideoFrame] = []
            var failed = false
            if let decoder = videoDecoder {
                do {
                    try packet.fill(with: accessUnit)
                    try decoder.send(packet)
                    while case .got = try decoder.receive(into: frame) {
                        decoded.append(frame.videoFrame(pts: milliseconds * 90))
                        frame.unref()
                    }
                } catch {
                    failed = true
                }
            }
            return .video(accessUnit: accessUnit, ptsMilliseconds: milliseconds, isKeyframe: keyframe, decoded: decoded, failed: failed)
        }
    }

    /// A video packet as Annex B: FLV's length-prefixed NAL units get start codes.
    private func annexB(_ bytes: [UInt8]) -> [UInt8] {
        guard let size = nalLengthSize else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 16)
        var index = 0
        while index + size <= bytes.count {
            let length = bytes[index..<(index + size)].reduce(0) { $0 << 8 | Int($1) }
            index += size
            guard length > 0, index + length <= bytes.count else { break }
            out += [0, 0, 0, 1]
            out += bytes[index..<(index + length)]
            index += length
        }
        return out
    }

    /// An `avcC` record's NAL length size and its SPS and PPS as Annex B; for Annex B
    /// extradata (MPEG-TS), no length size and the extradata as it is.
    private static func readExtradata(_ par: UnsafeMutablePointer<AVCodecParameters>) -> (Int?, [UInt8]) {
        guard let data = par.pointee.extradata, par.pointee.extradata_size > 0 else { return (nil, []) }
        let bytes = Array(UnsafeBufferPointer(start: data, count: Int(par.pointee.extradata_size)))
        guard bytes.count >= 7, bytes[0] == 1 else { return (nil, bytes) }
        let lengthSize = Int(bytes[4] & 0x03) + 1
        var sets: [UInt8] = []
        var index = 5
        for isPPS in [false, true] {
            guard index < bytes.count else { break }
            let count = isPPS ? Int(bytes[index]) : Int(bytes[index] & 0x1F)
            index += 1
            for _ in 0..<count {
                guard index + 2 <= bytes.count else { break }
                let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
                index += 2
                guard index + length <= bytes.count else { break }
                sets += [0, 0, 0, 1] + bytes[index..<(index + length)]
                index += length
            }
        }
        return (lengthSize, sets)
    }
}

/// Copies the packets of one or more inputs in turn into one file, without decoding them: a
/// recording of what a viewer received, the format taken from the file name. The file's streams
/// come from the first input; each later input (a reconnection) goes on where the one before
/// ended, its video and audio matched to the file's by kind.
public final class StreamRecording: @unchecked Sendable {
    public let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    /// The file's stream of each media kind.
    private var outputVideo: Int32?
    private var outputAudio: Int32?
    /// The current input's stream index for each of the file's streams.
    private var inputIndex: [Int32: Int32] = [:]
    private let copy: FFmpegPacket
    /// Where the current input starts in the file, in ms, and its first time of each stream.
    private var offsetMilliseconds: Int64 = 0
    private var firstMilliseconds: [Int32: Int64] = [:]
    private var lastMilliseconds: Int64 = -1

    public init(path: String) throws {
        self.path = path
        copy = try FFmpegPacket()
    }

    deinit { try? finish() }

    /// Takes the next input's packets from now on.
    func attach(_ input: UnsafeMutablePointer<AVFormatContext>, video: Int32, audio: Int32) throws {
        inputIndex = [:]
        firstMilliseconds = [:]
        offsetMilliseconds = lastMilliseconds < 0 ? 0 : lastMilliseconds + 40
        if context == nil { try open(with: input, video: video, audio: audio) }
        if video >= 0, let output = outputVideo { inputIndex[video] = output }
        if audio >= 0, let output = outputAudio { inputIndex[audio] = output }
    }

    private func open(with input: UnsafeMutablePointer<AVFormatContext>, video: Int32, audio: Int32) throws {
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        var status = avformat_alloc_output_context2(&context, nil, nil, path)
        guard status >= 0, let context else { throw CodecError.ffmpeg(status, "avformat_alloc_output_context2(\(path))") }
        self.context = context
        for index in [video, audio] where index >= 0 {
            guard let source = input.pointee.streams[Int(index)], let stream = avformat_new_stream(context, nil) else { continue }
            status = avcodec_parameters_copy(stream.pointee.codecpar, source.pointee.codecpar)
            guard status >= 0 else { throw CodecError.ffmpeg(status, "avcodec_parameters_copy") }
            stream.pointee.codecpar.pointee.codec_tag = 0
            stream.pointee.time_base = AVRational(num: 1, den: 1000)
            if index == video { outputVideo = stream.pointee.index } else { outputAudio = stream.pointee.index }
        }
        status = avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avio_open(\(path))") }
        status = avformat_write_header(context, nil)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avformat_write_header(\(path))") }
    }

    func write(_ packet: FFmpegPacket, from stream: UnsafeMutablePointer<AVStream>) throws {
        let index = packet.pointer.pointee.stream_index
        guard let context, let output = inputIndex[index], let target = context.pointee.streams[Int(output)] else { return }
        av_packet_unref(copy.pointer)
        guard av_packet_ref(copy.pointer, packet.pointer) >= 0 else { return }
        defer { av_packet_unref(copy.pointer) }
        let scale = { (value: Int64) -> Int64 in
            value == liveroom_av_nopts_value() ? value : av_rescale_q(value, stream.pointee.time_base, AVRational(num: 1, den: 1000))
        }
        let dts = scale(copy.pointer.pointee.dts)
        let first = firstMilliseconds[index] ?? (dts == liveroom_av_nopts_value() ? 0 : dts)
        firstMilliseconds[index] = first
        for keyPath in [\AVPacket.pts, \AVPacket.dts] {
            let value = scale(copy.pointer.pointee[keyPath: keyPath])
            if value != liveroom_av_nopts_value() {
                copy.pointer.pointee[keyPath: keyPath] = av_rescale_q(
                    value - first + offsetMilliseconds, AVRational(num: 1, den: 1000), target.pointee.time_base)
            }
        }
        copy.pointer.pointee.duration = 0
        copy.pointer.pointee.stream_index = output
        copy.pointer.pointee.pos = -1
        if dts != liveroom_av_nopts_value() { lastMilliseconds = max(lastMilliseconds, dts - first + offsetMilliseconds) }
        let status = av_interleaved_write_frame(context, copy.pointer)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_interleaved_write_frame") }
    }

    /// Writes the trailer and closes the file (once; later calls do nothing).
    public func finish() throws {
        guard let context else { return }
        self.context = nil
        defer {
            avio_closep(&context.pointee.pb)
            avformat_free_context(context)
        }
        let status = av_write_trailer(context)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_write_trailer") }
    }
}
