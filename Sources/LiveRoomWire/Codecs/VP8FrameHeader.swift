import NIOCore

/// The uncompressed header at the start of a VP8 frame (RFC 6386 §9.1, RFC 7741 §4.3).
public struct VP8FrameHeader: Hashable, Sendable {
    /// Whether this is a keyframe (P bit clear).
    public var isKeyframe: Bool
    /// The version (profile) field, 0–3.
    public var version: UInt8
    /// Whether the frame is meant to be shown.
    public var showFrame: Bool
    /// Size of the first partition in bytes (19 bits).
    public var firstPartitionSize: UInt32
    /// Width and height (14 bits each) for keyframes, scaling bits dropped.
    public var width: UInt16?
    /// The frame height for keyframes.
    public var height: UInt16?
    /// Upscaling hints (0–3) for keyframes, from the top bits of the width and height fields.
    public var horizontalScale: UInt8?
    public var verticalScale: UInt8?

    /// Parses the start of a VP8 frame (the data of a packet that ``VP8RTPPayload/startsFrame``).
    public static func parse(_ frame: ByteBuffer) throws(WireError) -> VP8FrameHeader {
        var frame = frame
        let b0 = try frame.readWireInteger(as: UInt8.self, "VP8 frame tag")
        let b1 = try frame.readWireInteger(as: UInt8.self, "VP8 frame tag")
        let b2 = try frame.readWireInteger(as: UInt8.self, "VP8 frame tag")
        let tag = UInt32(b0) | UInt32(b1) << 8 | UInt32(b2) << 16
        var header = VP8FrameHeader(
            isKeyframe: tag & 0x1 == 0, version: UInt8((tag >> 1) & 0x7), showFrame: (tag >> 4) & 0x1 == 1,
            firstPartitionSize: tag >> 5, width: nil, height: nil)
        guard header.version <= 3 else { throw .malformed("VP8 version \(header.version) is not 0–3") }
        if header.isKeyframe {
            let startCode = try frame.readWireBytes(length: 3, "VP8 keyframe start code")
            guard startCode == [0x9D, 0x01, 0x2A] else { throw .malformed("VP8 keyframe start code is not 9d 01 2a") }
            let width = try frame.readWireInteger(as: UInt16.self, "VP8 width").byteSwapped
            let height = try frame.readWireInteger(as: UInt16.self, "VP8 height").byteSwapped
            header.width = width & 0x3FFF
            header.height = height & 0x3FFF
            header.horizontalScale = UInt8(width >> 14)
            header.verticalScale = UInt8(height >> 14)
            guard header.width != 0, header.height != 0 else { throw .malformed("VP8 keyframe has a zero width or height") }
        }
        return header
    }
}
