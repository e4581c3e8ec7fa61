/// A block of uncompressed audio: interleaved signed 16-bit samples.
///
/// `pts` counts samples per channel in the `sampleRate` clock (for 48 kHz this is the
/// RTP Opus clock), so consecutive 20 ms frames at 48 kHz differ by 960.
public struct AudioFrame: Sendable, Equatable {
    /// Interleaved samples, `samplesPerChannel * channels` values.
    public var samples: [Int16]
    /// Samples per second per channel.
    public let sampleRate: Int
    /// Number of interleaved channels.
    public let channels: Int
    /// Presentation time in samples at `sampleRate`.
    public var pts: Int64

    /// For callers that built `samples` to fit.
    init(validSamples samples: [Int16], sampleRate: Int, channels: Int, pts: Int64) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
        self.pts = pts
    }

    /// Samples per channel in this frame.
    public var samplesPerChannel: Int { samples.count / channels }

    /// Wraps interleaved samples; throws if their count is not a multiple of `channels`.
    public init(samples: [Int16], sampleRate: Int = 48_000, channels: Int = 2, pts: Int64) throws {
        guard sampleRate > 0, channels > 0, samples.count % channels == 0 else {
            throw MediaFormatError("\(samples.count) samples do not fill \(channels) channels at \(sampleRate) Hz")
        }
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
        self.pts = pts
    }

    /// The samples of one channel, de-interleaved.
    public func channel(_ index: Int) -> [Int16] {
        precondition(index >= 0 && index < channels, "channel \(index) of \(channels)")
        return stride(from: index, to: samples.count, by: channels).map { samples[$0] }
    }
}
