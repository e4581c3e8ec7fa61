import CFFmpeg

/// Owns one `SwrContext`: converts audio of any layout, format and rate to interleaved
/// Int16 at a fixed rate and channel count. Rebuilt when the input changes.
final class FFmpegResampler {
    let outputRate: Int
    let outputChannels: Int
    private var context: OpaquePointer?
    private var input: (format: Int32, rate: Int32, channels: Int32)?

    init(outputRate: Int, outputChannels: Int) {
        self.outputRate = outputRate
        self.outputChannels = outputChannels
    }

    deinit { swr_free(&context) }

    /// Converts one decoded frame; may return fewer or more samples than it got, as the
    /// resampler buffers a little.
    func convert(_ frame: FFmpegFrame) throws -> [Int16] {
        let f = frame.pointer
        let key = (f.pointee.format, f.pointee.sample_rate, f.pointee.ch_layout.nb_channels)
        if input == nil || input! != key {
            var inLayout = AVChannelLayout()
            if f.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || av_channel_layout_check(&f.pointee.ch_layout) == 0 {
                av_channel_layout_default(&inLayout, max(1, f.pointee.ch_layout.nb_channels))
            } else {
                let status = av_channel_layout_copy(&inLayout, &f.pointee.ch_layout)
                guard status >= 0 else { throw CodecError.ffmpeg(status, "av_channel_layout_copy") }
            }
            defer { av_channel_layout_uninit(&inLayout) }
            try configure(format: AVSampleFormat(rawValue: f.pointee.format), rate: f.pointee.sample_rate, layout: &inLayout)
            input = key
        }
        let source = UnsafeMutableRawPointer(f.pointee.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
        return try run(source, count: Int(f.pointee.nb_samples))
    }

    /// Converts interleaved Int16 samples at `sampleRate` with `channels` channels (in
    /// the default layout for that count).
    func convert(interleaved samples: [Int16], sampleRate: Int, channels: Int) throws -> [Int16] {
        let key = (AV_SAMPLE_FMT_S16.rawValue, Int32(sampleRate), Int32(channels))
        if input == nil || input! != key {
            var inLayout = AVChannelLayout()
            av_channel_layout_default(&inLayout, Int32(channels))
            defer { av_channel_layout_uninit(&inLayout) }
            try configure(format: AV_SAMPLE_FMT_S16, rate: Int32(sampleRate), layout: &inLayout)
            input = key
        }
        return try samples.withUnsafeBytes { raw in
            var plane: UnsafePointer<UInt8>? = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return try run(&plane, count: samples.count / channels)
        }
    }

    private func run(_ source: UnsafeMutablePointer<UnsafePointer<UInt8>?>, count: Int) throws -> [Int16] {
        let capacity = Int(swr_get_out_samples(context, Int32(count))) + 32
        var samples = [Int16](repeating: 0, count: capacity * outputChannels)
        let produced = samples.withUnsafeMutableBytes { raw -> Int32 in
            var out: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return swr_convert(context, &out, Int32(capacity), source, Int32(count))
        }
        guard produced >= 0 else { throw CodecError.ffmpeg(produced, "swr_convert") }
        samples.removeSubrange((Int(produced) * outputChannels)...)
        return samples
    }

    private func configure(format: AVSampleFormat, rate: Int32, layout inLayout: UnsafeMutablePointer<AVChannelLayout>) throws {
        swr_free(&context)
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(outputChannels))
        defer { av_channel_layout_uninit(&outLayout) }
        var status = swr_alloc_set_opts2(
            &context, &outLayout, AV_SAMPLE_FMT_S16, Int32(outputRate),
            inLayout, format, rate, 0, nil)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "swr_alloc_set_opts2") }
        status = swr_init(context)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "swr_init") }
    }
}
