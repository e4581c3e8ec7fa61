import CFFmpeg

/// Owns one output `AVFormatContext` and its `AVIOContext`: an FLV (or other) muxer
/// writing to a file path or a network URL such as `rtmp://`, with every blocking call
/// bounded by an ``FFmpegInterrupt``.
///
/// Add the streams, ``open(options:)``, write packets, then ``finish()``. Timestamps are
/// given in milliseconds and rescaled to the streams' time bases.
final class FFmpegMuxer {
    let url: String
    private let context: UnsafeMutablePointer<AVFormatContext>
    private let interrupt: FFmpegInterrupt
    private let packet: FFmpegPacket
    private var opened = false
    private var headerWritten = false

    init(url: String, format: String, interrupt: FFmpegInterrupt) throws {
        self.url = url
        self.interrupt = interrupt
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        let status = avformat_alloc_output_context2(&context, nil, format, url)
        guard status >= 0, let context else { throw CodecError.ffmpeg(status, "avformat_alloc_output_context2(\(format), \(url))") }
        self.context = context
        _ = liveroom_set_interrupt_callback(context, { FFmpegInterrupt.check($0) }, interrupt.opaque)
        packet = try FFmpegPacket()
    }

    deinit {
        if context.pointee.pb != nil {
            interrupt.abort()  // closing must not wait on a dead peer
            avio_closep(&context.pointee.pb)
        }
        avformat_free_context(context)
    }

    /// Adds an H.264 stream; returns its index. `parameterSets` is the Annex B SPS and PPS
    /// (the muxer turns them into FLV's `avcC` sequence header).
    func addH264Stream(width: Int, height: Int, fps: Int, parameterSets: [UInt8]) throws -> Int32 {
        let stream = try newStream()
        let par = stream.pointee.codecpar!
        par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        par.pointee.codec_id = AV_CODEC_ID_H264
        par.pointee.width = Int32(width)
        par.pointee.height = Int32(height)
        par.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        stream.pointee.time_base = AVRational(num: 1, den: 1000)
        stream.pointee.avg_frame_rate = AVRational(num: Int32(fps), den: 1)
        try setCodecExtradata(par, parameterSets)
        return stream.pointee.index
    }

    /// Adds an AAC stream; returns its index.
    func addAACStream(sampleRate: Int, channels: Int, audioSpecificConfig: [UInt8]) throws -> Int32 {
        let stream = try newStream()
        let par = stream.pointee.codecpar!
        par.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        par.pointee.codec_id = AV_CODEC_ID_AAC
        par.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&par.pointee.ch_layout, Int32(channels))
        par.pointee.frame_size = Int32(AACEncoder.samplesPerFrame)
        stream.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        try setCodecExtradata(par, audioSpecificConfig)
        return stream.pointee.index
    }

    /// Opens the URL (connecting and, for RTMP, handshaking and publishing) and writes the
    /// header. Bounded by the interrupt's current deadline. `protocolOptions` go to the
    /// protocols (`rtmp_tcurl`, TLS's `tls_verify`…), `options` to the muxer.
    func open(options: [String: String] = [:], protocolOptions: [String: String] = [:]) throws {
        if context.pointee.oformat.pointee.flags & liveroom_avfmt_flag_nofile() == 0 {
            var protocolDictionary: OpaquePointer? = nil
            defer { av_dict_free(&protocolDictionary) }
            for (key, value) in protocolOptions { av_dict_set(&protocolDictionary, key, value, 0) }
            let status = avio_open2(&context.pointee.pb, url, AVIO_FLAG_WRITE, &context.pointee.interrupt_callback, &protocolDictionary)
            guard status >= 0 else { throw CodecError.ffmpeg(status, "avio_open2(\(url))" + Self.interruptedNote(status)) }
        }
        opened = true
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        let status = avformat_write_header(context, &dictionary)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avformat_write_header(\(url))" + Self.interruptedNote(status)) }
        headerWritten = true
    }

    /// Writes one packet now (no interleaving buffer: the caller sends in time order).
    /// `newExtradata` replaces the stream's codec configuration from this packet on (FLV
    /// writes a new sequence header before it).
    func write(_ data: [UInt8], stream: Int32, dtsMilliseconds: Int64, ptsMilliseconds: Int64, keyframe: Bool, newExtradata: [UInt8]? = nil) throws {
        guard headerWritten else { throw MediaFormatError("muxer for \(url) is not open") }
        guard !data.isEmpty else { throw MediaFormatError("empty packet") }
        try packet.fill(with: data)
        let p = packet.pointer
        if let newExtradata, !newExtradata.isEmpty {
            guard let side = av_packet_new_side_data(p, AV_PKT_DATA_NEW_EXTRADATA, newExtradata.count) else {
                packet.unref()
                throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "av_packet_new_side_data")
            }
            side.update(from: newExtradata, count: newExtradata.count)
        }
        let timeBase = context.pointee.streams[Int(stream)]!.pointee.time_base
        let milliseconds = AVRational(num: 1, den: 1000)
        p.pointee.dts = av_rescale_q(dtsMilliseconds, milliseconds, timeBase)
        p.pointee.pts = av_rescale_q(ptsMilliseconds, milliseconds, timeBase)
        p.pointee.stream_index = stream
        p.pointee.flags = keyframe ? AV_PKT_FLAG_KEY : 0
        let status = av_write_frame(context, p)
        packet.unref()
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_write_frame(\(url))" + Self.interruptedNote(status)) }
        // av_write_frame leaves data in the AVIO buffer; push it out so a live viewer gets it now.
        avio_flush(context.pointee.pb)
        if let pb = context.pointee.pb, pb.pointee.error < 0 {
            throw CodecError.ffmpeg(pb.pointee.error, "avio_flush(\(url))")
        }
    }

    /// Writes the trailer (if the header was written) and closes the output.
    func finish() throws {
        defer { headerWritten = false }
        var status: Int32 = 0
        if headerWritten { status = av_write_trailer(context) }
        if context.pointee.pb != nil {
            let closed = avio_closep(&context.pointee.pb)
            if status >= 0 && closed < 0 { status = closed }
        }
        guard status >= 0 else { throw CodecError.ffmpeg(status, "av_write_trailer(\(url))") }
    }

    /// `AVERROR_EXIT` means the interrupt callback ended the call: a deadline or an abort.
    private static func interruptedNote(_ status: Int32) -> String {
        status == liveroom_averror_exit() ? " (interrupted: timed out or aborted)" : ""
    }

    private func newStream() throws -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "avformat_new_stream")
        }
        return stream
    }

}
