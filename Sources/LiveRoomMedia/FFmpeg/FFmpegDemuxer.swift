import CFFmpeg

/// Owns one input `AVFormatContext`: opens a file or URL and reads its packets.
final class FFmpegDemuxer {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    let path: String

    init(path: String) throws {
        self.path = path
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        var status = avformat_open_input(&context, path, nil, nil)
        guard status >= 0, let opened = context else { throw CodecError.ffmpeg(status, "avformat_open_input(\(path))") }
        self.context = opened
        status = avformat_find_stream_info(opened, nil)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avformat_find_stream_info(\(path))") }
    }

    deinit { avformat_close_input(&context) }

    /// The index of the best stream of a type, or nil if there is none.
    func bestStream(_ type: AVMediaType) -> Int? {
        let index = av_find_best_stream(context, type, -1, -1, nil, 0)
        return index >= 0 ? Int(index) : nil
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context!.pointee.streams[index]! }

    /// The stream's frame rate as FFmpeg guesses it.
    func frameRate(_ index: Int) -> AVRational { av_guess_frame_rate(context, stream(index), nil) }

    /// Reads the next packet; false at the end of the input.
    func read(into packet: FFmpegPacket) throws -> Bool {
        let status = av_read_frame(context, packet.pointer)
        if status == liveroom_averror_eof() { return false }
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_read_frame(\(path))") }
        return true
    }

    /// Seeks back to the start of the input.
    func rewind() throws {
        let status = av_seek_frame(context, -1, 0, AVSEEK_FLAG_BACKWARD)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_seek_frame(\(path), 0)") }
    }
}
