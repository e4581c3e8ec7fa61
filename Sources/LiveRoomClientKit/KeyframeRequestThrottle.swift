/// Lets at most one keyframe through per interval: PLI and FIR from the server force a
/// keyframe, but a burst of requests forces only one.
public struct KeyframeRequestThrottle: Sendable {
    public let interval: Duration
    private var last: ContinuousClock.Instant?

    public init(interval: Duration = .milliseconds(500)) {
        self.interval = interval
    }

    /// Whether to force a keyframe for a request arriving at `now`.
    public mutating func shouldForce(now: ContinuousClock.Instant) -> Bool {
        if let last, now - last < interval { return false }
        last = now
        return true
    }
}
