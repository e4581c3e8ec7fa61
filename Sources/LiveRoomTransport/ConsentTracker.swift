/// ICE consent freshness (RFC 7675) as seen by an ICE-lite server: a peer that has sent no
/// valid STUN binding request for `timeout` has withdrawn consent and is dropped.
public struct ConsentTracker: Sendable {
    public let timeout: Duration
    private var lastConsent: ContinuousClock.Instant

    public init(timeout: Duration = .seconds(30), now: ContinuousClock.Instant) {
        self.timeout = timeout
        self.lastConsent = now
    }

    /// A valid, authenticated binding request arrived.
    public mutating func refreshed(now: ContinuousClock.Instant) {
        if now > lastConsent { lastConsent = now }
    }

    public func isExpired(now: ContinuousClock.Instant) -> Bool {
        now - lastConsent >= timeout
    }

    /// When consent runs out unless refreshed.
    public var deadline: ContinuousClock.Instant { lastConsent + timeout }
}
