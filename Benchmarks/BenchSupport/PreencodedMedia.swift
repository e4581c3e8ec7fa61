import LiveRoomMedia

/// Media encoded once and replayed in a loop, so the load generator stays light: VP8 from a
/// moving test card with fresh noise in every frame (hard enough that the encoder spends its
/// whole budget), and Opus from a tone with noise.
public struct PreencodedMedia: Sendable {
    public let videoFrames: [EncodedVideoFrame]
    public let audioFrames: [EncodedAudioFrame]
    public let width: Int
    public let height: Int
    public let fps: Int

    /// The real bitrates of what is replayed, in kbit/s of codec payload.
    public var videoKbps: Double { Double(videoFrames.reduce(0) { $0 + $1.data.count } * 8) / (Double(videoFrames.count) / Double(fps)) / 1000 }
    /// Average sizes in bytes of key frames and of the other frames.
    public var frameSizes: (keyframe: Int, interframe: Int) {
        func average(_ frames: [EncodedVideoFrame]) -> Int { frames.isEmpty ? 0 : frames.reduce(0) { $0 + $1.data.count } / frames.count }
        return (average(videoFrames.filter(\.isKeyframe)), average(videoFrames.filter { !$0.isKeyframe }))
    }
    public var audioKbps: Double { Double(audioFrames.reduce(0) { $0 + $1.data.count } * 8) / (Double(audioFrames.count) * 0.02) / 1000 }

    /// Encodes `seconds` of video (after one second for rate control to settle, dropped),
    /// with a keyframe every two seconds so the loop joins cleanly, and `audioFrameCount`
    /// 20 ms Opus frames. `label` is written on the test card.
    public static func make(
        width: Int, height: Int, fps: Int, videoKbps: Int, seconds: Int, audioKbps: Int, audioFrameCount: Int, label: String = "SFU-BENCH"
    ) throws -> PreencodedMedia {
        var random = XorShiftRandom(seed: 0x5EED_1234_ABCD_0001)
        let encoder = try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: videoKbps, keyframeInterval: 60, threads: 1)
        let card = TestCardSource(width: width, height: height, fps: fps, label: label)
        let warmup = fps, keyframeEvery = 2 * fps
        var video: [EncodedVideoFrame] = []
        for index in 0..<(warmup + seconds * fps) {
            var frame = card.nextFrame(index: index)
            random.addNoise(to: &frame.y, amplitude: 20)
            random.addNoise(to: &frame.u, amplitude: 6)
            random.addNoise(to: &frame.v, amplitude: 6)
            let keyframe = index >= warmup && (index - warmup) % keyframeEvery == 0
            let encoded = try encoder.encode(frame, forceKeyframe: keyframe)
            if index >= warmup { video += encoded }
        }

        let tone = ToneSource(frequency: 440, amplitude: 0.2)
        let opus = try OpusEncoder(bitrateKbps: audioKbps)
        var audio: [EncodedAudioFrame] = []
        for index in 0..<audioFrameCount {
            var frame = tone.nextFrame(index: index)
            for i in frame.samples.indices {
                let noise = Int32(truncatingIfNeeded: random.next() % 6001) - 3000
                frame.samples[i] = Int16(clamping: Int32(frame.samples[i]) + noise)
            }
            audio.append(try opus.encode(frame))
        }
        return PreencodedMedia(videoFrames: video, audioFrames: audio, width: width, height: height, fps: fps)
    }
}

/// A small fast generator for noise (xorshift64*); deterministic, so runs are comparable.
public struct XorShiftRandom {
    private var state: UInt64

    public init(seed: UInt64) { state = seed == 0 ? 1 : seed }

    public mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }

    /// Adds uniform noise in ±`amplitude` to every sample, clamped to the limited video range.
    public mutating func addNoise(to plane: inout [UInt8], amplitude: Int) {
        let span = UInt64(2 * amplitude + 1)
        plane.withUnsafeMutableBufferPointer { samples in
            var bits: UInt64 = 0
            var left = 0
            for i in samples.indices {
                if left == 0 {
                    bits = next()
                    left = 8
                }
                let noise = Int(bits & 0xFF) % Int(span) - amplitude
                bits >>= 8
                left -= 1
                samples[i] = UInt8(clamping: min(235, max(16, Int(samples[i]) + noise)))
            }
        }
    }
}

