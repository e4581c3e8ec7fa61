/// Cumulative media counters at one moment; ``StatisticsCalculator`` turns two of them into
/// an `onStatistics` event.
public struct StatisticsSnapshot: Sendable, Hashable {
    /// What we publish.
    public struct Local: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public var videoFrames: UInt64 = 0
        public var videoBytes: UInt64 = 0
        public var audioBytes: UInt64 = 0

        public init(width: Int, height: Int, videoFrames: UInt64 = 0, videoBytes: UInt64 = 0, audioBytes: UInt64 = 0) {
            self.width = width
            self.height = height
            self.videoFrames = videoFrames
            self.videoBytes = videoBytes
            self.audioBytes = audioBytes
        }
    }

    /// What we receive from one remote anchor.
    public struct Remote: Sendable, Hashable {
        public var userId: String
        public var width = 0
        public var height = 0
        /// Complete frames released by the assembler.
        public var videoFrames: UInt64 = 0
        public var videoBytes: UInt64 = 0
        public var audioBytes: UInt64 = 0
        /// Packets expected from sequence numbers, audio and video.
        public var packetsExpected: UInt64 = 0
        /// Packets received, retransmissions included.
        public var packetsReceived: UInt64 = 0
        /// Packets found missing on arrival (before retransmission).
        public var packetsMissing: UInt64 = 0
        /// Sum over released frames of how long each waited in the jitter buffer, in ms.
        public var jitterBufferDelayTotal: Double = 0
        public var jitterBufferFrames: UInt64 = 0
        /// Sum of end-to-end delays (sender's capture to frame completion), in ms.
        public var point2PointDelayTotal: Double = 0
        public var point2PointSamples: UInt64 = 0

        public init(userId: String) {
            self.userId = userId
        }
    }

    public var time: ContinuousClock.Instant
    public var local: Local?
    public var remotes: [Remote]
    /// Round-trip time in ms, if known.
    public var roundTripTime: Double?
    /// Loss the server reports for what we send, in percent.
    public var upLoss: Double

    public init(time: ContinuousClock.Instant, local: Local? = nil, remotes: [Remote] = [], roundTripTime: Double? = nil, upLoss: Double = 0) {
        self.time = time
        self.local = local
        self.remotes = remotes
        self.roundTripTime = roundTripTime
        self.upLoss = upLoss
    }
}
