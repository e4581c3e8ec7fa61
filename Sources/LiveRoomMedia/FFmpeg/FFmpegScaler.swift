import CFFmpeg

/// Owns one `SwsContext`: converts pictures of any format and size to I420 at a target
/// size. The context is rebuilt when the input or output geometry changes, so a caller
/// that keeps one scaler per (source size, destination size) pays for the set-up once.
final class FFmpegScaler {
    private var context: OpaquePointer?
    private let flags: Int32

    /// - Parameter flags: the `SWS_*` algorithm, bilinear unless given.
    init(flags: Int32 = SWS_BILINEAR) {
        self.flags = flags
    }

    deinit { sws_freeContext(context) }

    /// Converts a decoded picture to a new packed I420 frame of the given size.
    func convert(_ frame: FFmpegFrame, width: Int, height: Int, pts: Int64) throws -> VideoFrame {
        let f = frame.pointer.pointee
        var output = VideoFrame(width: width, height: height, color: .black, pts: pts)
        let cw = output.chromaWidth
        try output.y.withUnsafeMutableBufferPointer { y in
            try output.u.withUnsafeMutableBufferPointer { u in
                try output.v.withUnsafeMutableBufferPointer { v in
                    try withUnsafePointer(to: frame.pointer.pointee.data) { data in
                        try withUnsafePointer(to: frame.pointer.pointee.linesize) { linesize in
                            try data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { source in
                                try linesize.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                                    try scale(
                                        source: source, sourceStrides: sourceStrides,
                                        sourceWidth: Int(f.width), sourceHeight: Int(f.height), sourceFormat: frame.pixelFormat,
                                        destination: (y.baseAddress!, u.baseAddress!, v.baseAddress!), destinationStrides: (width, cw, cw),
                                        width: width, height: height)
                                }
                            }
                        }
                    }
                }
            }
        }
        return output
    }

    /// Scales a picture given as plane pointers into I420 planes the caller owns.
    ///
    /// The pointers may point into the middle of larger pictures (a crop of the source, a
    /// rectangle of a canvas); the strides are the full pictures' row lengths.
    func scale(
        source: UnsafePointer<UnsafePointer<UInt8>?>, sourceStrides: UnsafePointer<Int32>,
        sourceWidth: Int, sourceHeight: Int, sourceFormat: AVPixelFormat,
        destination: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>),
        destinationStrides: (Int, Int, Int), width: Int, height: Int
    ) throws {
        context = sws_getCachedContext(
            context, Int32(sourceWidth), Int32(sourceHeight), sourceFormat,
            Int32(width), Int32(height), AV_PIX_FMT_YUV420P, flags, nil, nil, nil)
        guard let context else {
            throw CodecError.ffmpeg(
                liveroom_averror(EINVAL),
                "sws_getCachedContext(\(sourceWidth)x\(sourceHeight) format \(sourceFormat.rawValue) → \(width)x\(height))")
        }
        let planes: [UnsafeMutablePointer<UInt8>?] = [destination.0, destination.1, destination.2, nil]
        let strides: [Int32] = [Int32(destinationStrides.0), Int32(destinationStrides.1), Int32(destinationStrides.2), 0]
        let status = sws_scale(context, source, sourceStrides, 0, Int32(sourceHeight), planes, strides)
        guard status > 0 else { throw CodecError.ffmpeg(status, "sws_scale") }
    }
}
