import LiveRoomWire

/// Presentation times for recording one remote user: RTP timestamps turned into times
/// from the user's first packet (video in 90 kHz, audio in 48 kHz samples), so audio and
/// video line up, and never decreasing within a stream, also across re-subscriptions.
///
/// Where a stream starts is when its first packet was captured, by the publisher's sender
/// reports, when the receiver has one: a subscriber's video starts from the publisher's last
/// keyframe, which may be two seconds older than the first audio, and both then still line up.
/// Without one it is when its first packet arrived.
public struct RecordingTimeline: Sendable {
    public enum Kind: Sendable, Hashable {
        case audio
        case video

        var clockRate: Int64 { self == .audio ? 48_000 : 90_000 }
    }

    private struct Stream: Sendable {
        /// pts of the stream's first packet in this subscription.
        var offset: Int64
        var firstExtended: Int64
        var lastTimestamp: UInt32
        var extended: Int64
    }

    /// The most one packet's RTP time may move from the one before (either way) and still be
    /// the same stream's: a larger step is a publisher that started its timestamps over (a
    /// reconnect under the same SSRC), and the stream goes on from its arrival time instead.
    public static let maxStep = Duration.seconds(5)

    private var origin: ContinuousClock.Instant?
    /// The capture time (the publisher's wall clock, Unix seconds) at pts 0: the first packet
    /// with one is placed where it arrived, and the other streams by their capture times.
    private var captureOrigin: Double?
    private var streams: [Kind: Stream] = [:]
    private var lastPTS: [Kind: Int64] = [:]

    public init() {}

    /// A new subscription to the same user: timestamps start over (new SSRCs, new bases).
    public mutating func restart() {
        streams = [:]
    }

    /// A new stream of `kind` (the publisher came back with a new SSRC and timestamp base): it
    /// goes on from its arrival time, after what was written.
    public mutating func restart(_ kind: Kind) {
        streams[kind] = nil
    }

    /// A packet of `kind` arrived: when it starts a stream, the stream's times are counted from
    /// it. A video frame's pts comes when its last packet is in, but its first packet came
    /// nearer its capture (a keyframe spans many packets, sent over tens of milliseconds), so
    /// each packet is noted before its frame is whole.
    public mutating func note(kind: Kind, timestamp: UInt32, arrival: ContinuousClock.Instant) {
        advance(kind: kind, timestamp: timestamp, arrival: arrival)
    }

    /// The pts of a packet or frame with RTP timestamp `timestamp` that arrived at `arrival`,
    /// captured at `captured` by the sender reports when known; nil if it would go back in time
    /// (a late audio packet).
    public mutating func pts(kind: Kind, timestamp: UInt32, arrival: ContinuousClock.Instant, captured: Double? = nil) -> Int64? {
        let stream = advance(kind: kind, timestamp: timestamp, arrival: arrival, captured: captured)
        let pts = stream.offset + stream.extended - stream.firstExtended
        if let last = lastPTS[kind], pts < last || (kind == .audio && pts == last) { return nil }
        lastPTS[kind] = pts
        return pts
    }

    /// The stream of `kind` with `timestamp` taken in: a new one (the first, after a restart,
    /// or after a step over ``maxStep``) counted from `captured` or else `arrival`, after what
    /// was written.
    @discardableResult
    private mutating func advance(kind: Kind, timestamp: UInt32, arrival: ContinuousClock.Instant, captured: Double? = nil) -> Stream {
        let origin = self.origin ?? arrival
        self.origin = origin
        var stream: Stream
        if let existing = streams[kind], abs(Int64(Int32(bitPattern: timestamp &- existing.lastTimestamp))) <= Int64(Self.maxStep.ticks(rate: UInt32(kind.clockRate))) {
            stream = existing
            stream.extended += Int64(Int32(bitPattern: timestamp &- stream.lastTimestamp))
            stream.lastTimestamp = timestamp
        } else {
            var offset = (arrival - origin).ticks(rate: UInt32(kind.clockRate))
            if let captured {
                let captureOrigin = self.captureOrigin ?? captured - (arrival - origin).inSeconds
                self.captureOrigin = captureOrigin
                offset = max(0, Int64(((captured - captureOrigin) * Double(kind.clockRate)).rounded()))
            }
            if let last = lastPTS[kind] { offset = max(offset, last + 1) }
            stream = Stream(offset: offset, firstExtended: 0, lastTimestamp: timestamp, extended: 0)
        }
        streams[kind] = stream
        return stream
    }
}
