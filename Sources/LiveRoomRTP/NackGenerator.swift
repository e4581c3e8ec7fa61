import LiveRoomWire

/// Asks a sender again for the packets of one stream that never arrived (RFC 4585 generic
/// NACK, from the receiving side): a gap in the sequence numbers is asked for as soon as the
/// packet after it arrives, and again every ``retryInterval`` while still missing, at most
/// ``maximumRequests`` times and for at most ``maximumAge``. A gap longer than ``maximumGap``
/// is not asked for (a keyframe serves better), and at most ``maximumMissing`` numbers are
/// tracked at once, so a hostile stream costs a bounded amount.
public struct NackGenerator: Sendable {
    public let retryInterval: Duration
    public let maximumRequests: Int
    public let maximumAge: Duration
    public let maximumGap: Int
    public static let maximumMissing = 512

    private var unwrapper = SequenceNumberUnwrapper()
    /// Missing extended sequence numbers: when first and last asked for, and how often.
    private var missing: [UInt64: (first: ContinuousClock.Instant, last: ContinuousClock.Instant, count: Int)] = [:]

    public init(retryInterval: Duration = .milliseconds(120), maximumRequests: Int = 6, maximumAge: Duration = .milliseconds(1500), maximumGap: Int = 128) {
        self.retryInterval = retryInterval
        self.maximumRequests = maximumRequests
        self.maximumAge = maximumAge
        self.maximumGap = maximumGap
    }

    /// Sequence numbers still missing.
    public var missingCount: Int { missing.count }

    /// A packet arrived: the numbers of a new gap before it, to ask for now.
    public mutating func received(_ sequenceNumber: UInt16, now: ContinuousClock.Instant) -> [UInt16] {
        let before = unwrapper.highestExtended
        guard let extended = unwrapper.unwrap(sequenceNumber) else { return [] }
        missing[extended] = nil
        guard let before, extended > before + 1, extended - before - 1 <= UInt64(maximumGap) else { return [] }
        var asked: [UInt16] = []
        for lost in (before + 1)..<extended where missing.count < Self.maximumMissing {
            missing[lost] = (now, now, 1)
            asked.append(UInt16(truncatingIfNeeded: lost))
        }
        return asked
    }

    /// The numbers to ask for again now; forgets those asked for too often or for too long.
    public mutating func due(now: ContinuousClock.Instant) -> [UInt16] {
        guard !missing.isEmpty else { return [] }
        var again: [UInt64] = []
        for (lost, entry) in missing {
            if entry.count >= maximumRequests || now - entry.first >= maximumAge {
                missing[lost] = nil
            } else if now - entry.last >= retryInterval {
                missing[lost] = (entry.first, now, entry.count + 1)
                again.append(lost)
            }
        }
        return again.sorted().map { UInt16(truncatingIfNeeded: $0) }
    }
}
