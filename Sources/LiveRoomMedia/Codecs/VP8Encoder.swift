import CVPX
import LiveRoomWire

/// A libvpx VP8 encoder with real-time settings: CBR, no lag, `deadline` realtime,
/// cpu-used 8, error resilient, one token partition, and a key frame at least every
/// `keyframeInterval` seconds.
///
/// Frames must have the size the encoder was opened with. `pts` passes through in 90 kHz.
public final class VP8Encoder: VideoEncoding {
    /// Always ``VideoCodec/vp8``.
    public var codec: VideoCodec { .vp8 }
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Frames per second; sets the `pts` step and rate control.
    public let fps: Int
    /// Target bitrate in kbit/s.
    public let bitrateKbps: Int

    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private let image: UnsafeMutablePointer<vpx_image_t>

    /// - Parameters:
    ///   - keyframeInterval: longest time between key frames, in seconds.
    ///   - threads: encoder threads; 1 keeps one core free for the rest of the process.
    public init(width: Int, height: Int, fps: Int, bitrateKbps: Int, keyframeInterval: Int = 3, threads: Int = 1) throws {
        guard width > 0, width <= 16383, height > 0, height <= 16383, fps > 0, bitrateKbps > 0, keyframeInterval > 0, threads > 0 else {
            throw MediaFormatError("invalid VP8 encoder settings \(width)x\(height)@\(fps) \(bitrateKbps) kbps")
        }
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrateKbps = bitrateKbps

        var cfg = vpx_codec_enc_cfg_t()
        var status = liveroom_vpx_enc_config_default_vp8(&cfg)
        guard status == VPX_CODEC_OK else { throw CodecError.vpx(status, context: nil, "vpx_codec_enc_config_default") }
        cfg.g_w = UInt32(width)
        cfg.g_h = UInt32(height)
        cfg.g_timebase = vpx_rational(num: 1, den: 90_000)
        cfg.g_threads = UInt32(threads)
        cfg.g_lag_in_frames = 0
        cfg.g_error_resilient = vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT)
        cfg.g_pass = VPX_RC_ONE_PASS
        cfg.rc_end_usage = VPX_CBR
        cfg.rc_target_bitrate = UInt32(bitrateKbps)
        cfg.rc_min_quantizer = 2
        cfg.rc_max_quantizer = 56
        cfg.rc_undershoot_pct = 100
        cfg.rc_overshoot_pct = 15
        cfg.rc_buf_initial_sz = 500
        cfg.rc_buf_optimal_sz = 600
        cfg.rc_buf_sz = 1000
        cfg.rc_dropframe_thresh = 0  // every input frame produces output
        cfg.kf_mode = VPX_KF_AUTO
        cfg.kf_min_dist = 0
        cfg.kf_max_dist = UInt32(fps * keyframeInterval)

        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        status = liveroom_vpx_enc_init_vp8(context, &cfg, 0)
        guard status == VPX_CODEC_OK else {
            let error = CodecError.vpx(status, context: context, "vpx_codec_enc_init(vp8)")
            context.deallocate()
            throw error
        }
        // Token partitions stay at libvpx's default of one (VP8_ONE_TOKENPARTITION).
        status = liveroom_vpx_set_cpuused(context, 8)
        guard status == VPX_CODEC_OK, let image = vpx_img_alloc(nil, VPX_IMG_FMT_I420, UInt32(width), UInt32(height), 16) else {
            let error = CodecError.vpx(status, context: context, "vpx_codec_control(VP8E_SET_CPUUSED) / vpx_img_alloc")
            vpx_codec_destroy(context)
            context.deallocate()
            throw error
        }
        self.image = image
    }

    deinit {
        vpx_img_free(image)
        vpx_codec_destroy(context)
        context.deallocate()
    }

    public func encode(_ frame: VideoFrame, forceKeyframe: Bool = false) throws -> [EncodedVideoFrame] {
        guard frame.width == width, frame.height == height else {
            throw MediaFormatError("frame is \(frame.width)x\(frame.height), VP8 encoder is \(width)x\(height)")
        }
        let img = image.pointee
        frame.copyPlanes(
            toY: img.planes.0!, yStride: Int(img.stride.0),
            u: img.planes.1!, uStride: Int(img.stride.1),
            v: img.planes.2!, vStride: Int(img.stride.2))
        let flags = forceKeyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        let duration = UInt(max(1, 90_000 / fps))
        let status = vpx_codec_encode(context, image, vpx_codec_pts_t(frame.pts), duration, flags, UInt(VPX_DL_REALTIME))
        guard status == VPX_CODEC_OK else { throw CodecError.vpx(status, context: context, "vpx_codec_encode") }

        var output: [EncodedVideoFrame] = []
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let data = packet.pointee.data.frame
            output.append(EncodedVideoFrame(
                codec: .vp8,
                data: Array(UnsafeRawBufferPointer(start: data.buf, count: data.sz)),
                isKeyframe: liveroom_vpx_packet_is_keyframe(packet) != 0,
                pts: Int64(data.pts)))
        }
        return output
    }
}
