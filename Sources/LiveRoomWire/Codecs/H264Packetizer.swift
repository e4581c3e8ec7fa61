import NIOCore

/// Splits H.264 NAL units into RTP payloads of at most `maxPayloadSize` bytes:
/// a single NAL unit packet when it fits, FU-A fragments otherwise (RFC 6184, mode 1).
public struct H264Packetizer: Hashable, Sendable {
    /// The largest RTP payload to produce.
    public var maxPayloadSize: Int

    /// Creates a packetizer; `maxPayloadSize` must be at least 3.
    public init(maxPayloadSize: Int) {
        self.maxPayloadSize = maxPayloadSize
    }

    /// Packetizes one access unit given as an Annex B byte stream. The caller sets the
    /// RTP marker bit on the packet carrying the last payload.
    public func packetize(annexB: ByteBuffer) throws(WireError) -> [ByteBuffer] {
        try packetize(nalUnits: H264AnnexB.split(annexB))
    }

    /// Packetizes NAL units (without start codes).
    public func packetize(nalUnits: [ByteBuffer]) throws(WireError) -> [ByteBuffer] {
        guard maxPayloadSize >= 3 else { throw .invalidArgument("H.264 max payload size \(maxPayloadSize) is below 3") }
        var payloads: [ByteBuffer] = []
        for unit in nalUnits {
            guard let header = unit.getInteger(at: unit.readerIndex, as: UInt8.self) else {
                throw .invalidArgument("H.264 NAL unit is empty")
            }
            let type = H264NALUnitType.of(headerByte: header)
            guard (1...23).contains(type) else { throw .invalidArgument("H.264 NAL type \(type) cannot be packetized") }
            if unit.readableBytes <= maxPayloadSize {
                payloads.append(unit)
                continue
            }
            var body = unit
            body.moveReaderIndex(forwardBy: 1)
            let room = maxPayloadSize - 2
            let count = (body.readableBytes + room - 1) / room
            let baseSize = body.readableBytes / count
            var extra = body.readableBytes % count
            for index in 0..<count {
                var size = baseSize
                if extra > 0 { size += 1; extra -= 1 }
                var chunk = body.readSlice(length: size)!  // sizes sum to the body length
                var payload = ByteBuffer()
                payload.reserveCapacity(size + 2)
                payload.writeInteger((header & 0xE0) | H264NALUnitType.fuA)
                payload.writeInteger((index == 0 ? 0x80 : 0) | (index == count - 1 ? 0x40 : 0) | type)
                payload.writeBuffer(&chunk)
                payloads.append(payload)
            }
        }
        return payloads
    }
}
