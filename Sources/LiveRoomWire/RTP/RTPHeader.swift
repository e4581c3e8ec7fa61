import NIOCore

/// The fixed RTP header with CSRCs and extension (RFC 3550 §5.1). Version is always 2.
public struct RTPHeader: Hashable, Sendable {
    /// The RTP version this module speaks.
    public static let version: UInt8 = 2

    /// The marker bit (end of a video frame, start of a talkspurt).
    public var marker: Bool
    /// The payload type (7 bits).
    public var payloadType: UInt8
    /// The sequence number; compare with ``Swift/UInt16/isNewer(than:)``.
    public var sequenceNumber: UInt16
    /// The media timestamp.
    public var timestamp: UInt32
    /// The synchronization source.
    public var ssrc: UInt32
    /// Contributing sources (at most 15).
    public var csrcs: [UInt32]
    /// The header extension, if the X bit is set.
    public var headerExtension: RTPHeaderExtension?

    /// Creates a header.
    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcs: [UInt32] = [], headerExtension: RTPHeaderExtension? = nil) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.headerExtension = headerExtension
    }

    /// Whether the X bit is set.
    public var hasExtension: Bool { headerExtension != nil }

    /// Reads a header from `buffer`, leaving the reader index at the payload.
    /// Returns the header and whether the P bit was set.
    static func read(from buffer: inout ByteBuffer) throws(WireError) -> (RTPHeader, padding: Bool) {
        let first = try buffer.readWireInteger(as: UInt8.self, "RTP first byte")
        guard first >> 6 == version else { throw .malformed("RTP version \(first >> 6), expected 2") }
        let padding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        let csrcCount = Int(first & 0x0F)
        let second = try buffer.readWireInteger(as: UInt8.self, "RTP marker/payload type")
        let sequenceNumber = try buffer.readWireInteger(as: UInt16.self, "RTP sequence number")
        let timestamp = try buffer.readWireInteger(as: UInt32.self, "RTP timestamp")
        let ssrc = try buffer.readWireInteger(as: UInt32.self, "RTP SSRC")
        var csrcs: [UInt32] = []
        csrcs.reserveCapacity(csrcCount)
        for _ in 0..<csrcCount {
            csrcs.append(try buffer.readWireInteger(as: UInt32.self, "RTP CSRC"))
        }
        var headerExtension: RTPHeaderExtension?
        if hasExtension {
            let profile = try buffer.readWireInteger(as: UInt16.self, "RTP extension profile")
            let words = Int(try buffer.readWireInteger(as: UInt16.self, "RTP extension length"))
            let data = try buffer.readWireSlice(length: words * 4, "RTP extension data")
            headerExtension = try RTPHeaderExtension.decode(profile: profile, data: data)
        }
        let header = RTPHeader(marker: second & 0x80 != 0, payloadType: second & 0x7F, sequenceNumber: sequenceNumber,
                               timestamp: timestamp, ssrc: ssrc, csrcs: csrcs, headerExtension: headerExtension)
        return (header, padding)
    }

    /// Writes the header; `padding` sets the P bit.
    func write(into buffer: inout ByteBuffer, padding: Bool) throws(WireError) {
        guard csrcs.count <= 15 else { throw .invalidArgument("RTP header has \(csrcs.count) CSRCs, at most 15 allowed") }
        guard payloadType <= 0x7F else { throw .invalidArgument("RTP payload type \(payloadType) exceeds 7 bits") }
        var first = Self.version << 6 | UInt8(csrcs.count)
        if padding { first |= 0x20 }
        if headerExtension != nil { first |= 0x10 }
        buffer.writeInteger(first)
        buffer.writeInteger((marker ? 0x80 : 0) | payloadType)
        buffer.writeInteger(sequenceNumber)
        buffer.writeInteger(timestamp)
        buffer.writeInteger(ssrc)
        for csrc in csrcs { buffer.writeInteger(csrc) }
        try headerExtension?.encode(into: &buffer)
    }
}
