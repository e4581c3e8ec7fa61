import NIOCore

/// An RTP packet (RFC 3550): header, payload and padding.
public struct RTPPacket: Hashable, Sendable {
    /// The header.
    public var header: RTPHeader
    /// The payload, a slice of the parsed buffer (no copy), without padding.
    public var payload: ByteBuffer
    /// Number of padding bytes including the final count byte; 0 if the P bit is clear.
    public var paddingLength: UInt8

    /// Creates a packet.
    public init(header: RTPHeader, payload: ByteBuffer, paddingLength: UInt8 = 0) {
        self.header = header
        self.payload = payload
        self.paddingLength = paddingLength
    }

    /// Parses the readable bytes of `buffer` as one RTP packet.
    public static func parse(_ buffer: ByteBuffer) throws(WireError) -> RTPPacket {
        var buffer = buffer
        let (header, padding) = try RTPHeader.read(from: &buffer)
        var paddingLength: UInt8 = 0
        if padding {
            guard let count = buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self), buffer.readableBytes > 0 else {
                throw .truncated("RTP packet has the P bit but no padding count")
            }
            guard count > 0, Int(count) <= buffer.readableBytes else {
                throw .malformed("RTP padding count \(count) with \(buffer.readableBytes) bytes after the header")
            }
            paddingLength = count
        }
        let payload = try buffer.readWireSlice(length: buffer.readableBytes - Int(paddingLength), "RTP payload")
        return RTPPacket(header: header, payload: payload, paddingLength: paddingLength)
    }

    /// Serializes the packet; padding bytes are written as zeros followed by the count.
    public func serialize() throws(WireError) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(12 + header.csrcs.count * 4 + payload.readableBytes + Int(paddingLength) + 32)
        try serialize(into: &buffer)
        return buffer
    }

    /// Appends the serialized packet to `buffer`.
    public func serialize(into buffer: inout ByteBuffer) throws(WireError) {
        try header.write(into: &buffer, padding: paddingLength > 0)
        var payload = self.payload
        buffer.writeBuffer(&payload)
        if paddingLength > 0 {
            buffer.writeZeros(Int(paddingLength) - 1)
            buffer.writeInteger(paddingLength)
        }
    }
}
