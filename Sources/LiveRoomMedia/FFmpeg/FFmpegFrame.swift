import CFFmpeg

/// Owns one `AVFrame`.
final class FFmpegFrame {
    let pointer: UnsafeMutablePointer<AVFrame>

    init() throws {
        guard let frame = av_frame_alloc() else { throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "av_frame_alloc") }
        pointer = frame
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }

    func unref() { av_frame_unref(pointer) }

    var pixelFormat: AVPixelFormat { AVPixelFormat(rawValue: pointer.pointee.format) }

    /// Whether the picture is 8-bit 4:2:0 planar and can be copied without conversion.
    var isI420: Bool { pixelFormat == AV_PIX_FMT_YUV420P || pixelFormat == AV_PIX_FMT_YUVJ420P }

    /// Copies an I420 picture out; the caller checks ``isI420`` first.
    func videoFrame(pts: Int64) -> VideoFrame {
        let f = pointer.pointee
        return VideoFrame(
            width: Int(f.width), height: Int(f.height), pts: pts,
            yPlane: f.data.0!, yStride: Int(f.linesize.0),
            uPlane: f.data.1!, uStride: Int(f.linesize.1),
            vPlane: f.data.2!, vStride: Int(f.linesize.2))
    }

    /// Copies an I420 picture into `picture`, in its storage when the size is the same.
    func replace(_ picture: inout VideoFrame?, pts: Int64) {
        let f = pointer.pointee
        VideoFrame.replace(
            &picture, width: Int(f.width), height: Int(f.height), pts: pts,
            yPlane: f.data.0!, yStride: Int(f.linesize.0),
            uPlane: f.data.1!, uStride: Int(f.linesize.1),
            vPlane: f.data.2!, vStride: Int(f.linesize.2))
    }

    /// Allocates writable I420 buffers of the given size.
    func allocateI420(width: Int, height: Int) throws {
        pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        let status = av_frame_get_buffer(pointer, 0)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_frame_get_buffer") }
    }

    /// Copies `frame` into this frame's I420 buffers, first making them writable (the
    /// encoder may still hold a reference to the previous picture).
    func fill(with frame: VideoFrame) throws {
        let status = av_frame_make_writable(pointer)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_frame_make_writable") }
        let f = pointer.pointee
        frame.copyPlanes(
            toY: f.data.0!, yStride: Int(f.linesize.0),
            u: f.data.1!, uStride: Int(f.linesize.1),
            v: f.data.2!, vStride: Int(f.linesize.2))
        pointer.pointee.pts = frame.pts
    }
}
