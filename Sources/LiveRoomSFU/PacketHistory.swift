/// The last packets sent on a stream, by sequence number, to answer NACKs (RFC 4585).
/// A fixed ring: a slot is overwritten by the packet 'capacity' sequence numbers later.
public struct PacketHistory: Sendable {
    private var slots: [(sequence: UInt16, packet: [UInt8])?]

    /// - Parameter capacity: how many packets to keep; a power of two is fastest. About one
    ///   second of 1.3 Mbps video is ~150 packets; 512 covers loss bursts with margin.
    public init(capacity: Int = 512) {
        precondition(capacity > 0)
        slots = Array(repeating: nil, count: capacity)
    }

    public mutating func store(sequence: UInt16, packet: [UInt8]) {
        slots[Int(sequence) % slots.count] = (sequence, packet)
    }

    /// The packet with this sequence number, if still kept.
    public func packet(sequence: UInt16) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence else { return nil }
        return slot.packet
    }
}
