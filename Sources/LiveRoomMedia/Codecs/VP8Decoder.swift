import CVPX
import LiveRoomWire

/// A libvpx VP8 decoder producing I420 frames. The output `pts` is the input frame's.
public final class VP8Decoder: VideoDecoding {
    /// Always ``VideoCodec/vp8``.
    public var codec: VideoCodec { .vp8 }
    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>

    public init() throws {
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        let status = liveroom_vpx_dec_init_vp8(context)
        guard status == VPX_CODEC_OK else {
            let error = CodecError.vpx(status, context: context, "vpx_codec_dec_init(vp8)")
            context.deallocate()
            throw error
        }
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
    }

    public func decode(_ frame: EncodedVideoFrame) throws -> [VideoFrame] {
        try decode(frame.data, pts: frame.pts)
    }

    /// Decodes one VP8 frame.
    public func decode(_ data: [UInt8], pts: Int64) throws -> [VideoFrame] {
        var pictures: [VideoFrame] = []
        try decode(data) { img in
            pictures.append(VideoFrame(
                width: Int(img.d_w), height: Int(img.d_h), pts: pts,
                yPlane: img.planes.0!, yStride: Int(img.stride.0),
                uPlane: img.planes.1!, uStride: Int(img.stride.1),
                vPlane: img.planes.2!, vStride: Int(img.stride.2)))
        }
        return pictures
    }

    public func decode(_ frame: EncodedVideoFrame, into picture: inout VideoFrame?) throws -> Bool {
        var last: vpx_image_t?
        try decode(frame.data) { last = $0 }
        guard let img = last else { return false }
        VideoFrame.replace(
            &picture, width: Int(img.d_w), height: Int(img.d_h), pts: frame.pts,
            yPlane: img.planes.0!, yStride: Int(img.stride.0),
            uPlane: img.planes.1!, uStride: Int(img.stride.1),
            vPlane: img.planes.2!, vStride: Int(img.stride.2))
        return true
    }

    /// Decodes `data` and hands each image it completes to `body`; the images stay valid
    /// until the next decode.
    private func decode(_ data: [UInt8], _ body: (vpx_image_t) -> Void) throws {
        guard !data.isEmpty else { throw MediaFormatError("empty VP8 frame") }
        let status = vpx_codec_decode(context, data, UInt32(data.count), nil, 0)
        guard status == VPX_CODEC_OK else { throw CodecError.vpx(status, context: context, "vpx_codec_decode") }
        var iterator: vpx_codec_iter_t? = nil
        while let image = vpx_codec_get_frame(context, &iterator) {
            let img = image.pointee
            guard img.fmt == VPX_IMG_FMT_I420 else {
                throw MediaFormatError("VP8 decoder produced image format \(img.fmt.rawValue), not I420")
            }
            body(img)
        }
    }
}
