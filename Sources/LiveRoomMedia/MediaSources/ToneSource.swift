import Foundation

/// A sine tone in 20 ms frames of interleaved Int16, the same signal on every channel.
///
/// Frame `index` starts at sample `index * samplesPerFrame`; the phase is computed from
/// that absolute sample number, so frames join without clicks and repeat exactly.
public struct ToneSource: Sendable {
    /// Tone frequency in Hz.
    public let frequency: Double
    /// Samples per second per channel.
    public let sampleRate: Int
    /// Number of interleaved channels.
    public let channels: Int
    /// Peak level as a fraction of full scale.
    public let amplitude: Double
    /// Samples per channel in each frame: 20 ms.
    public var samplesPerFrame: Int { sampleRate / 50 }

    public init(frequency: Double = 440, sampleRate: Int = 48_000, channels: Int = 2, amplitude: Double = 0.3) {
        precondition(sampleRate >= 50 && channels > 0 && amplitude >= 0 && amplitude <= 1, "invalid tone parameters")
        self.frequency = frequency
        self.sampleRate = sampleRate
        self.channels = channels
        self.amplitude = amplitude
    }

    /// Frame `index` (0-based), with `pts` in samples.
    public func nextFrame(index: Int) -> AudioFrame {
        let n = samplesPerFrame, first = Int64(index) * Int64(n)
        var samples = [Int16](repeating: 0, count: n * channels)
        let peak = amplitude * Double(Int16.max)
        for i in 0..<n {
            let cycles = Double(first + Int64(i)) * frequency / Double(sampleRate)
            let value = Int16((peak * sin(2 * Double.pi * (cycles - cycles.rounded(.down)))).rounded())
            for c in 0..<channels { samples[i * channels + c] = value }
        }
        return AudioFrame(validSamples: samples, sampleRate: sampleRate, channels: channels, pts: first)
    }
}
