import LiveRoomWire

/// What the server tells a publisher about one of its streams in receiver reports
/// (RFC 3550 §6.4.2, §A.3): loss since the last report and in all, the highest sequence
/// number, and the LSR/DLSR pair the publisher turns into a round-trip time.
public struct ReceptionStatistics: Sendable {
    private var unwrapper = SequenceNumberUnwrapper()
    private var base: UInt64?
    private var received: UInt64 = 0
    private var expectedPrior: UInt64 = 0
    private var receivedPrior: UInt64 = 0
    private var lastSenderReport: UInt32 = 0
    private var lastSenderReportArrival: ContinuousClock.Instant?

    public init() {}

    /// An RTP packet with this sequence number arrived.
    public mutating func packet(sequence: UInt16) {
        guard let extended = unwrapper.unwrap(sequence) else { return }
        if base == nil || extended < base! { base = extended }
        received += 1
    }

    /// A sender report arrived (its middle 32 bits of NTP time).
    public mutating func senderReport(compactNTP: UInt32, now: ContinuousClock.Instant) {
        lastSenderReport = compactNTP
        lastSenderReportArrival = now
    }

    /// The report block for `ssrc`, or nil before any packet; resets the interval counters.
    public mutating func reportBlock(ssrc: UInt32, now: ContinuousClock.Instant) -> RTCPReportBlock? {
        guard let base, let highest = unwrapper.highestExtended else { return nil }
        let expected = highest - base + 1
        let lost = expected > received ? expected - received : 0
        let expectedInterval = expected - expectedPrior
        let receivedInterval = received - receivedPrior
        expectedPrior = expected
        receivedPrior = received
        let lostInterval = expectedInterval > receivedInterval ? expectedInterval - receivedInterval : 0
        let fraction = expectedInterval == 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        var delay: UInt32 = 0
        if let arrival = lastSenderReportArrival {
            delay = UInt32(clamping: (now - arrival).ticks(rate: 65_536))
        }
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(clamping: lost),
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: highest), jitter: 0,
            lastSenderReport: lastSenderReport, delaySinceLastSenderReport: delay)
    }
}
