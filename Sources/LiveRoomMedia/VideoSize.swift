import LiveRoomWire
import NIOCore

/// A picture size in pixels.
public struct VideoSize: Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Reads the picture size from an encoded key frame: the VP8 key frame header, or the
    /// SPS inside an H.264 Annex B access unit. Throws ``BitstreamError`` if there is none.
    public init(keyframe: [UInt8], codec: VideoCodec) throws {
        switch codec {
        case .vp8:
            let header: VP8FrameHeader
            do {
                header = try VP8FrameHeader.parse(ByteBuffer(bytes: keyframe))
            } catch {
                throw BitstreamError(error.message)
            }
            guard let width = header.width, let height = header.height else {
                throw BitstreamError("VP8 inter frame carries no picture size")
            }
            self.init(width: Int(width), height: Int(height))
        case .h264:
            let sps = try H264SequenceParameterSet(annexB: keyframe)
            self.init(width: sps.width, height: sps.height)
        }
    }

    public var description: String { "\(width)x\(height)" }
}
