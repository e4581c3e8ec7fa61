import CFFmpeg

extension VideoFrame {
    /// Decodes a still image (PNG, JPEG, or anything else libavformat's image demuxers and
    /// libavcodec decode) and converts it to I420 at its own size, for a watermark or a
    /// placeholder drawn with ``VideoCompositor/draw(_:crop:into:)``.
    ///
    /// Load the image once and draw the frame as often as needed. Transparency is not
    /// kept: transparent pixels take the colour their RGB values give.
    /// - Parameter path: the image file.
    /// - Parameter maxPixels: the largest picture to decode; a larger one is an error.
    public init(contentsOfImageFile path: String, maxPixels: Int = 4096 * 4096) throws {
        let demuxer = try FFmpegDemuxer(path: path)
        guard let index = demuxer.bestStream(AVMEDIA_TYPE_VIDEO) else {
            throw MediaFormatError("\(path) holds no image")
        }
        let stream = demuxer.stream(index)
        let decoder = try FFmpegCodecContext(decoderFor: stream.pointee.codecpar.pointee.codec_id)
        let status = avcodec_parameters_to_context(decoder.pointer, stream.pointee.codecpar)
        guard status >= 0 else { throw CodecError.ffmpeg(status, "avcodec_parameters_to_context(\(path))") }
        decoder.pointer.pointee.thread_count = 1
        decoder.pointer.pointee.max_pixels = Int64(maxPixels)
        try decoder.open()

        let packet = try FFmpegPacket()
        let picture = try FFmpegFrame()
        var draining = false
        while true {
            if !draining {
                if try demuxer.read(into: packet) {
                    defer { packet.unref() }
                    guard Int(packet.pointer.pointee.stream_index) == index else { continue }
                    try decoder.send(packet)
                } else {
                    try decoder.send(nil as FFmpegPacket?)
                    draining = true
                }
            }
            switch try decoder.receive(into: picture) {
            case .got:
                defer { picture.unref() }
                let width = Int(picture.pointer.pointee.width), height = Int(picture.pointer.pointee.height)
                self = try FFmpegScaler(flags: SWS_BICUBIC).convert(picture, width: width, height: height, pts: 0)
                return
            case .needsInput:
                continue
            case .endOfStream:
                throw MediaFormatError("\(path) decodes to no picture")
            }
        }
    }
}
