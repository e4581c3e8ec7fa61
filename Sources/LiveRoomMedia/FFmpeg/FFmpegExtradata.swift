import CFFmpeg

/// Replaces a stream's codec extradata (SPS/PPS, AudioSpecificConfig, OpusHead) with a copy of
/// `bytes` in memory libavformat owns, padded as FFmpeg requires.
func setCodecExtradata(_ par: UnsafeMutablePointer<AVCodecParameters>, _ bytes: [UInt8]) throws {
    av_freep(&par.pointee.extradata)
    guard let buffer = av_mallocz(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
        throw CodecError.ffmpeg(liveroom_averror(ENOMEM), "av_mallocz(extradata)")
    }
    let typed = buffer.assumingMemoryBound(to: UInt8.self)
    bytes.withUnsafeBufferPointer { typed.update(from: $0.baseAddress!, count: bytes.count) }
    par.pointee.extradata = typed
    par.pointee.extradata_size = Int32(bytes.count)
}
