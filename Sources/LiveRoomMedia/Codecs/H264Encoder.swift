import CFFmpeg
import LiveRoomWire

/// An H.264 encoder (libx264 through libavcodec) for real-time streaming: ultrafast preset,
/// zerolatency tune, constrained baseline profile (no B-frames, CAVLC), CBR-like VBV, and
/// Annex B output with SPS/PPS repeated before every IDR so a receiver can start at any
/// key frame.
///
/// Frames must have the size the encoder was opened with. `pts` passes through in 90 kHz.
///
/// For containers that want the parameter sets out of band (FLV's `avcC` sequence header,
/// MP4), open it with `globalHeader: true`: ``parameterSets`` then holds the SPS and PPS
/// from the start. They are still repeated in band before every IDR.
public final class H264Encoder: VideoEncoding {
    /// Always ``VideoCodec/h264``.
    public var codec: VideoCodec { .h264 }
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Frames per second; sets the `pts` step and rate control.
    public let fps: Int
    /// Target bitrate in kbit/s.
    public private(set) var bitrateKbps: Int
    /// Frames between IDR pictures.
    public let gopFrames: Int
    /// The SPS and PPS in Annex B form, when the encoder was opened with `globalHeader`.
    public let parameterSets: [UInt8]?

    private let context: FFmpegCodecContext
    private let frame: FFmpegFrame
    private let packet: FFmpegPacket

    /// - Parameters:
    ///   - gopFrames: IDR interval in frames; defaults to 2 s.
    ///   - threads: libx264 threads; 1 keeps one core free for the rest of the process.
    ///   - globalHeader: also put the SPS and PPS in ``parameterSets`` (libavcodec's global
    ///     header mode), for FLV and MP4 output.
    public init(width: Int, height: Int, fps: Int, bitrateKbps: Int, gopFrames: Int? = nil, threads: Int = 1, globalHeader: Bool = false) throws {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0, fps > 0, bitrateKbps > 0, threads > 0 else {
            throw MediaFormatError("invalid H.264 encoder settings \(width)x\(height)@\(fps) \(bitrateKbps) kbps (sizes must be even)")
        }
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrateKbps = bitrateKbps
        self.gopFrames = gopFrames ?? 2 * fps
        guard self.gopFrames > 0 else { throw MediaFormatError("GOP must be at least one frame") }

        context = try FFmpegCodecContext(encoderNamed: "libx264")
        let c = context.pointer
        c.pointee.width = Int32(width)
        c.pointee.height = Int32(height)
        c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        c.pointee.time_base = AVRational(num: 1, den: 90_000)
        c.pointee.framerate = AVRational(num: Int32(fps), den: 1)
        c.pointee.gop_size = Int32(self.gopFrames)
        c.pointee.max_b_frames = 0
        c.pointee.bit_rate = Int64(bitrateKbps) * 1000
        c.pointee.rc_max_rate = Int64(bitrateKbps) * 1000
        c.pointee.rc_buffer_size = Int32(bitrateKbps * 1000)  // one second of VBV
        c.pointee.thread_count = Int32(threads)
        if globalHeader { c.pointee.flags |= liveroom_av_codec_flag_global_header() }
        av_log_set_level(AV_LOG_ERROR)  // keep libx264's banner out of logs
        try context.open(options: [
            "preset": "ultrafast",
            "tune": "zerolatency",
            "profile": "baseline",
            "forced-idr": "1",
            "x264-params": "repeat-headers=1:annexb=1:keyint-min=\(self.gopFrames):scenecut=0",
        ])

        if globalHeader {
            guard let extradata = c.pointee.extradata, c.pointee.extradata_size > 0,
                let sets = AnnexB.parameterSets(in: Array(UnsafeBufferPointer(start: extradata, count: Int(c.pointee.extradata_size))))
            else { throw MediaFormatError("libx264 gave no SPS/PPS in global header mode") }
            parameterSets = sets
        } else {
            parameterSets = nil
        }

        frame = try FFmpegFrame()
        try frame.allocateI420(width: width, height: height)
        packet = try FFmpegPacket()
    }

    /// An encoder for a mix's CDN output, with the IDR interval in whole seconds.
    /// - Parameters:
    ///   - gopSeconds: seconds between IDR pictures (CDNs want 1–4).
    ///   - globalHeader: see ``init(width:height:fps:bitrateKbps:gopFrames:threads:globalHeader:)``.
    public convenience init(width: Int, height: Int, fps: Int, bitrateKbps: Int, gopSeconds: Int, threads: Int = 1, globalHeader: Bool = false) throws {
        guard gopSeconds > 0 else { throw MediaFormatError("GOP must be at least one second, got \(gopSeconds)") }
        try self.init(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps, gopFrames: gopSeconds * fps, threads: threads, globalHeader: globalHeader)
    }

    /// Changes the bitrate from the next frame on (libx264 reconfigures its rate control
    /// without a new keyframe or new parameter sets).
    public func setBitrate(kbps: Int) {
        guard kbps > 0 else { return }
        bitrateKbps = kbps
        context.pointer.pointee.bit_rate = Int64(kbps) * 1000
        context.pointer.pointee.rc_max_rate = Int64(kbps) * 1000
        context.pointer.pointee.rc_buffer_size = Int32(kbps * 1000)
    }

    public func encode(_ input: VideoFrame, forceKeyframe: Bool = false) throws -> [EncodedVideoFrame] {
        guard input.width == width, input.height == height else {
            throw MediaFormatError("frame is \(input.width)x\(input.height), H.264 encoder is \(width)x\(height)")
        }
        try frame.fill(with: input)
        frame.pointer.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try context.send(frame)
        var output: [EncodedVideoFrame] = []
        while try context.receive(into: packet) == .got {
            output.append(EncodedVideoFrame(codec: .h264, data: packet.bytes, isKeyframe: packet.isKeyframe, pts: packet.pointer.pointee.pts))
            packet.unref()
        }
        return output
    }
}
