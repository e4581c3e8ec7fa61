import Foundation
import LiveRoomProtocol
import LiveRoomMedia
import Synchronization
import Testing

@testable import LiveRoomClientKit

@Suite struct MediaOptionsTests {
    @Test func muteCommandsParse() throws {
        #expect(try ClientCommand.parse("mute-video on") == .request(.room(.muteLocalVideo(true))))
        #expect(try ClientCommand.parse("mute-video off") == .request(.room(.muteLocalVideo(false))))
        #expect(try ClientCommand.parse(" mute-audio on ") == .request(.room(.muteLocalAudio(true))))
        #expect(try ClientCommand.parse("mute-audio off") == .request(.room(.muteLocalAudio(false))))
    }

    @Test(arguments: ["mute-video", "mute-video yes", "mute-audio on off", "mute-audio"])
    func badMuteCommands(line: String) {
        #expect(throws: LiveRoomError.self) { try ClientCommand.parse(line) }
    }

    @Test func publishSources() throws {
        #expect(try PublishSource(parsing: "testsrc") == .testCard)
        #expect(try PublishSource(parsing: "color:FF8000") == .color(0xFF8000))
        #expect(try PublishSource(parsing: "color:#00ff00") == .color(0x00FF00))
        #expect(try PublishSource(parsing: "file:/tmp/a b.mp4") == .file(path: "/tmp/a b.mp4"))
        for bad in ["", "camera", "color:", "color:12345", "color:GGGGGG", "file:"] {
            #expect(throws: MediaOptionError.self) { try PublishSource(parsing: bad) }
        }
    }

    @Test func codecsAndResolutions() throws {
        #expect(try MediaOptions.parseVideoCodec("vp8") == .vp8)
        #expect(try MediaOptions.parseVideoCodec("H264") == .h264)
        #expect(throws: MediaOptionError.self) { try MediaOptions.parseVideoCodec("av1") }
        #expect(try MediaOptions.parseResolution("540x960") == (540, 960))
        #expect(try MediaOptions.parseResolution("1280X720") == (1280, 720))
        for bad in ["540", "540x", "x960", "541x960", "8x8", "99999x2", "axb"] {
            #expect(throws: MediaOptionError.self) { try MediaOptions.parseResolution(bad) }
        }
    }

    @Test func defaultsAndValidation() throws {
        let defaults = MediaOptions()
        #expect(defaults.videoCodec == .vp8 && defaults.width == 540 && defaults.height == 960 && defaults.fps == 15 && defaults.bitrateKbps == 1300)
        try defaults.validate()
        #expect(throws: MediaOptionError.self) { try MediaOptions(fps: 0).validate() }
        #expect(throws: MediaOptionError.self) { try MediaOptions(bitrateKbps: 1).validate() }
    }

    @Test func toneFrequencyRange() throws {
        #expect(MediaOptions().toneFrequency == 440)
        for hz in [50, 500, 2_000, 8_000] { try MediaOptions(toneFrequency: hz).validate() }
        for hz in [0, 49, 8_001, -440] {
            #expect(throws: MediaOptionError.self) { try MediaOptions(toneFrequency: hz).validate() }
        }
    }

    /// The pipeline publishes the tone at `toneFrequency`: decode what it encodes and compare
    /// the power at the chosen frequency with the power at the 440 Hz default.
    @Test func publishPipelineUsesTheToneFrequency() throws {
        let packets = Mutex<[EncodedAudioFrame]>([])
        let failures = Mutex<[String]>([])
        let options = MediaOptions(publish: .color(0xFF0000), width: 64, height: 48, fps: 5, bitrateKbps: 100, toneFrequency: 1_000)
        let pipeline = PublishPipeline(
            options: options, label: "tone", start: .now, videoMuted: true, audioMuted: false,
            deliver: { output in
                if case .audio(let frame) = output { packets.withLock { $0.append(frame) } }
            },
            failure: { message in failures.withLock { $0.append(message) } })
        pipeline.run()
        let deadline = ContinuousClock.now + .seconds(5)
        while packets.withLock({ $0.count }) < 20, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        pipeline.stop()
        #expect(failures.withLock { $0 }.isEmpty)
        let received = packets.withLock { $0 }
        try #require(received.count >= 20)
        let decoder = try OpusDecoder()
        // Skip the codec's first frames (lookahead and ramp-up).
        let mono = try received.prefix(20).map { try decoder.decode($0).channel(0) }.dropFirst(5).flatMap { $0 }
        let chosen = Self.power(mono, frequency: 1_000), standard = Self.power(mono, frequency: 440)
        #expect(chosen > 100 * standard, "power at 1000 Hz \(chosen), at 440 Hz \(standard)")
    }

    /// Goertzel power of `frequency` in 48 kHz samples, normalised by the length.
    private static func power(_ samples: [Int16], frequency: Double) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / 48_000)
        var s1 = 0.0, s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        return (s1 * s1 + s2 * s2 - coefficient * s1 * s2) / Double(samples.count * samples.count)
    }
}
