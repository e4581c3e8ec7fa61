import NIOCore

/// A receiver report, PT 201 (RFC 3550 §6.4.2).
public struct RTCPReceiverReport: Hashable, Sendable {
    /// The reporter.
    public var ssrc: UInt32
    /// Reception reports (at most 31).
    public var reportBlocks: [RTCPReportBlock]
    /// Profile-specific extension bytes, kept verbatim (a multiple of 4).
    public var profileExtension: [UInt8]

    /// Creates a receiver report.
    public init(ssrc: UInt32, reportBlocks: [RTCPReportBlock] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }

    static let packetType: UInt8 = 201

    static func parse(count: UInt8, body: ByteBuffer) throws(WireError) -> RTCPReceiverReport {
        var body = body
        let ssrc = try body.readWireInteger(as: UInt32.self, "RTCP RR SSRC")
        var blocks: [RTCPReportBlock] = []
        for _ in 0..<count { blocks.append(try RTCPReportBlock.read(from: &body)) }
        return RTCPReceiverReport(ssrc: ssrc, reportBlocks: blocks, profileExtension: Array(body.readableBytesView))
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        guard reportBlocks.count <= 31 else { throw .invalidArgument("RTCP RR has \(reportBlocks.count) report blocks, at most 31") }
        guard profileExtension.count % 4 == 0 else { throw .invalidArgument("RTCP RR profile extension is not a multiple of 4 bytes") }
        try RTCPPacket.writeHeader(into: &buffer, count: UInt8(reportBlocks.count), packetType: Self.packetType) { buffer in
            buffer.writeInteger(ssrc)
            for block in reportBlocks { block.write(into: &buffer) }
            buffer.writeBytes(profileExtension)
        }
    }
}
