import NIOCore

/// A generic NACK, RTPFB (PT 205) FMT 1 (RFC 4585 §6.2.1).
public struct RTCPGenericNACK: Hashable, Sendable {
    /// One FCI entry: a lost packet id and a bitmask of the 16 following losses.
    public struct Entry: Hashable, Sendable {
        /// Packet id of the first lost packet.
        public var packetID: UInt16
        /// Bit i set means `packetID + i + 1` is lost too.
        public var bitmask: UInt16

        /// Creates an entry.
        public init(packetID: UInt16, bitmask: UInt16) {
            self.packetID = packetID
            self.bitmask = bitmask
        }

        /// The sequence numbers this entry reports lost, in order.
        public var lostSequenceNumbers: [UInt16] {
            var result = [packetID]
            for bit in 0..<16 where bitmask & (1 << bit) != 0 {
                result.append(packetID &+ UInt16(bit) &+ 1)
            }
            return result
        }
    }

    /// The sender of the feedback.
    public var senderSSRC: UInt32
    /// The media source the losses belong to.
    public var mediaSSRC: UInt32
    /// FCI entries.
    public var entries: [Entry]

    /// Creates a NACK from explicit entries.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    /// Creates a NACK reporting `lostSequenceNumbers`, packed into as few entries as
    /// possible. Numbers are ordered with wraparound relative to the first one, so they
    /// should span less than 2^15; duplicates are ignored.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lostSequenceNumbers: [UInt16]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = []
        guard let first = lostSequenceNumbers.first else { return }
        let sorted = Set(lostSequenceNumbers).sorted { ($0 &- first) < ($1 &- first) }
        for sequenceNumber in sorted {
            if var last = entries.last {
                let distance = sequenceNumber &- last.packetID
                if distance >= 1 && distance <= 16 {
                    last.bitmask |= 1 << (distance - 1)
                    entries[entries.count - 1] = last
                    continue
                }
            }
            entries.append(Entry(packetID: sequenceNumber, bitmask: 0))
        }
    }

    /// All sequence numbers reported lost, expanded from PID/BLP pairs.
    public var lostSequenceNumbers: [UInt16] {
        entries.flatMap(\.lostSequenceNumbers)
    }

    static let packetType: UInt8 = 205
    static let format: UInt8 = 1

    static func parse(body: ByteBuffer) throws(WireError) -> RTCPGenericNACK {
        var body = body
        let header = try RTCPFeedbackHeader.read(from: &body, name: "NACK", entrySize: 4)
        var entries: [Entry] = []
        while body.readableBytes > 0 {
            let pid = try body.readWireInteger(as: UInt16.self, "RTCP NACK PID")
            let blp = try body.readWireInteger(as: UInt16.self, "RTCP NACK BLP")
            entries.append(Entry(packetID: pid, bitmask: blp))
        }
        return RTCPGenericNACK(senderSSRC: header.senderSSRC, mediaSSRC: header.mediaSSRC, entries: entries)
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        try RTCPFeedbackHeader(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC).write(into: &buffer, format: Self.format, packetType: Self.packetType) { buffer in
            for entry in entries {
                buffer.writeInteger(entry.packetID)
                buffer.writeInteger(entry.bitmask)
            }
        }
    }
}
