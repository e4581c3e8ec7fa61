import LiveRoomWire

/// Reception statistics of one incoming RTP stream (RFC 3550 §6.4.1 and appendix A):
/// expected and lost packets, interarrival jitter (appendix A.8), and the last sender report
/// for LSR/DLSR and for mapping RTP timestamps to the sender's wall clock. The SFU reports
/// them to publishers, the client to the server.
public struct ReceiveStatistics: Sendable {
    public let clockRate: UInt32
    private var unwrapper = SequenceNumberUnwrapper()
    private var baseSequence: UInt64?
    public private(set) var packetsReceived: UInt64 = 0
    public private(set) var bytesReceived: UInt64 = 0
    /// Interarrival jitter in timestamp units, scaled by 16 as appendix A.8 keeps it.
    private var scaledJitter: Int64 = 0
    private var lastTransit: Int64?
    private var reference: ContinuousClock.Instant?
    private var expectedPrior: UInt64 = 0
    private var receivedPrior: UInt64 = 0
    /// The last sender report and when it arrived.
    public private(set) var lastSenderReport: (report: RTCPSenderReport, arrival: ContinuousClock.Instant)?

    public init(clockRate: UInt32) {
        self.clockRate = clockRate
    }

    /// Records one packet: its sequence number, RTP timestamp, size and arrival time.
    public mutating func record(sequenceNumber: UInt16, timestamp: UInt32, bytes: Int, arrival: ContinuousClock.Instant) {
        guard let extended = unwrapper.unwrap(sequenceNumber) else { return }
        baseSequence = min(baseSequence ?? extended, extended)
        packetsReceived += 1
        bytesReceived += UInt64(bytes)
        // Appendix A.8: transit = arrival - timestamp, both in the media clock.
        let reference = self.reference ?? arrival
        self.reference = reference
        let arrivalTicks = (arrival - reference).ticks(rate: clockRate)
        let transit = arrivalTicks &- Int64(timestamp)
        if let lastTransit {
            var d = Int64(Int32(truncatingIfNeeded: transit &- lastTransit))
            if d < 0 { d = -d }
            scaledJitter += d - ((scaledJitter + 8) >> 4)
        }
        lastTransit = transit
    }

    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32 { UInt32(clamping: scaledJitter >> 4) }
    /// Interarrival jitter in milliseconds.
    public var jitterMilliseconds: Double { Double(scaledJitter) / 16 / Double(clockRate) * 1000 }

    /// The extended highest sequence number received.
    public var extendedHighestSequenceNumber: UInt64? { unwrapper.highestExtended }

    /// Packets expected from the first to the highest sequence number.
    public var expected: UInt64 {
        guard let baseSequence, let highest = unwrapper.highestExtended else { return 0 }
        return highest - baseSequence + 1
    }

    /// Packets lost (expected - received; negative with duplicates).
    public var cumulativeLost: Int64 { Int64(expected) - Int64(packetsReceived) }

    /// Notes a sender report for this stream.
    public mutating func receivedSenderReport(_ report: RTCPSenderReport, at arrival: ContinuousClock.Instant) {
        lastSenderReport = (report, arrival)
    }

    /// The report block for an RR at `now`, or nil before any packet; starts a new
    /// fraction-lost interval.
    public mutating func reportBlock(ssrc: UInt32, now: ContinuousClock.Instant) -> RTCPReportBlock? {
        guard packetsReceived > 0 else { return nil }
        let expected = self.expected
        let expectedInterval = expected - min(expected, expectedPrior)
        let receivedInterval = packetsReceived - min(packetsReceived, receivedPrior)
        expectedPrior = expected
        receivedPrior = packetsReceived
        let lostInterval = Int64(expectedInterval) - Int64(receivedInterval)
        let fraction: UInt8 = expectedInterval == 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / Int64(expectedInterval)))
        var lsr: UInt32 = 0
        var dlsr: UInt32 = 0
        if let (report, arrival) = lastSenderReport {
            lsr = report.compactNTP
            dlsr = UInt32(clamping: (now - arrival).ticks(rate: 65_536))
        }
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(clamping: cumulativeLost),
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: unwrapper.highestExtended ?? 0), jitter: jitter,
            lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    /// The sender's wall-clock time (Unix seconds) of RTP timestamp `timestamp`, from the
    /// last sender report; nil before one arrived.
    public func senderTime(ofRTPTimestamp timestamp: UInt32) -> Double? {
        guard let (report, _) = lastSenderReport else { return nil }
        let delta = Int32(bitPattern: timestamp &- report.rtpTimestamp)
        return NTPTime(value: report.ntpTimestamp).unixSeconds + Double(delta) / Double(clockRate)
    }

    /// Round-trip time from a report block about one of our streams (RFC 3550 §6.4.1:
    /// arrival - LSR - DLSR, in compact NTP units); nil without an LSR.
    public static func roundTripTime(of block: RTCPReportBlock, arrival: NTPTime) -> Duration? {
        guard block.lastSenderReport != 0 else { return nil }
        let rtt = Int64(arrival.compact &- block.lastSenderReport &- block.delaySinceLastSenderReport)
        guard rtt >= 0, rtt < 65_536 * 60 else { return nil }
        return .nanoseconds(rtt * 1_000_000_000 / 65_536)
    }
}
