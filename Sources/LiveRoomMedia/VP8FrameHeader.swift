/// The uncompressed header of a VP8 frame (RFC 6386 §9.1): the 3-byte frame tag and, for
/// key frames, the start code and the picture size.
///
/// Parsing is total: short or malformed input throws ``BitstreamError``.
public struct VP8FrameHeader: Sendable, Equatable {
    /// Whether this is a key frame (frame tag bit 0 clear).
    public var isKeyframe: Bool
    /// Bitstream version, 0...3.
    public var version: Int
    /// Whether the decoder should display the frame.
    public var showFrame: Bool
    /// Size of the first partition in bytes.
    public var firstPartitionSize: Int
    /// Picture width; key frames only.
    public var width: Int?
    /// Picture height; key frames only.
    public var height: Int?
    /// Upscaling hints (0...3); key frames only.
    public var horizontalScale: Int?
    /// Vertical upscaling hint (0...3); key frames only.
    public var verticalScale: Int?

    public init<Bytes: Collection<UInt8>>(_ frame: Bytes) throws {
        let b = Array(frame.prefix(10))
        guard b.count >= 3 else { throw BitstreamError("VP8 frame of \(b.count) bytes has no frame tag") }
        let tag = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16
        isKeyframe = tag & 1 == 0
        version = Int((tag >> 1) & 7)
        showFrame = (tag >> 4) & 1 == 1
        firstPartitionSize = Int(tag >> 5)
        guard version <= 3 else { throw BitstreamError("VP8 version \(version) is not 0...3") }
        guard isKeyframe else { return }
        guard b.count >= 10 else { throw BitstreamError("VP8 key frame of \(b.count) bytes is shorter than its 10-byte header") }
        guard b[3] == 0x9D, b[4] == 0x01, b[5] == 0x2A else {
            throw BitstreamError("VP8 key frame start code is \(b[3...5].map { String($0, radix: 16) }), not 9d 01 2a")
        }
        let w = UInt16(b[6]) | UInt16(b[7]) << 8, h = UInt16(b[8]) | UInt16(b[9]) << 8
        width = Int(w & 0x3FFF)
        height = Int(h & 0x3FFF)
        horizontalScale = Int(w >> 14)
        verticalScale = Int(h >> 14)
        guard width != 0, height != 0 else { throw BitstreamError("VP8 key frame has size \(width!)x\(height!)") }
    }
}
