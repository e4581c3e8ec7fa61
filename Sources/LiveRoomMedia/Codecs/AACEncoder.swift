import CFFmpeg

/// An AAC-LC encoder (libavcodec's native `aac`) for the CDN output of a mix.
///
/// Takes interleaved Int16 ``AudioFrame``s of any length at the encoder's sample rate and
/// channel count, buffers them, and emits one raw AAC frame per 1024 samples per
/// channel. The decoder configuration FLV and MP4 need is in ``audioSpecificConfig``.
///
/// Output `pts` is in samples at ``sampleRate``, continuing from the first input frame's
/// `pts`, minus the encoder's priming delay (``primingSamples``): if the first input is
/// stamped 0, the first AAC frame is stamped `-primingSamples`. Not thread-safe.
public final class AACEncoder {
    /// Samples per second per channel.
    public let sampleRate: Int
    /// Channels (1 or 2).
    public let channels: Int
    /// Target bitrate in kbit/s.
    public let bitrateKbps: Int
    /// Samples per channel in each AAC frame.
    public static let samplesPerFrame = 1024
    /// The MPEG-4 AudioSpecificConfig (ISO 14496-3 §1.6.2.1): FLV's AAC sequence header.
    public let audioSpecificConfig: [UInt8]
    /// Samples per channel of encoder delay at the start of the stream.
    public let primingSamples: Int

    private let context: FFmpegCodecContext
    private let frame: FFmpegFrame
    private let packet: FFmpegPacket
    private var fifo: [Int16] = []
    private var samplesSent: Int64 = 0
    private var startPTS: Int64?

    /// - Parameters:
    ///   - sampleRate: e.g. 44 100 or 48 000.
    ///   - channels: 1 or 2.
    ///   - bitrateKbps: e.g. 64 or 128.
    public init(sampleRate: Int = 48_000, channels: Int = 2, bitrateKbps: Int = 128) throws {
        guard sampleRate >= 8_000, sampleRate <= 96_000, channels == 1 || channels == 2, bitrateKbps >= 8 else {
            throw MediaFormatError("invalid AAC encoder settings \(sampleRate) Hz x \(channels), \(bitrateKbps) kbps")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrateKbps = bitrateKbps
        context = try FFmpegCodecContext(encoderNamed: "aac")
        let c = context.pointer
        c.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        c.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&c.pointee.ch_layout, Int32(channels))
        c.pointee.bit_rate = Int64(bitrateKbps) * 1000
        c.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        c.pointee.flags |= liveroom_av_codec_flag_global_header()
        c.pointee.profile = FF_PROFILE_AAC_LOW
        try context.open()
        guard let extradata = c.pointee.extradata, c.pointee.extradata_size > 0 else {
            throw MediaFormatError("AAC encoder gave no AudioSpecificConfig")
        }
        audioSpecificConfig = Array(UnsafeBufferPointer(start: extradata, count: Int(c.pointee.extradata_size)))
        primingSamples = Int(c.pointee.initial_padding)
        guard Int(c.pointee.frame_size) == Self.samplesPerFrame else {
            throw MediaFormatError("AAC encoder frame size \(c.pointee.frame_size), expected \(Self.samplesPerFrame)")
        }

        frame = try FFmpegFrame()
        frame.pointer.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.pointer.pointee.nb_samples = Int32(Self.samplesPerFrame)
        frame.pointer.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&frame.pointer.pointee.ch_layout, Int32(channels))
        let status = av_frame_get_buffer(frame.pointer, 0)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_frame_get_buffer(aac)") }
        packet = try FFmpegPacket()
    }

    /// Buffers `input` and encodes every complete 1024-sample block.
    /// - Throws: ``MediaFormatError`` if `input` has another rate or channel count.
    public func encode(_ input: AudioFrame) throws -> [EncodedAACFrame] {
        guard input.sampleRate == sampleRate, input.channels == channels else {
            throw MediaFormatError("audio is \(input.sampleRate) Hz x \(input.channels), AAC encoder is \(sampleRate) Hz x \(channels)")
        }
        if startPTS == nil { startPTS = input.pts }
        fifo += input.samples
        var output: [EncodedAACFrame] = []
        let block = Self.samplesPerFrame * channels
        var consumed = 0
        while fifo.count - consumed >= block {
            try sendBlock(fifo[consumed..<(consumed + block)])
            consumed += block
            try receive(into: &output)
        }
        fifo.removeFirst(consumed)
        return output
    }

    /// Encodes what is buffered (padded with silence) and drains the encoder; the
    /// encoder cannot be used afterwards.
    public func flush() throws -> [EncodedAACFrame] {
        var output: [EncodedAACFrame] = []
        if !fifo.isEmpty {
            let block = Self.samplesPerFrame * channels
            try sendBlock((fifo + [Int16](repeating: 0, count: block - fifo.count))[...])
            fifo.removeAll()
            try receive(into: &output)
        }
        try context.send(nil as FFmpegFrame?)
        try receive(into: &output)
        return output
    }

    private func sendBlock(_ block: ArraySlice<Int16>) throws {
        let status = av_frame_make_writable(frame.pointer)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_frame_make_writable(aac)") }
        let channels = self.channels
        let scale: Float = 1 / 32_768
        block.withUnsafeBufferPointer { samples in
            for channel in 0..<channels {
                let plane = UnsafeMutableRawPointer(frame.pointer.pointee.extended_data[channel]!).assumingMemoryBound(to: Float.self)
                for i in 0..<Self.samplesPerFrame {
                    plane[i] = Float(samples[i * channels + channel]) * scale
                }
            }
        }
        frame.pointer.pointee.pts = (startPTS ?? 0) + samplesSent
        samplesSent += Int64(Self.samplesPerFrame)
        try context.send(frame)
    }

    private func receive(into output: inout [EncodedAACFrame]) throws {
        while try context.receive(into: packet) == .got {
            let p = packet.pointer.pointee
            output.append(EncodedAACFrame(
                data: packet.bytes, pts: p.pts,
                duration: p.duration > 0 ? Int(p.duration) : Self.samplesPerFrame, sampleRate: sampleRate))
            packet.unref()
        }
    }
}
