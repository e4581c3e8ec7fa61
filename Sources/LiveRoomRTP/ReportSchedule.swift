/// When the next periodic RTCP report (SR or RR) of a peer connection is due: the first at
/// once, then one per interval. The SFU and the client keep their reports on it.
public struct ReportSchedule: Sendable {
    public let interval: Duration
    private var next: ContinuousClock.Instant?

    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether a report is due at `now`; when it is, the next one is due an interval later.
    public mutating func due(now: ContinuousClock.Instant) -> Bool {
        if let next, now < next { return false }
        next = now + interval
        return true
    }
}
