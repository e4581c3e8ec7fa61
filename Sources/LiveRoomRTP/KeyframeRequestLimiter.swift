/// Rate-limits keyframe requests (PLI/FIR) for one video stream: requests that arrive at the
/// same moment (subscribers joining, a burst of PLIs) cause one keyframe, not one each.
public struct KeyframeRequestLimiter: Sendable {
    public let interval: Duration
    private var lastSent: ContinuousClock.Instant?
    private var pending = false

    public init(interval: Duration = .milliseconds(500)) {
        self.interval = interval
    }

    /// Whether to act on a request now. A refused request is remembered and ``due(now:)``
    /// reports it once the interval has passed.
    public mutating func request(now: ContinuousClock.Instant) -> Bool {
        if let lastSent, now - lastSent < interval {
            pending = true
            return false
        }
        lastSent = now
        pending = false
        return true
    }

    /// A request that was held back and may go now.
    public mutating func due(now: ContinuousClock.Instant) -> Bool {
        guard pending else { return false }
        return request(now: now)
    }

    /// A keyframe arrived: nothing is pending any more.
    public mutating func keyframeReceived() {
        pending = false
    }
}
