import Foundation
import LiveRoomWire
import Testing
@testable import LiveRoomMedia
import TestTools

@Suite struct MediaRecorderTests {
    static func probe(_ path: String) throws -> (streams: [ProbedStream], duration: Double?) {
        let result = try RequiredTool.ffprobe.run(["-v", "error", "-show_streams", "-show_format", "-count_frames", "-of", "json", path])
        try #require(result.status == 0, "ffprobe: \(result.errors)")
        #expect(result.errors.isEmpty, "ffprobe reported: \(result.errors)")
        let probe = try Probe(json: result.output)
        return (probe.streams, probe.format?.duration.flatMap(Double.init))
    }

    /// 30 frames of test card at 15 fps (2 s) and 50 Opus frames (1 s), recorded to Matroska.
    static func record(codec: VideoCodec, parameterSetsUpFront: Bool) throws -> String {
        let path = TestSupport.temporaryPath(".mkv")
        let card = TestCardSource(width: 320, height: 240, fps: 15, label: "rec")
        let encoder: any VideoEncoding = codec == .vp8
            ? try VP8Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 600)
            : try H264Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 600)
        let video = try (0..<30).flatMap { try encoder.encode(card.nextFrame(index: $0), forceKeyframe: false) }
        let tone = ToneSource()
        let opus = try OpusEncoder()
        let audio = try (0..<50).map { try opus.encode(tone.nextFrame(index: $0)) }

        let recorder = try MediaRecorder(path: path)
        let sets = parameterSetsUpFront && codec == .h264 ? AnnexB.parameterSets(in: video[0].data) : nil
        try recorder.addVideoStream(codec: codec, width: 320, height: 240, parameterSets: sets)
        try recorder.addOpusStream()
        // Interleave by time; audio comes first, as it would from a live room.
        var v = 0, a = 0
        while v < video.count || a < audio.count {
            let videoTime = v < video.count ? Double(video[v].pts) / 90_000 : .infinity
            let audioTime = a < audio.count ? Double(audio[a].pts) / 48_000 : .infinity
            if audioTime <= videoTime {
                try recorder.writeAudio(audio[a]); a += 1
            } else {
                try recorder.writeVideo(video[v]); v += 1
            }
        }
        try recorder.finish()
        #expect(recorder.videoFramesWritten == 30)
        #expect(recorder.audioFramesWritten == 50)
        return path
    }

    @Test(.requires(.ffprobe), arguments: [(VideoCodec.vp8, false), (.h264, false), (.h264, true)])
    func recordingOpensInFFprobe(codec: VideoCodec, parameterSetsUpFront: Bool) throws {
        let path = try Self.record(codec: codec, parameterSetsUpFront: parameterSetsUpFront)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (streams, duration) = try Self.probe(path)
        try #require(streams.count == 2)
        let video = try #require(streams.first { $0.type == "video" })
        #expect(video.codec == (codec == .vp8 ? "vp8" : "h264"))
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frames == 30)
        let audio = try #require(streams.first { $0.type == "audio" })
        #expect(audio.codec == "opus")
        #expect(audio.sampleRate == "48000" && audio.channels == 2)
        #expect(audio.frames == 50)
        let seconds = try #require(duration)
        #expect(seconds > 1.8 && seconds < 2.2, "duration \(seconds)")
    }

    @Test func opusHeadLayout() {
        let head = MediaRecorder.opusHead(channels: 2, preSkip: 312, inputSampleRate: 48_000)
        #expect(head == Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0, 0, 0])
    }

    @Test(.requires(.ffprobe)) func dropsVideoBeforeTheFirstKeyFrameAndRejectsLateStreams() throws {
        let path = TestSupport.temporaryPath(".mkv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let encoder = try VP8Encoder(width: 160, height: 120, fps: 15, bitrateKbps: 300)
        let card = TestCardSource(width: 160, height: 120, fps: 15, label: "x")
        let frames = try (0..<6).flatMap { try encoder.encode(card.nextFrame(index: $0), forceKeyframe: $0 == 3) }
        let recorder = try MediaRecorder(path: path)
        try recorder.addVideoStream(codec: .vp8, width: 160, height: 120)
        // Join mid-stream: frames 1 and 2 are inter frames.
        for frame in frames[1...] { try recorder.writeVideo(frame) }
        #expect(recorder.videoFramesWritten == 3)
        #expect(throws: MediaFormatError.self) { try recorder.addOpusStream() }
        #expect(throws: MediaFormatError.self) { try recorder.writeAudio(EncodedAudioFrame(data: [0xfc], pts: 0, duration: 960)) }
        try recorder.finish()
        try recorder.finish()
        let (streams, _) = try Self.probe(path)
        #expect(streams.first?.frames == 3)
    }
}
