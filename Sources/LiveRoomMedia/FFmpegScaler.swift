import CFFmpeg

/// Owns one `SwsContext`: converts decoded pictures of any format and size to I420 at a
/// target size. The context is rebuilt when the input changes.
final class FFmpegScaler {
    private var context: OpaquePointer?

    init() {}

    deinit { sws_freeContext(context) }

    func convert(_ frame: FFmpegFrame, width: Int, height: Int, pts: Int64) throws -> VideoFrame {
        let f = frame.pointer.pointee
        context = sws_getCachedContext(
            context, f.width, f.height, frame.pixelFormat,
            Int32(width), Int32(height), AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil)
        guard let context else {
            throw CodecError.ffmpeg(liveroom_averror(EINVAL), "sws_getCachedContext(\(f.width)x\(f.height) format \(f.format) → \(width)x\(height))")
        }
        var output = VideoFrame(width: width, height: height, color: .black, pts: pts)
        let cw = output.chromaWidth
        var status: Int32 = 0
        output.y.withUnsafeMutableBufferPointer { y in
            output.u.withUnsafeMutableBufferPointer { u in
                output.v.withUnsafeMutableBufferPointer { v in
                    let planes: [UnsafeMutablePointer<UInt8>?] = [y.baseAddress, u.baseAddress, v.baseAddress, nil]
                    let strides: [Int32] = [Int32(width), Int32(cw), Int32(cw), 0]
                    status = withUnsafePointer(to: frame.pointer.pointee.data) { data in
                        withUnsafePointer(to: frame.pointer.pointee.linesize) { linesize in
                            data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { source in
                                linesize.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                                    sws_scale(context, source, sourceStrides, 0, f.height, planes, strides)
                                }
                            }
                        }
                    }
                }
            }
        }
        guard status > 0 else { throw CodecError.ffmpeg(status, "sws_scale") }
        return output
    }
}
