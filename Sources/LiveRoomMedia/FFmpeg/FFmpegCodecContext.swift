import CFFmpeg

/// Owns one `AVCodecContext`, an encoder or a decoder, and wraps the send/receive calls.
final class FFmpegCodecContext {
    let pointer: UnsafeMutablePointer<AVCodecContext>
    private let codec: UnsafePointer<AVCodec>
    let name: String

    /// What a receive call found.
    enum Receive { case got, needsInput, endOfStream }

    private init(codec: UnsafePointer<AVCodec>) throws {
        self.codec = codec
        name = String(cString: codec.pointee.name)
        guard let context = avcodec_alloc_context3(codec) else {
            throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "avcodec_alloc_context3(\(name))")
        }
        pointer = context
    }

    /// An encoder found by name, e.g. `libx264`.
    convenience init(encoderNamed name: String) throws {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw CodecError.ffmpeg(liveroom_averror(ENOENT), "avcodec_find_encoder_by_name(\(name))")
        }
        try self.init(codec: codec)
    }

    /// A decoder for a codec id.
    convenience init(decoderFor id: AVCodecID) throws {
        guard let codec = avcodec_find_decoder(id) else {
            throw CodecError.ffmpeg(liveroom_averror(ENOENT), "avcodec_find_decoder(\(String(cString: avcodec_get_name(id))))")
        }
        try self.init(codec: codec)
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&context)
    }

    /// Opens the codec after the caller has set the context fields; `options` go to the
    /// codec's private options (e.g. libx264's `preset`).
    func open(options: KeyValuePairs<String, String> = [:]) throws {
        for (key, value) in options {
            let status = av_opt_set(pointer.pointee.priv_data, key, value, 0)
            guard status >= 0 else { throw CodecError.ffmpeg(status, "av_opt_set(\(name), \(key)=\(value))") }
        }
        let status = avcodec_open2(pointer, codec, nil)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avcodec_open2(\(name))") }
    }

    /// Sends a frame to an encoder, or nil to start draining.
    func send(_ frame: FFmpegFrame?) throws {
        let status = avcodec_send_frame(pointer, frame?.pointer)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avcodec_send_frame(\(name))") }
    }

    /// Sends a packet to a decoder, or nil to start draining.
    func send(_ packet: FFmpegPacket?) throws {
        let status = avcodec_send_packet(pointer, packet?.pointer)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avcodec_send_packet(\(name))") }
    }

    func receive(into packet: FFmpegPacket) throws -> Receive {
        try interpret(avcodec_receive_packet(pointer, packet.pointer), "avcodec_receive_packet")
    }

    func receive(into frame: FFmpegFrame) throws -> Receive {
        try interpret(avcodec_receive_frame(pointer, frame.pointer), "avcodec_receive_frame")
    }

    /// Resets a decoder after draining or a seek.
    func flush() { avcodec_flush_buffers(pointer) }

    private func interpret(_ status: Int32, _ call: String) throws -> Receive {
        if status >= 0 { return .got }
        if status == liveroom_averror_eagain() { return .needsInput }
        if status == liveroom_averror_eof() { return .endOfStream }
        throw CodecError.ffmpeg(status, "\(call)(\(name))")
    }
}
