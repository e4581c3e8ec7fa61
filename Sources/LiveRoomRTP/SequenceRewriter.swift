import LiveRoomWire

/// Keeps one outgoing RTP stream continuous for one subscriber while what feeds it changes:
/// a publisher that reconnects (new SSRC, new random sequence and timestamp bases), mutes and
/// unmutes, or is replaced by another source in the same slot.
///
/// Within one source, output sequence numbers and timestamps are the input plus a fixed
/// offset (so reordering and loss pass through and NACKs map back with ``sourceSequence(for:)``).
/// When the source changes, the new offset continues from the last output: the sequence
/// number goes up by one and the timestamp by the wall time that passed, in the stream's clock.
public struct SequenceRewriter: Sendable {
    /// RTP clock rate of the stream (90 000 for video, 48 000 for Opus).
    public let clockRate: UInt32
    private var source: UInt32?
    private var sequenceOffset: UInt16 = 0
    private var timestampOffset: UInt32 = 0
    private var lastOutputSequence: UInt16?
    private var lastOutputTimestamp: UInt32 = 0
    private var lastOutputTime: ContinuousClock.Instant?
    /// Highest input sequence seen from the current source (by RTP's wrapping order).
    private var highestInput: UInt16 = 0

    /// The first sequence number is random in the lower half of the range: an SRTP receiver
    /// takes the first packet it decrypts to be in roll-over 0 (RFC 3711 §3.3.1), so one that
    /// misses the first packets of a stream that starts just below 65535 and wraps would
    /// never decrypt it. From the lower half, at least 32 768 packets may go missing first.
    public static func randomInitialSequence() -> UInt16 { .random(in: 0...0x7FFF) }

    public init(clockRate: UInt32, initialSequence: UInt16 = randomInitialSequence(), initialTimestamp: UInt32 = .random(in: 0...UInt32.max)) {
        self.clockRate = clockRate
        // The first output continues from these as if a packet had just been sent.
        self.lastOutputSequence = initialSequence &- 1
        self.lastOutputTimestamp = initialTimestamp
    }

    /// The sequence number and timestamp to send for an input packet from `ssrc`.
    public mutating func rewrite(ssrc: UInt32, sequence: UInt16, timestamp: UInt32, now: ContinuousClock.Instant) -> (sequence: UInt16, timestamp: UInt32) {
        if source != ssrc {
            // A new source: continue one after the last output, timestamps advanced by elapsed time.
            let nextSequence = (lastOutputSequence ?? 0) &+ 1
            var nextTimestamp = lastOutputTimestamp &+ 1
            if let lastOutputTime {
                let ticks = max(0, (now - lastOutputTime).ticks(rate: clockRate))
                nextTimestamp = lastOutputTimestamp &+ max(1, UInt32(truncatingIfNeeded: ticks))
            }
            source = ssrc
            sequenceOffset = nextSequence &- sequence
            timestampOffset = nextTimestamp &- timestamp
            highestInput = sequence
        }
        let outSequence = sequence &+ sequenceOffset
        let outTimestamp = timestamp &+ timestampOffset
        if sequence.isNewer(than: highestInput) || sequence == highestInput {
            highestInput = sequence
            lastOutputSequence = outSequence
            lastOutputTimestamp = outTimestamp
            lastOutputTime = now
        }
        return (outSequence, outTimestamp)
    }

    /// The current source's sequence number for an output sequence number (to serve a NACK).
    public func sourceSequence(for outputSequence: UInt16) -> UInt16? {
        guard source != nil else { return nil }
        return outputSequence &- sequenceOffset
    }

    /// The output timestamp for a timestamp of the current source (to rewrite its sender reports).
    public func outputTimestamp(for sourceTimestamp: UInt32) -> UInt32? {
        guard source != nil else { return nil }
        return sourceTimestamp &+ timestampOffset
    }

    /// The next packet starts a new stretch of the stream (after a pause), as a new source
    /// would: one sequence number after the last one sent, timestamps advanced by the time passed.
    public mutating func sourceChanged() {
        source = nil
    }

    /// The SSRC currently feeding the stream.
    public var currentSource: UInt32? { source }
}
