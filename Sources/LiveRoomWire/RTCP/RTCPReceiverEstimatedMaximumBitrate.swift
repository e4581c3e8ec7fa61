import NIOCore

/// Receiver Estimated Maximum Bitrate: PSFB (PT 206) FMT 15 application layer
/// feedback with the "REMB" identifier (draft-alvestrand-rmcat-remb).
public struct RTCPReceiverEstimatedMaximumBitrate: Hashable, Sendable {
    /// The sender of the feedback.
    public var senderSSRC: UInt32
    /// The estimated total bitrate in bits per second, as encoded (mantissa << exponent).
    public var bitrate: UInt64
    /// The media sources the estimate applies to (at most 255).
    public var ssrcs: [UInt32]

    /// Creates a REMB. A bitrate that does not fit 18 bits of mantissa is rounded down
    /// to the nearest representable value when serialized.
    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    static let packetType: UInt8 = 206
    static let format: UInt8 = 15
    static let identifier: UInt32 = 0x5245_4D42  // "REMB"

    /// The (exponent, mantissa) pair written on the wire for `bitrate`.
    static func encode(bitrate: UInt64) -> (exponent: UInt8, mantissa: UInt32) {
        var exponent: UInt8 = 0
        var mantissa = bitrate
        while mantissa > 0x3FFFF {
            mantissa >>= 1
            exponent += 1
        }
        return (exponent, UInt32(mantissa))
    }

    /// Returns nil unless `body` is REMB (so other AFB packets stay generic).
    static func parseIfREMB(body: ByteBuffer) throws(WireError) -> RTCPReceiverEstimatedMaximumBitrate? {
        var body = body
        let header = try RTCPFeedbackHeader.read(from: &body, name: "AFB", entrySize: nil)
        guard body.getInteger(at: body.readerIndex, as: UInt32.self) == identifier else { return nil }
        body.moveReaderIndex(forwardBy: 4)
        let count = Int(try body.readWireInteger(as: UInt8.self, "RTCP REMB SSRC count"))
        let exponentAndMantissa = try body.readWireInteger(as: UInt8.self, "RTCP REMB exponent")
        let mantissaLow = try body.readWireInteger(as: UInt16.self, "RTCP REMB mantissa")
        let exponent = exponentAndMantissa >> 2
        let mantissa = UInt64(exponentAndMantissa & 0x03) << 16 | UInt64(mantissaLow)
        // Exponents up to 63 are encodable; a value beyond 2^64 saturates.
        let shifted = mantissa << exponent
        let bitrate = (shifted >> exponent) == mantissa ? shifted : UInt64.max
        var ssrcs: [UInt32] = []
        for _ in 0..<count { ssrcs.append(try body.readWireInteger(as: UInt32.self, "RTCP REMB SSRC")) }
        guard body.readableBytes == 0 else { throw .malformed("RTCP REMB has \(body.readableBytes) trailing bytes") }
        return RTCPReceiverEstimatedMaximumBitrate(senderSSRC: header.senderSSRC, bitrate: bitrate, ssrcs: ssrcs)
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        guard ssrcs.count <= 255 else { throw .invalidArgument("RTCP REMB has \(ssrcs.count) SSRCs, at most 255") }
        let (exponent, mantissa) = Self.encode(bitrate: bitrate)
        try RTCPFeedbackHeader(senderSSRC: senderSSRC, mediaSSRC: 0).write(into: &buffer, format: Self.format, packetType: Self.packetType) { buffer in
            buffer.writeInteger(Self.identifier)
            buffer.writeInteger(UInt8(ssrcs.count))
            buffer.writeInteger(exponent << 2 | UInt8(truncatingIfNeeded: mantissa >> 16))
            buffer.writeInteger(UInt16(truncatingIfNeeded: mantissa))
            for ssrc in ssrcs { buffer.writeInteger(ssrc) }
        }
    }
}
