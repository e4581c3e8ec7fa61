import NIOCore

/// Splits VP8 frames into RTP payloads of at most `maxPayloadSize` bytes, each with
/// a payload descriptor (RFC 7741 §4.4). Partitions are not aligned to packets:
/// the whole frame is treated as partition 0, which every receiver accepts.
public struct VP8Packetizer: Hashable, Sendable {
    /// The largest RTP payload to produce, descriptor included.
    public var maxPayloadSize: Int
    /// The size of the payload descriptor written in front of each payload.
    public var descriptorSize: Int { VP8PayloadDescriptor(startOfPartition: true, pictureID: nextPictureID).size }
    /// The PictureID of the next frame; nil to send no PictureID.
    public var nextPictureID: VP8PayloadDescriptor.PictureID?

    /// Creates a packetizer. A 15-bit PictureID is carried by default, as browsers do.
    public init(maxPayloadSize: Int, firstPictureID: VP8PayloadDescriptor.PictureID? = .fifteenBit(0)) {
        self.maxPayloadSize = maxPayloadSize
        self.nextPictureID = firstPictureID
    }

    /// Splits `frame` into payloads and advances the PictureID. The caller sets the RTP
    /// marker bit on the packet carrying the last payload.
    /// - Parameter count: split into exactly this many payloads (at most one per byte of the
    ///   frame) instead of as few as `maxPayloadSize` allows.
    public mutating func packetize(frame: ByteBuffer, nonReference: Bool = false, count: Int? = nil) throws(WireError) -> [ByteBuffer] {
        guard frame.readableBytes > 0 else { throw .invalidArgument("VP8 frame is empty") }
        var descriptor = VP8PayloadDescriptor(nonReference: nonReference, startOfPartition: true, pictureID: nextPictureID)
        let room = maxPayloadSize - descriptor.size
        guard room > 0 else {
            throw .invalidArgument("VP8 max payload size \(maxPayloadSize) leaves no room after a \(descriptor.size)-byte descriptor")
        }
        if let count, !(1...frame.readableBytes).contains(count) {
            throw .invalidArgument("a \(frame.readableBytes)-byte VP8 frame cannot be \(count) packets")
        }
        var frame = frame
        // Spread bytes evenly so the last packet is not a tiny remainder.
        let packetCount = count ?? (frame.readableBytes + room - 1) / room
        let baseSize = frame.readableBytes / packetCount
        var extra = frame.readableBytes % packetCount
        var payloads: [ByteBuffer] = []
        payloads.reserveCapacity(packetCount)
        for _ in 0..<packetCount {
            var size = baseSize
            if extra > 0 { size += 1; extra -= 1 }
            var chunk = frame.readSlice(length: size)!  // sizes sum to readableBytes
            var payload = ByteBuffer()
            payload.reserveCapacity(descriptor.size + size)
            try descriptor.write(into: &payload)
            payload.writeBuffer(&chunk)
            payloads.append(payload)
            descriptor.startOfPartition = false
        }
        nextPictureID = nextPictureID?.next
        return payloads
    }
}
