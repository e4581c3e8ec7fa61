/// Converts interleaved Int16 audio to another sample rate and channel count with
/// libswresample (e.g. the 48 kHz stereo mix to 44.1 kHz stereo or mono for a CDN).
///
/// The resampler keeps a few samples of history, so an output frame may be a little
/// shorter or longer than the input would suggest; over time the counts match the rate
/// ratio. Output `pts` counts output samples, starting from the first input's `pts`
/// converted to the output rate. Not thread-safe.
public final class AudioResampler {
    /// Output samples per second per channel.
    public let outputRate: Int
    /// Output channels (1 or 2; more take FFmpeg's default layout for the count).
    public let outputChannels: Int
    private let resampler: FFmpegResampler
    private var nextPTS: Int64?

    public init(outputRate: Int, outputChannels: Int) throws {
        guard outputRate > 0, (1...8).contains(outputChannels) else {
            throw MediaFormatError("invalid resampler output \(outputRate) Hz x \(outputChannels)")
        }
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        resampler = FFmpegResampler(outputRate: outputRate, outputChannels: outputChannels)
    }

    /// Converts one frame. A frame already in the output format passes through unchanged.
    public func convert(_ frame: AudioFrame) throws -> AudioFrame {
        let pts = nextPTS ?? frame.pts * Int64(outputRate) / Int64(frame.sampleRate)
        let samples: [Int16]
        if frame.sampleRate == outputRate && frame.channels == outputChannels {
            samples = frame.samples
        } else {
            samples = try resampler.convert(interleaved: frame.samples, sampleRate: frame.sampleRate, channels: frame.channels)
        }
        nextPTS = pts + Int64(samples.count / outputChannels)
        return AudioFrame(validSamples: samples, sampleRate: outputRate, channels: outputChannels, pts: pts)
    }
}
