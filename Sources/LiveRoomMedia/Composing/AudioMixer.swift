/// Mixes several audio frames into one: each input is scaled by its volume, the inputs
/// are summed, and the sum saturates at the Int16 range instead of wrapping.
///
/// All inputs and the output share one format (by default 48 kHz stereo in 20 ms
/// frames, as the room's decoders produce). Convert the result to the output rate and
/// channel count with an ``AudioResampler``.
public struct AudioMixer: Sendable {
    /// One input of a mix.
    public struct Input: Sendable {
        /// The samples; must have the mixer's format.
        public var frame: AudioFrame
        /// Volume in percent, 0 (muted) to 100 (as is).
        public var volume: Int

        public init(frame: AudioFrame, volume: Int = 100) {
            self.frame = frame
            self.volume = volume
        }
    }

    /// Samples per second per channel.
    public let sampleRate: Int
    /// Interleaved channels.
    public let channels: Int
    /// Samples per channel in each frame.
    public let samplesPerFrame: Int
    /// Output samples that saturated so far, over all mixes.
    public private(set) var clippedSamples = 0

    public init(sampleRate: Int = 48_000, channels: Int = 2, samplesPerFrame: Int = 960) {
        precondition(sampleRate > 0 && channels > 0 && samplesPerFrame > 0, "invalid mixer format")
        self.sampleRate = sampleRate
        self.channels = channels
        self.samplesPerFrame = samplesPerFrame
    }

    /// Mixes the inputs into one frame stamped `pts`; no inputs give silence.
    /// - Throws: ``MediaFormatError`` if an input has another format or length, or a
    ///   volume outside 0...100.
    public mutating func mix(_ inputs: [Input], pts: Int64) throws -> AudioFrame {
        let count = samplesPerFrame * channels
        var sum = [Int32](repeating: 0, count: count)
        for input in inputs {
            let frame = input.frame
            guard frame.sampleRate == sampleRate, frame.channels == channels, frame.samples.count == count else {
                throw MediaFormatError(
                    "mixer input is \(frame.samplesPerChannel) samples at \(frame.sampleRate) Hz x \(frame.channels), mixer needs \(samplesPerFrame) at \(sampleRate) Hz x \(channels)")
            }
            guard (0...100).contains(input.volume) else { throw MediaFormatError("volume \(input.volume) outside 0...100") }
            guard input.volume > 0 else { continue }
            let volume = Int32(input.volume)
            frame.samples.withUnsafeBufferPointer { samples in
                sum.withUnsafeMutableBufferPointer { sum in
                    if volume == 100 {
                        for i in 0..<count { sum[i] &+= Int32(samples[i]) }
                    } else {
                        for i in 0..<count { sum[i] &+= Int32(samples[i]) &* volume / 100 }
                    }
                }
            }
        }
        var clipped = 0
        let samples = [Int16](unsafeUninitializedCapacity: count) { buffer, initialized in
            for i in 0..<count {
                let value = sum[i]
                if value > Int32(Int16.max) {
                    buffer[i] = .max
                    clipped += 1
                } else if value < Int32(Int16.min) {
                    buffer[i] = .min
                    clipped += 1
                } else {
                    buffer[i] = Int16(truncatingIfNeeded: value)
                }
            }
            initialized = count
        }
        clippedSamples += clipped
        return AudioFrame(validSamples: samples, sampleRate: sampleRate, channels: channels, pts: pts)
    }
}
