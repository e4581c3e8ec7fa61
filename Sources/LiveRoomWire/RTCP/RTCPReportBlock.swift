import NIOCore

/// A reception report block of an SR or RR (RFC 3550 §6.4.1).
public struct RTCPReportBlock: Hashable, Sendable {
    /// The source this block reports on.
    public var ssrc: UInt32
    /// Fraction of packets lost since the last report, in 1/256 units.
    public var fractionLost: UInt8
    /// Cumulative packets lost, a signed 24-bit value (may be negative with duplicates).
    public var cumulativeLost: Int32
    /// Extended highest sequence number received (cycles << 16 | highest).
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR received (LSR).
    public var lastSenderReport: UInt32
    /// Delay since that SR in 1/65536 seconds (DLSR).
    public var delaySinceLastSenderReport: UInt32

    /// Creates a report block; `cumulativeLost` is clamped to the 24-bit range on write.
    public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequenceNumber: UInt32,
                jitter: UInt32, lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static let size = 24

    static func read(from buffer: inout ByteBuffer) throws(WireError) -> RTCPReportBlock {
        let ssrc = try buffer.readWireInteger(as: UInt32.self, "RTCP report block SSRC")
        let lost = try buffer.readWireInteger(as: UInt32.self, "RTCP report block loss")
        // Sign-extend the 24-bit cumulative loss.
        let cumulative = Int32(bitPattern: lost << 8) >> 8
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: UInt8(truncatingIfNeeded: lost >> 24), cumulativeLost: cumulative,
            extendedHighestSequenceNumber: try buffer.readWireInteger(as: UInt32.self, "RTCP report block highest seq"),
            jitter: try buffer.readWireInteger(as: UInt32.self, "RTCP report block jitter"),
            lastSenderReport: try buffer.readWireInteger(as: UInt32.self, "RTCP report block LSR"),
            delaySinceLastSenderReport: try buffer.readWireInteger(as: UInt32.self, "RTCP report block DLSR"))
    }

    func write(into buffer: inout ByteBuffer) {
        buffer.writeInteger(ssrc)
        let clamped = min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)
        buffer.writeInteger(UInt32(fractionLost) << 24 | (UInt32(bitPattern: clamped) & 0x00FF_FFFF))
        buffer.writeInteger(extendedHighestSequenceNumber)
        buffer.writeInteger(jitter)
        buffer.writeInteger(lastSenderReport)
        buffer.writeInteger(delaySinceLastSenderReport)
    }
}
