import NIOCore

/// Annex B byte streams: NAL units separated by 00 00 01 / 00 00 00 01 start codes.
public enum H264AnnexB {
    /// The 4-byte start code written by ``join(_:)``.
    public static let startCode: [UInt8] = [0, 0, 0, 1]

    /// Splits an Annex B byte stream into NAL units (without start codes and without
    /// trailing zero bytes). Throws if the stream does not begin with a start code
    /// (leading zero bytes are allowed) or contains an empty NAL unit only.
    public static func split(_ stream: ByteBuffer) throws(WireError) -> [ByteBuffer] {
        let view = stream.readableBytesView
        let count = view.count
        var starts: [(codeStart: Int, nalStart: Int)] = []
        var zeros = 0
        var index = 0
        // Find every 00 00 01; the NAL ends where the zeros before the next code begin.
        for byte in view {
            if byte == 0 {
                zeros += 1
            } else {
                if byte == 1 && zeros >= 2 {
                    starts.append((index - min(zeros, 3), index + 1))
                }
                zeros = 0
            }
            index += 1
        }
        guard let first = starts.first else { throw .malformed("H.264 Annex B stream has no start code") }
        // Only zero bytes may precede the first start code.
        guard view.prefix(first.codeStart).allSatisfy({ $0 == 0 }) else {
            throw .malformed("H.264 Annex B stream has data before the first start code")
        }
        var units: [ByteBuffer] = []
        for (position, start) in starts.enumerated() {
            var end = position + 1 < starts.count ? starts[position + 1].codeStart : count
            // Strip trailing_zero_8bits.
            while end > start.nalStart && view[view.startIndex + end - 1] == 0 { end -= 1 }
            guard end > start.nalStart else { continue }
            units.append(stream.getSlice(at: stream.readerIndex + start.nalStart, length: end - start.nalStart)!)
        }
        guard !units.isEmpty else { throw .malformed("H.264 Annex B stream holds no NAL unit") }
        return units
    }

    /// Joins NAL units into an Annex B stream with 4-byte start codes.
    public static func join(_ nalUnits: [ByteBuffer]) -> ByteBuffer {
        var stream = ByteBuffer()
        stream.reserveCapacity(nalUnits.reduce(0) { $0 + $1.readableBytes + 4 })
        for var unit in nalUnits {
            stream.writeBytes(startCode)
            stream.writeBuffer(&unit)
        }
        return stream
    }
}
