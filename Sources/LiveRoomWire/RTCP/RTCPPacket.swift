import NIOCore

/// One RTCP packet of a compound packet (RFC 3550 §6, RFC 4585, RFC 5104).
public enum RTCPPacket: Hashable, Sendable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case sourceDescription(RTCPSourceDescription)
    case goodbye(RTCPGoodbye)
    case genericNACK(RTCPGenericNACK)
    case pictureLossIndication(RTCPPictureLossIndication)
    case fullIntraRequest(RTCPFullIntraRequest)
    case receiverEstimatedMaximumBitrate(RTCPReceiverEstimatedMaximumBitrate)
    /// Any other packet type or feedback format, body kept verbatim (without padding).
    case unknown(packetType: UInt8, count: UInt8, body: [UInt8])

    /// Parses every packet of a compound RTCP datagram.
    ///
    /// Reduced-size RTCP (RFC 5506) is accepted: the first packet need not be SR/RR.
    public static func parseCompound(_ buffer: ByteBuffer) throws(WireError) -> [RTCPPacket] {
        var buffer = buffer
        guard buffer.readableBytes > 0 else { throw .truncated("RTCP compound packet is empty") }
        var packets: [RTCPPacket] = []
        while buffer.readableBytes > 0 {
            packets.append(try parseOne(from: &buffer))
        }
        return packets
    }

    /// Reads one RTCP packet from `buffer`.
    public static func parseOne(from buffer: inout ByteBuffer) throws(WireError) -> RTCPPacket {
        let first = try buffer.readWireInteger(as: UInt8.self, "RTCP first byte")
        guard first >> 6 == 2 else { throw .malformed("RTCP version \(first >> 6), expected 2") }
        let hasPadding = first & 0x20 != 0
        let count = first & 0x1F
        let packetType = try buffer.readWireInteger(as: UInt8.self, "RTCP packet type")
        let words = Int(try buffer.readWireInteger(as: UInt16.self, "RTCP length"))
        var body = try buffer.readWireSlice(length: words * 4, "RTCP packet type \(packetType) body")
        if hasPadding {
            guard let padding = body.getInteger(at: body.writerIndex - 1, as: UInt8.self), body.readableBytes > 0 else {
                throw .malformed("RTCP packet has the P bit but no body")
            }
            guard padding > 0, Int(padding) <= body.readableBytes else {
                throw .malformed("RTCP padding count \(padding) with a \(body.readableBytes)-byte body")
            }
            body.moveWriterIndex(to: body.writerIndex - Int(padding))
        }
        switch packetType {
        case RTCPSenderReport.packetType:
            return .senderReport(try .parse(count: count, body: body))
        case RTCPReceiverReport.packetType:
            return .receiverReport(try .parse(count: count, body: body))
        case RTCPSourceDescription.packetType:
            return .sourceDescription(try .parse(count: count, body: body))
        case RTCPGoodbye.packetType:
            return .goodbye(try .parse(count: count, body: body))
        case RTCPGenericNACK.packetType where count == RTCPGenericNACK.format:
            return .genericNACK(try .parse(body: body))
        case RTCPPictureLossIndication.packetType where count == RTCPPictureLossIndication.format:
            return .pictureLossIndication(try .parse(body: body))
        case RTCPFullIntraRequest.packetType where count == RTCPFullIntraRequest.format:
            return .fullIntraRequest(try .parse(body: body))
        case RTCPReceiverEstimatedMaximumBitrate.packetType where count == RTCPReceiverEstimatedMaximumBitrate.format:
            if let remb = try RTCPReceiverEstimatedMaximumBitrate.parseIfREMB(body: body) {
                return .receiverEstimatedMaximumBitrate(remb)
            }
            return .unknown(packetType: packetType, count: count, body: Array(body.readableBytesView))
        default:
            return .unknown(packetType: packetType, count: count, body: Array(body.readableBytesView))
        }
    }

    /// Serializes packets back to back into one compound datagram.
    public static func serializeCompound(_ packets: [RTCPPacket]) throws(WireError) -> ByteBuffer {
        var buffer = ByteBuffer()
        for packet in packets { try packet.serialize(into: &buffer) }
        return buffer
    }

    /// Serializes this packet alone.
    public func serialize() throws(WireError) -> ByteBuffer {
        var buffer = ByteBuffer()
        try serialize(into: &buffer)
        return buffer
    }

    /// Appends this packet to `buffer` (never with padding).
    public func serialize(into buffer: inout ByteBuffer) throws(WireError) {
        switch self {
        case .senderReport(let packet): try packet.write(into: &buffer)
        case .receiverReport(let packet): try packet.write(into: &buffer)
        case .sourceDescription(let packet): try packet.write(into: &buffer)
        case .goodbye(let packet): try packet.write(into: &buffer)
        case .genericNACK(let packet): try packet.write(into: &buffer)
        case .pictureLossIndication(let packet): try packet.write(into: &buffer)
        case .fullIntraRequest(let packet): try packet.write(into: &buffer)
        case .receiverEstimatedMaximumBitrate(let packet): try packet.write(into: &buffer)
        case .unknown(let packetType, let count, let body):
            guard count <= 31 else { throw .invalidArgument("RTCP count \(count) exceeds 5 bits") }
            guard body.count % 4 == 0 else { throw .invalidArgument("RTCP body of \(body.count) bytes is not word aligned") }
            try Self.writeHeader(into: &buffer, count: count, packetType: packetType) { $0.writeBytes(body) }
        }
    }

    /// Writes the common header, lets `body` write the rest, then patches the length.
    static func writeHeader(into buffer: inout ByteBuffer, count: UInt8, packetType: UInt8,
                            body: (inout ByteBuffer) -> Void) throws(WireError) {
        let start = buffer.writerIndex
        buffer.writeInteger(UInt8(0x80) | (count & 0x1F))
        buffer.writeInteger(packetType)
        buffer.writeInteger(UInt16(0))
        body(&buffer)
        let length = buffer.writerIndex - start
        precondition(length % 4 == 0, "RTCP writers produce word-aligned packets")
        let words = length / 4 - 1
        guard words <= Int(UInt16.max) else {
            buffer.moveWriterIndex(to: start)
            throw .invalidArgument("RTCP packet longer than 65535 words")
        }
        buffer.setInteger(UInt16(words), at: start + 2)
    }
}
