import CFFmpeg
import LiveRoomWire

/// An H.264 decoder (libavcodec's native `h264`) taking Annex B access units and
/// producing I420 frames, in low-delay mode: one access unit in, its picture out.
///
/// Streams that decode to another pixel format (4:2:2, 10-bit) are converted to I420.
/// The output `pts` is the input access unit's.
public final class H264Decoder: VideoDecoding {
    /// Always ``VideoCodec/h264``.
    public var codec: VideoCodec { .h264 }
    private let context: FFmpegCodecContext
    private let packet: FFmpegPacket
    private let frame: FFmpegFrame
    private var scaler: FFmpegScaler?

    public init() throws {
        context = try FFmpegCodecContext(decoderFor: AV_CODEC_ID_H264)
        context.pointer.pointee.thread_count = 1  // frame threads would add a frame of delay
        context.pointer.pointee.flags |= AV_CODEC_FLAG_LOW_DELAY
        context.pointer.pointee.pkt_timebase = AVRational(num: 1, den: 90_000)
        av_log_set_level(AV_LOG_ERROR)
        try context.open()
        packet = try FFmpegPacket()
        frame = try FFmpegFrame()
    }

    public func decode(_ frame: EncodedVideoFrame) throws -> [VideoFrame] {
        try decode(frame.data, pts: frame.pts)
    }

    /// Decodes one Annex B access unit.
    public func decode(_ accessUnit: [UInt8], pts: Int64) throws -> [VideoFrame] {
        guard !accessUnit.isEmpty else { throw MediaFormatError("empty H.264 access unit") }
        try packet.fill(with: accessUnit)
        packet.pointer.pointee.pts = pts
        packet.pointer.pointee.dts = pts
        defer { packet.unref() }
        try context.send(packet)
        var pictures: [VideoFrame] = []
        while try context.receive(into: frame) == .got {
            defer { frame.unref() }
            let framePTS = frame.pointer.pointee.pts == liveroom_av_nopts_value() ? pts : frame.pointer.pointee.pts
            if frame.isI420 {
                pictures.append(frame.videoFrame(pts: framePTS))
            } else {
                let scaler = self.scaler ?? FFmpegScaler()
                self.scaler = scaler
                pictures.append(try scaler.convert(frame, width: Int(frame.pointer.pointee.width), height: Int(frame.pointer.pointee.height), pts: framePTS))
            }
        }
        return pictures
    }
}
