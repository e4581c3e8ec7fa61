import NIOCore

/// A BYE packet, PT 203 (RFC 3550 §6.6).
public struct RTCPGoodbye: Hashable, Sendable {
    /// The sources leaving (at most 31).
    public var ssrcs: [UInt32]
    /// The optional reason, at most 255 bytes.
    public var reason: [UInt8]?

    /// Creates a BYE.
    public init(ssrcs: [UInt32], reason: String? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason.map { Array($0.utf8) }
    }

    /// The reason as text, if present and valid UTF-8.
    public var reasonText: String? {
        reason.flatMap { String(validating: $0, as: UTF8.self) }
    }

    static let packetType: UInt8 = 203

    static func parse(count: UInt8, body: ByteBuffer) throws(WireError) -> RTCPGoodbye {
        var body = body
        var ssrcs: [UInt32] = []
        for _ in 0..<count { ssrcs.append(try body.readWireInteger(as: UInt32.self, "RTCP BYE SSRC")) }
        var goodbye = RTCPGoodbye(ssrcs: ssrcs)
        if body.readableBytes > 0 {
            let length = Int(try body.readWireInteger(as: UInt8.self, "RTCP BYE reason length"))
            goodbye.reason = try body.readWireBytes(length: length, "RTCP BYE reason")
        }
        return goodbye
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        guard ssrcs.count <= 31 else { throw .invalidArgument("RTCP BYE has \(ssrcs.count) SSRCs, at most 31") }
        if let reason, reason.count > 255 { throw .invalidArgument("RTCP BYE reason longer than 255 bytes") }
        try RTCPPacket.writeHeader(into: &buffer, count: UInt8(ssrcs.count), packetType: Self.packetType) { buffer in
            for ssrc in ssrcs { buffer.writeInteger(ssrc) }
            if let reason {
                buffer.writeInteger(UInt8(reason.count))
                buffer.writeBytes(reason)
                buffer.writeZeros((4 - (reason.count + 1) % 4) % 4)
            }
        }
    }
}
