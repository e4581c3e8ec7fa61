extension UInt16 {
    /// Whether this RTP sequence number comes after `other`, modulo 2^16.
    ///
    /// A difference of exactly 2^15 is resolved by the plain integer order so the
    /// relation stays antisymmetric.
    @inlinable
    public func isNewer(than other: UInt16) -> Bool {
        let forward = self &- other
        if forward == 0x8000 { return self > other }
        return forward != 0 && forward < 0x8000
    }
}

extension UInt32 {
    /// Whether this RTP timestamp comes after `other`, modulo 2^32.
    @inlinable
    public func isNewer(than other: UInt32) -> Bool {
        let forward = self &- other
        if forward == 0x8000_0000 { return self > other }
        return forward != 0 && forward < 0x8000_0000
    }
}

/// Turns 16-bit RTP sequence numbers into monotonic 64-bit extended sequence
/// numbers, counting rollovers (RFC 3550 §A.1 "cycles").
///
/// Packets that arrive late (older than the newest seen) map to their extended
/// value without moving the newest forward.
public struct SequenceNumberUnwrapper: Hashable, Sendable {
    /// The newest extended sequence number so far, if any packet was seen.
    public private(set) var highestExtended: UInt64?

    /// Creates an unwrapper that has seen nothing.
    public init() {}

    /// The number of completed wraps of the newest sequence number.
    public var rolloverCount: UInt64 { (highestExtended ?? 0) >> 16 }

    /// Extends `sequenceNumber`. Returns `nil` only for a packet older than the
    /// first one seen by more than that first one's value (it would be negative).
    public mutating func unwrap(_ sequenceNumber: UInt16) -> UInt64? {
        guard let highest = highestExtended else {
            highestExtended = UInt64(sequenceNumber)
            return UInt64(sequenceNumber)
        }
        let last = UInt16(truncatingIfNeeded: highest)
        if sequenceNumber.isNewer(than: last) {
            let extended = highest &+ UInt64(sequenceNumber &- last)
            highestExtended = extended
            return extended
        }
        let back = UInt64(last &- sequenceNumber)
        guard back <= highest else { return nil }
        return highest - back
    }
}
