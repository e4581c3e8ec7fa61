/// A token bucket: `capacity` tokens, refilled at `ratePerSecond`. Time is a parameter.
public struct TokenBucket: Sendable, Hashable {
    public let capacity: Double
    public let ratePerSecond: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant?

    public init(capacity: Double, ratePerSecond: Double) {
        self.capacity = capacity
        self.ratePerSecond = ratePerSecond
        self.tokens = capacity
    }

    /// Whether `cost` tokens are available at `now` (without taking them).
    public mutating func canTake(_ cost: Double, now: ContinuousClock.Instant) -> Bool {
        refill(now: now)
        return tokens >= cost
    }

    /// Takes `cost` tokens; the caller checked ``canTake(_:now:)`` at the same instant.
    public mutating func take(_ cost: Double, now: ContinuousClock.Instant) {
        refill(now: now)
        tokens -= cost
    }

    private mutating func refill(now: ContinuousClock.Instant) {
        if let last, now > last {
            let elapsed = now - last
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            tokens = min(capacity, tokens + seconds * ratePerSecond)
        }
        if last == nil || now > last! { last = now }
    }
}

/// TRTC's custom message limits per client: 30 messages a second and 8 KB a second, which
/// SEI messages share (the server counts a member's custom messages; the CLI counts its own
/// custom and SEI messages together).
public struct CustomMessageLimiter: Sendable, Hashable {
    public static let messagesPerSecond = 30.0
    public static let bytesPerSecond = 8192.0

    private var messages = TokenBucket(capacity: messagesPerSecond, ratePerSecond: messagesPerSecond)
    private var bytes = TokenBucket(capacity: bytesPerSecond, ratePerSecond: bytesPerSecond)

    public init() {}

    /// Admits a message of `size` bytes, or says which limit it would break.
    /// - Parameter what: the kind of message, for the refusal ("custom message", "SEI message").
    public mutating func admit(size: Int, what: String = "custom message", now: ContinuousClock.Instant) throws(LiveRoomError) {
        guard messages.canTake(1, now: now) else {
            throw LiveRoomError(
                ErrorCode.customMessageRateLimited,
                "\(what) refused: over \(Int(Self.messagesPerSecond)) messages per second")
        }
        guard bytes.canTake(Double(size), now: now) else {
            throw LiveRoomError(
                ErrorCode.customMessageRateLimited,
                "\(what) refused: over \(Int(Self.bytesPerSecond)) bytes per second")
        }
        messages.take(1, now: now)
        bytes.take(Double(size), now: now)
    }

    /// Counts a message sent without asking (one the server judges), as far as tokens remain.
    public mutating func record(size: Int, now: ContinuousClock.Instant) {
        if messages.canTake(1, now: now) { messages.take(1, now: now) }
        if bytes.canTake(Double(size), now: now) { bytes.take(Double(size), now: now) }
    }
}
