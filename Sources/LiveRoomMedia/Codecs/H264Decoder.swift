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
        var pictures: [VideoFrame] = []
        try decode(accessUnit, pts: pts) { pictures.append(try picture(pts: $0)) }
        return pictures
    }

    public func decode(_ frame: EncodedVideoFrame, into picture: inout VideoFrame?) throws -> Bool {
        var decoded = false
        var result = picture
        picture = nil
        defer { picture = result }
        try decode(frame.data, pts: frame.pts) { framePTS in
            if self.frame.isI420 {
                self.frame.replace(&result, pts: framePTS)
            } else {
                result = try self.picture(pts: framePTS)
            }
            decoded = true
        }
        return decoded
    }

    /// Decodes `accessUnit` and calls `body` with each picture's pts while ``frame`` holds it.
    private func decode(_ accessUnit: [UInt8], pts: Int64, _ body: (Int64) throws -> Void) throws {
        guard !accessUnit.isEmpty else { throw MediaFormatError("empty H.264 access unit") }
        try packet.fill(with: accessUnit)
        packet.pointer.pointee.pts = pts
        packet.pointer.pointee.dts = pts
        defer { packet.unref() }
        try context.send(packet)
        while try context.receive(into: frame) == .got {
            defer { frame.unref() }
            try body(frame.pointer.pointee.pts == liveroom_av_nopts_value() ? pts : frame.pointer.pointee.pts)
        }
    }

    /// A copy of the picture in ``frame``, converted to I420 when it is not.
    private func picture(pts: Int64) throws -> VideoFrame {
        if frame.isI420 { return frame.videoFrame(pts: pts) }
        let scaler = self.scaler ?? FFmpegScaler()
        self.scaler = scaler
        return try scaler.convert(frame, width: Int(frame.pointer.pointee.width), height: Int(frame.pointer.pointee.height), pts: pts)
    }
}
