import LiveRoomWire

/// Lets each SEI message through once per sender, however many frames repeat it and whichever
/// copy arrives first. Tagged messages (``SEITag``) are known by the sender's number for them;
/// others by their bytes, seen again within ``window`` of their last sighting. Pure: time is a parameter; bounded in
/// memory whatever the senders send.
public struct SEIDeduplicator: Sendable {
    /// How long an untagged message's bytes count as a repeat.
    public let window: Duration
    /// How many numbers (and untagged messages) are remembered per sender.
    public let memory: Int
    private var tagged: [String: [UInt32]] = [:]
    private var untagged: [String: [(message: SEIMessage, at: ContinuousClock.Instant)]] = [:]
    /// The most senders remembered; the oldest is forgotten past it.
    public static let maxSenders = 64
    private var senders: [String] = []

    public init(window: Duration = .seconds(3), memory: Int = 256) {
        self.window = window
        self.memory = memory
    }

    /// Whether `message` from `sender` is new (and remembers it).
    public mutating func isNew(_ message: TaggedSEIMessage, from sender: String, now: ContinuousClock.Instant) -> Bool {
        remember(sender)
        if let tag = message.tag {
            var seen = tagged[sender, default: []]
            guard !seen.contains(tag.sequence) else { return false }
            seen.append(tag.sequence)
            if seen.count > memory { seen.removeFirst(seen.count - memory) }
            tagged[sender] = seen
            return true
        }
        var recent = untagged[sender, default: []].filter { now - $0.at < window }
        // A repeat keeps its message remembered: one sent every second is reported once.
        if let index = recent.firstIndex(where: { $0.message == message.message }) {
            recent[index].at = now
            untagged[sender] = recent
            return false
        }
        recent.append((message.message, now))
        if recent.count > memory { recent.removeFirst(recent.count - memory) }
        untagged[sender] = recent
        return true
    }

    private mutating func remember(_ sender: String) {
        guard !senders.contains(sender) else { return }
        senders.append(sender)
        if senders.count > Self.maxSenders {
            let oldest = senders.removeFirst()
            tagged[oldest] = nil
            untagged[oldest] = nil
        }
    }
}
