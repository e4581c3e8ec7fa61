import NIOCore

/// A Full Intra Request, PSFB (PT 206) FMT 4 (RFC 5104 §4.3.1).
public struct RTCPFullIntraRequest: Hashable, Sendable {
    /// One FCI entry: the source asked for a keyframe and the command sequence number.
    public struct Entry: Hashable, Sendable {
        /// The media source that should send a decoder refresh point.
        public var ssrc: UInt32
        /// Incremented by the requester for each new request.
        public var sequenceNumber: UInt8

        /// Creates an entry.
        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    /// The sender of the feedback.
    public var senderSSRC: UInt32
    /// The media source field of the common header; RFC 5104 says 0.
    public var mediaSSRC: UInt32
    /// FCI entries.
    public var entries: [Entry]

    /// Creates a FIR.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    static let packetType: UInt8 = 206
    static let format: UInt8 = 4

    static func parse(body: ByteBuffer) throws(WireError) -> RTCPFullIntraRequest {
        var body = body
        let header = try RTCPFeedbackHeader.read(from: &body, name: "FIR", entrySize: 8)
        var entries: [Entry] = []
        while body.readableBytes > 0 {
            let ssrc = try body.readWireInteger(as: UInt32.self, "RTCP FIR SSRC")
            let sequence = try body.readWireInteger(as: UInt8.self, "RTCP FIR sequence number")
            try body.skipWireBytes(3, "RTCP FIR reserved")
            entries.append(Entry(ssrc: ssrc, sequenceNumber: sequence))
        }
        return RTCPFullIntraRequest(senderSSRC: header.senderSSRC, mediaSSRC: header.mediaSSRC, entries: entries)
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        try RTCPFeedbackHeader(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC).write(into: &buffer, format: Self.format, packetType: Self.packetType) { buffer in
            for entry in entries {
                buffer.writeInteger(entry.ssrc)
                buffer.writeInteger(entry.sequenceNumber)
                buffer.writeZeros(3)
            }
        }
    }
}
