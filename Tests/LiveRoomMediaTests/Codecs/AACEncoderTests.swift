import CFFmpeg
import Foundation
import Testing
@testable import LiveRoomMedia

@Suite struct AACEncoderTests {
    /// Decodes raw AAC frames with libavcodec's `aac` decoder into interleaved Int16.
    static func decode(_ frames: [EncodedAACFrame], config: [UInt8], sampleRate: Int, channels: Int) throws -> [Int16] {
        let decoder = try FFmpegCodecContext(decoderFor: AV_CODEC_ID_AAC)
        let c = decoder.pointer
        c.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&c.pointee.ch_layout, Int32(channels))
        let extradata = av_mallocz(config.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))!.assumingMemoryBound(to: UInt8.self)
        config.withUnsafeBufferPointer { extradata.update(from: $0.baseAddress!, count: config.count) }
        c.pointee.extradata = extradata
        c.pointee.extradata_size = Int32(config.count)
        try decoder.open()
        let packet = try FFmpegPacket(), frame = try FFmpegFrame()
        let resampler = FFmpegResampler(outputRate: sampleRate, outputChannels: channels)
        var output: [Int16] = []
        for aac in frames {
            try packet.fill(with: aac.data)
            try decoder.send(packet)
            packet.unref()
            while try decoder.receive(into: frame) == .got {
                output += try resampler.convert(frame)
                frame.unref()
            }
        }
        return output
    }

    @Test(arguments: [(48_000, 2, [UInt8](arrayLiteral: 0x11, 0x90)), (44_100, 1, [0x12, 0x08])])
    func encodesAToneThatDecodesBack(sampleRate: Int, channels: Int, config: [UInt8]) throws {
        let encoder = try AACEncoder(sampleRate: sampleRate, channels: channels, bitrateKbps: 96)
        // AAC-LC, the rate index and channels; the native encoder may append an SBR sync extension saying "no SBR".
        #expect(Array(encoder.audioSpecificConfig.prefix(2)) == config)
        #expect(encoder.primingSamples == 1024)
        let tone = ToneSource(frequency: 1000, sampleRate: sampleRate, channels: channels, amplitude: 0.3)
        var frames: [EncodedAACFrame] = []
        var input: [Int16] = []
        for i in 0..<50 {  // 1 s in 20 ms frames
            let frame = tone.nextFrame(index: i)
            input += frame.channel(0)
            frames += try encoder.encode(frame)
        }
        frames += try encoder.flush()
        // 1 s plus priming, rounded up to whole 1024-sample frames.
        let expectedCount = (sampleRate + 1024 + 1023) / 1024
        #expect(abs(frames.count - expectedCount) <= 1, "\(frames.count) AAC frames")
        #expect(frames.first?.pts == -1024)
        for (a, b) in zip(frames, frames.dropFirst()) { #expect(b.pts - a.pts == 1024) }
        #expect(frames.allSatisfy { $0.duration == 1024 && $0.sampleRate == sampleRate && !$0.data.isEmpty })
        let bytes = frames.reduce(0) { $0 + $1.data.count }
        #expect(bytes > 4_000 && bytes < 20_000, "\(bytes) bytes for 1 s at 96 kbps")

        let decoded = try Self.decode(frames, config: encoder.audioSpecificConfig, sampleRate: sampleRate, channels: channels)
        let left = stride(from: 0, to: decoded.count, by: channels).map { decoded[$0] }
        #expect(left.count >= sampleRate)
        // Skip the priming and the encoder's ramp-up; compare the steady tone.
        let steady = Array(left[(2048 + sampleRate / 10)..<(sampleRate)])
        let power = TestSupport.goertzelPower(steady, frequency: 1000, sampleRate: Double(sampleRate))
        let reference = TestSupport.goertzelPower(Array(input[(sampleRate / 10)..<(sampleRate - 2048)]), frequency: 1000, sampleRate: Double(sampleRate))
        #expect(power / reference > 0.7 && power / reference < 1.3, "1 kHz power ratio \(power / reference)")
        #expect(TestSupport.goertzelPower(steady, frequency: 2500, sampleRate: Double(sampleRate)) < reference * 0.01)
    }

    @Test func rejectsAudioInAnotherFormat() throws {
        let encoder = try AACEncoder(sampleRate: 44_100, channels: 2)
        #expect(throws: MediaFormatError.self) { try encoder.encode(ToneSource().nextFrame(index: 0)) }
        #expect(throws: MediaFormatError.self) { try AACEncoder(sampleRate: 48_000, channels: 3) }
    }

    @Test func h264EncoderForFLVHasParameterSetsAndTheGOP() throws {
        let encoder = try H264Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 500, gopSeconds: 1, globalHeader: true)
        #expect(encoder.gopFrames == 15)
        let sets = try #require(encoder.parameterSets)
        let types = AnnexB.nalUnits(in: sets).compactMap { AnnexB.type(of: $0) }
        #expect(types == [7, 8])
        let size = try VideoSize(keyframe: sets, codec: .h264)
        #expect(size == VideoSize(width: 320, height: 240))
        let card = TestCardSource(width: 320, height: 240, fps: 15, label: "gop")
        var keyframes: [Int] = []
        let decoder = try H264Decoder()
        var decoded = 0
        for i in 0..<31 {
            for frame in try encoder.encode(card.nextFrame(index: i)) {
                #expect(frame.pts == Int64(i) * 6000, "no reordering: pts in input order")
                if frame.isKeyframe { keyframes.append(i) }
                decoded += try decoder.decode(frame).count
            }
        }
        #expect(keyframes == [0, 15, 30])
        #expect(decoded == 31)
        // The plain encoder has no out-of-band parameter sets.
        #expect(try H264Encoder(width: 160, height: 120, fps: 15, bitrateKbps: 200).parameterSets == nil)
    }
}
