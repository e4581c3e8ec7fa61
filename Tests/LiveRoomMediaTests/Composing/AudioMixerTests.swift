import Foundation
import Testing
@testable import LiveRoomMedia

@Suite struct AudioMixerTests {
    static func tone(_ frequency: Double, amplitude: Double, frames: Int, sampleRate: Int = 48_000, channels: Int = 2) -> [AudioFrame] {
        let source = ToneSource(frequency: frequency, sampleRate: sampleRate, channels: channels, amplitude: amplitude)
        return (0..<frames).map { source.nextFrame(index: $0) }
    }

    @Test func mixesWithPerInputVolume() throws {
        let a = Self.tone(440, amplitude: 0.3, frames: 25)
        let b = Self.tone(1000, amplitude: 0.3, frames: 25)
        var mixer = AudioMixer()
        var mixed: [Int16] = []
        for i in 0..<25 {
            let frame = try mixer.mix([.init(frame: a[i], volume: 100), .init(frame: b[i], volume: 50)], pts: Int64(i) * 960)
            #expect(frame.sampleRate == 48_000 && frame.channels == 2 && frame.samplesPerChannel == 960 && frame.pts == Int64(i) * 960)
            mixed += frame.channel(0)
        }
        let left440 = a.flatMap { $0.channel(0) }, left1000 = b.flatMap { $0.channel(0) }
        let p440 = TestSupport.goertzelPower(mixed, frequency: 440, sampleRate: 48_000)
        let p1000 = TestSupport.goertzelPower(mixed, frequency: 1000, sampleRate: 48_000)
        let ref440 = TestSupport.goertzelPower(left440, frequency: 440, sampleRate: 48_000)
        let ref1000 = TestSupport.goertzelPower(left1000, frequency: 1000, sampleRate: 48_000)
        // Volume 100 keeps the power; volume 50 halves the amplitude, a quarter of the power.
        #expect(abs(p440 / ref440 - 1) < 0.02, "440 Hz power ratio \(p440 / ref440)")
        #expect(abs(p1000 / ref1000 - 0.25) < 0.01, "1 kHz power ratio \(p1000 / ref1000)")
        #expect(mixer.clippedSamples == 0)
    }

    @Test func saturatesInsteadOfWrapping() throws {
        let loud = Self.tone(440, amplitude: 0.8, frames: 5)
        var mixer = AudioMixer()
        for i in 0..<5 {
            let frame = try mixer.mix([.init(frame: loud[i]), .init(frame: loud[i]), .init(frame: loud[i])], pts: 0)
            for (mixed, original) in zip(frame.samples, loud[i].samples) {
                // Same sign as the input (no wrap-around), and at least as loud.
                #expect(original == 0 || (mixed > 0) == (original > 0))
                #expect(abs(Int(mixed)) >= min(abs(Int(original)) * 3, 32_767))
            }
            #expect(frame.samples.contains(.max) && frame.samples.contains(.min))
        }
        #expect(mixer.clippedSamples > 0)
        let rms = TestSupport.rms(try mixer.mix([.init(frame: loud[0]), .init(frame: loud[0])], pts: 0).samples)
        #expect(rms > TestSupport.rms(loud[0].samples) * 1.3 && rms <= 32_768)
    }

    @Test func silenceAndMismatchedInputs() throws {
        var mixer = AudioMixer()
        let tone = Self.tone(440, amplitude: 0.5, frames: 1)[0]
        #expect(try mixer.mix([], pts: 5).samples.allSatisfy { $0 == 0 })
        #expect(try mixer.mix([.init(frame: tone, volume: 0)], pts: 5).samples.allSatisfy { $0 == 0 })
        let mono = Self.tone(440, amplitude: 0.5, frames: 1, channels: 1)[0]
        #expect(throws: MediaFormatError.self) { try mixer.mix([.init(frame: mono)], pts: 0) }
        #expect(throws: MediaFormatError.self) { try mixer.mix([.init(frame: tone, volume: 101)], pts: 0) }
    }

    @Test(arguments: [(44_100, 1), (44_100, 2), (48_000, 1), (48_000, 2)])
    func resamplesToTheOutputFormat(rate: Int, channels: Int) throws {
        let input = Self.tone(1000, amplitude: 0.3, frames: 50)
        let resampler = try AudioResampler(outputRate: rate, outputChannels: channels)
        var output: [Int16] = []
        var expectedPTS: Int64 = 0
        for frame in input {
            let converted = try resampler.convert(frame)
            #expect(converted.sampleRate == rate && converted.channels == channels)
            #expect(converted.pts == expectedPTS)
            expectedPTS += Int64(converted.samplesPerChannel)
            output += converted.channel(0)
        }
        // One second in, about one second out (the resampler holds back a few samples).
        #expect(abs(output.count - rate) <= 64, "\(output.count) samples for 1 s at \(rate) Hz")
        let tail = Array(output[(rate / 10)...])
        let power = TestSupport.goertzelPower(tail, frequency: 1000, sampleRate: Double(rate))
        let reference = TestSupport.goertzelPower(Array(input.flatMap { $0.channel(0) }[4_800...]), frequency: 1000, sampleRate: 48_000)
        #expect(abs(power / reference - 1) < 0.1, "1 kHz power ratio \(power / reference)")
        #expect(TestSupport.goertzelPower(tail, frequency: 3000, sampleRate: Double(rate)) < reference * 0.001)
    }
}
