import LiveRoomWire

/// When a synthetic source's frames are due, and their presentation times.
///
/// Video frame `i` is due at `start + i / fps` with `pts = i * 90000 / fps` (90 kHz); audio
/// frame `j` (20 ms of 48 kHz) is due at `start + 20 ms * j` with `pts = 960 * j`. The
/// timestamps therefore follow the wall clock, which is what the sender reports claim. A
/// pacer that fell behind (the encoder stalled) skips frames rather than bursting them.
public struct PublishPacer: Sendable {
    /// A frame to produce now.
    public enum Work: Sendable, Hashable {
        case video(index: Int, pts: Int64)
        case audio(index: Int, pts: Int64)
    }

    public let fps: Int
    public let start: ContinuousClock.Instant
    /// How late a frame may be before the pacer skips ahead to the current one.
    public let maximumLateness: Duration
    public private(set) var nextVideoIndex = 0
    public private(set) var nextAudioIndex = 0

    public init(fps: Int, start: ContinuousClock.Instant, maximumLateness: Duration = .milliseconds(200)) {
        precondition(fps > 0, "fps must be positive")
        self.fps = fps
        self.start = start
        self.maximumLateness = maximumLateness
    }

    /// The 90 kHz presentation time of video frame `index`.
    public static func videoPTS(index: Int, fps: Int) -> Int64 { Int64(index) * 90_000 / Int64(fps) }
    /// The 48 kHz presentation time of audio frame `index`.
    public static func audioPTS(index: Int) -> Int64 { Int64(index) * 960 }

    /// When media time `pts` of a `clockRate` clock is due.
    public static func due(start: ContinuousClock.Instant, pts: Int64, clockRate: Int64) -> ContinuousClock.Instant {
        start + .nanoseconds(pts * 1_000_000_000 / clockRate)
    }

    public func videoDue(index: Int) -> ContinuousClock.Instant {
        Self.due(start: start, pts: Self.videoPTS(index: index, fps: fps), clockRate: 90_000)
    }

    public func audioDue(index: Int) -> ContinuousClock.Instant {
        Self.due(start: start, pts: Self.audioPTS(index: index), clockRate: 48_000)
    }

    /// When the next frame of either kind is due.
    public var nextDeadline: ContinuousClock.Instant { min(videoDue(index: nextVideoIndex), audioDue(index: nextAudioIndex)) }

    /// The frames due at `now`, audio and video in deadline order.
    public mutating func due(now: ContinuousClock.Instant) -> [Work] {
        var work: [(ContinuousClock.Instant, Work)] = []
        if now - videoDue(index: nextVideoIndex) > maximumLateness {
            // Skip to the newest frame that is due.
            nextVideoIndex = max(nextVideoIndex, Int((now - start).ticks(rate: UInt32(fps))))
        }
        while videoDue(index: nextVideoIndex) <= now {
            work.append((videoDue(index: nextVideoIndex), .video(index: nextVideoIndex, pts: Self.videoPTS(index: nextVideoIndex, fps: fps))))
            nextVideoIndex += 1
        }
        if now - audioDue(index: nextAudioIndex) > maximumLateness {
            nextAudioIndex = max(nextAudioIndex, Int((now - start).ticks(rate: 50)))
        }
        while audioDue(index: nextAudioIndex) <= now {
            work.append((audioDue(index: nextAudioIndex), .audio(index: nextAudioIndex, pts: Self.audioPTS(index: nextAudioIndex))))
            nextAudioIndex += 1
        }
        return work.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
