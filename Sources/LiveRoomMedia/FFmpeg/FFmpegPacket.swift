import CFFmpeg

/// Owns one `AVPacket`.
final class FFmpegPacket {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() throws {
        guard let packet = av_packet_alloc() else { throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "av_packet_alloc") }
        pointer = packet
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&packet)
    }

    /// Replaces the contents with a copy of `data`.
    func fill(with data: [UInt8]) throws {
        av_packet_unref(pointer)
        let status = av_new_packet(pointer, Int32(data.count))
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_new_packet") }
        data.withUnsafeBufferPointer { pointer.pointee.data.update(from: $0.baseAddress!, count: data.count) }
    }

    /// A copy of the payload.
    var bytes: [UInt8] {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }

    var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }

    func unref() { av_packet_unref(pointer) }
}
