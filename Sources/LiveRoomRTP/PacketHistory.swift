/// The last packets sent on one RTP stream, by sequence number, to answer NACKs (RFC 4585).
///
/// `Packet` is how a packet is kept: its bytes (an outbound stream), or its bytes with their
/// parse (the SFU). A fixed ring of `capacity` slots indexed by `sequenceNumber % capacity`: a packet is
/// found only while it is one of the newest `capacity` stored. Inlinable, so the SFU's
/// forwarding stores and finds its packets in code specialised for its `Packet`.
public struct PacketHistory<Packet: Sendable>: Sendable {
    public let capacity: Int
    @usableFromInline var slots: [(sequenceNumber: UInt16, packet: Packet)?]

    /// - Parameter capacity: how many packets to keep (1...32768). About one second of
    ///   1.3 Mbps video is ~150 packets; 512 covers loss bursts with margin.
    @inlinable public init(capacity: Int = 512) {
        precondition(capacity > 0 && capacity <= 32_768, "history capacity must be 1...32768")
        self.capacity = capacity
        slots = Array(repeating: nil, count: capacity)
    }

    /// Remembers an unprotected RTP packet.
    @inlinable public mutating func store(sequenceNumber: UInt16, packet: Packet) {
        slots[Int(sequenceNumber) % capacity] = (sequenceNumber, packet)
    }

    /// The unprotected packet with this sequence number, if still kept.
    @inlinable public func packet(sequenceNumber: UInt16) -> Packet? {
        guard let slot = slots[Int(sequenceNumber) % capacity], slot.sequenceNumber == sequenceNumber else { return nil }
        return slot.packet
    }
}
