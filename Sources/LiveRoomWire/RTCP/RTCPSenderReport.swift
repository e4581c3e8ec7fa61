import NIOCore

/// A sender report, PT 200 (RFC 3550 §6.4.1).
public struct RTCPSenderReport: Hashable, Sendable {
    /// The sender.
    public var ssrc: UInt32
    /// 64-bit NTP timestamp (seconds since 1900 in the high word, fraction in the low).
    public var ntpTimestamp: UInt64
    /// The RTP timestamp corresponding to `ntpTimestamp`.
    public var rtpTimestamp: UInt32
    /// Packets sent.
    public var packetCount: UInt32
    /// Payload octets sent.
    public var octetCount: UInt32
    /// Reception reports (at most 31).
    public var reportBlocks: [RTCPReportBlock]
    /// Profile-specific extension bytes, kept verbatim (a multiple of 4).
    public var profileExtension: [UInt8]

    /// Creates a sender report.
    public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
                reportBlocks: [RTCPReportBlock] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }

    /// The middle 32 bits of the NTP timestamp, echoed as LSR in report blocks.
    public var compactNTP: UInt32 { UInt32(truncatingIfNeeded: ntpTimestamp >> 16) }

    static let packetType: UInt8 = 200

    static func parse(count: UInt8, body: ByteBuffer) throws(WireError) -> RTCPSenderReport {
        var body = body
        let ssrc = try body.readWireInteger(as: UInt32.self, "RTCP SR SSRC")
        let ntp = try body.readWireInteger(as: UInt64.self, "RTCP SR NTP timestamp")
        let rtp = try body.readWireInteger(as: UInt32.self, "RTCP SR RTP timestamp")
        let packets = try body.readWireInteger(as: UInt32.self, "RTCP SR packet count")
        let octets = try body.readWireInteger(as: UInt32.self, "RTCP SR octet count")
        var blocks: [RTCPReportBlock] = []
        for _ in 0..<count { blocks.append(try RTCPReportBlock.read(from: &body)) }
        return RTCPSenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packets, octetCount: octets,
                                reportBlocks: blocks, profileExtension: Array(body.readableBytesView))
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        guard reportBlocks.count <= 31 else { throw .invalidArgument("RTCP SR has \(reportBlocks.count) report blocks, at most 31") }
        guard profileExtension.count % 4 == 0 else { throw .invalidArgument("RTCP SR profile extension is not a multiple of 4 bytes") }
        try RTCPPacket.writeHeader(into: &buffer, count: UInt8(reportBlocks.count), packetType: Self.packetType) { buffer in
            buffer.writeInteger(ssrc)
            buffer.writeInteger(ntpTimestamp)
            buffer.writeInteger(rtpTimestamp)
            buffer.writeInteger(packetCount)
            buffer.writeInteger(octetCount)
            for block in reportBlocks { block.write(into: &buffer) }
            buffer.writeBytes(profileExtension)
        }
    }
}
