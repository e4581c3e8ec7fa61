import NIOCore

/// A VP8 RTP payload: descriptor plus VP8 bitstream bytes (RFC 7741 §4).
public struct VP8RTPPayload: Hashable, Sendable {
    /// The payload descriptor.
    public var descriptor: VP8PayloadDescriptor
    /// The VP8 bitstream bytes that follow the descriptor.
    public var data: ByteBuffer

    /// Creates a payload.
    public init(descriptor: VP8PayloadDescriptor, data: ByteBuffer) {
        self.descriptor = descriptor
        self.data = data
    }

    /// Parses an RTP payload. An empty VP8 part is rejected.
    public static func parse(_ payload: ByteBuffer) throws(WireError) -> VP8RTPPayload {
        var payload = payload
        let descriptor = try VP8PayloadDescriptor.read(from: &payload)
        guard payload.readableBytes > 0 else { throw .truncated("VP8 RTP payload has a descriptor but no data") }
        return VP8RTPPayload(descriptor: descriptor, data: payload)
    }

    /// Whether this packet starts a VP8 frame (S=1 and partition 0).
    public var startsFrame: Bool {
        descriptor.startOfPartition && descriptor.partitionIndex == 0
    }

    /// Whether this packet starts a keyframe: it starts a frame and the VP8 payload
    /// header's P bit (inverse key frame flag) is 0.
    public var startsKeyframe: Bool {
        guard startsFrame, let first = data.getInteger(at: data.readerIndex, as: UInt8.self) else { return false }
        return first & 0x01 == 0
    }

    /// Serializes descriptor and data.
    public func serialize() throws(WireError) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(descriptor.size + data.readableBytes)
        try descriptor.write(into: &buffer)
        var data = self.data
        buffer.writeBuffer(&data)
        return buffer
    }
}
