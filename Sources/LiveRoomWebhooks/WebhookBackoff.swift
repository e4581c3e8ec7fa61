/// How long a failed delivery waits before its next attempt: 0.5 s doubling to at most 5 s,
/// each wait shortened by up to 20 % at random so that rooms failing together do not retry
/// together (a wait is never longer than ``maximum``).
public struct WebhookBackoff: Sendable, Hashable {
    public var first: Duration
    public var maximum: Duration
    /// The share of the wait that jitter may take away (0.2: up to 20 %).
    public var jitter: Double

    public init(first: Duration = .milliseconds(500), maximum: Duration = .seconds(5), jitter: Double = 0.2) {
        self.first = first
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The wait after the `failures`-th failure in a row (1 for the first), with `random` in
    /// 0...1 choosing the jitter (0: none, 1: the most).
    public func delay(afterFailures failures: Int, random: Double) -> Duration {
        let doublings = min(max(failures - 1, 0), 16)
        var base = first * (1 << doublings)
        if base > maximum { base = maximum }
        // In thousandths, so that the waits are exact.
        let taken = Int64((jitter * min(max(random, 0), 1) * 1000).rounded())
        return base * (1000 - min(max(taken, 0), 1000)) / 1000
    }
}
