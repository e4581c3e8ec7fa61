import Foundation
import Testing
@testable import LiveRoomMedia
import TestTools

@Suite struct FileSourceTests {
    /// A 1 s file (testsrc at 10 fps, 320x240, plus a 44.1 kHz mono 1 kHz sine in AAC) made by ffmpeg.
    static func makeFile() throws -> String {
        let path = TestSupport.temporaryPath(".mp4")
        let result = try RequiredTool.ffmpeg.run([
            "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100:duration=1",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-ac", "1", "-shortest", path,
        ])
        try #require(result.status == 0, "ffmpeg: \(result.errors)")
        return path
    }

    @Test(.requires(.ffmpeg)) func decodesScalesResamplesAndLoops() throws {
        let path = try Self.makeFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = try FileSource(path: path, width: 160, height: 120)
        #expect(source.hasVideo && source.hasAudio)

        var video: [VideoFrame] = [], audio: [AudioFrame] = []
        while video.count < 25 {
            switch try source.nextFrame() {
            case .video(let frame): video.append(frame)
            case .audio(let frame): audio.append(frame)
            }
        }
        #expect(source.loopCount == 2)
        for frame in video {
            #expect(frame.width == 160 && frame.height == 120)
        }
        // 10 fps in 90 kHz, continuing across loops. A loop restarts where the longer stream
        // ended: the AAC track runs up to one AAC frame (1024 samples) past the video.
        #expect(video[0..<10].map(\.pts) == (0..<10).map { Int64($0) * 9_000 })
        for loop in 1...2 {
            let start = video[loop * 10].pts, previousStart = video[(loop - 1) * 10].pts
            #expect(start - previousStart >= 90_000 && start - previousStart < 90_000 + 9_000, "loop \(loop) starts at \(start)")
            #expect(video[(loop * 10)..<min(25, loop * 10 + 10)].map { $0.pts - start } == (0..<min(10, 25 - loop * 10)).map { Int64($0) * 9_000 })
        }
        // Frame 0 of the second loop is frame 0 again.
        #expect(TestSupport.meanLumaDifference(video[0], video[10]) < 1)
        #expect(TestSupport.meanLumaDifference(video[0], video[5]) > 1)

        try #require(audio.count > 50)
        for (i, frame) in audio.enumerated() {
            #expect(frame.sampleRate == 48_000 && frame.channels == 2 && frame.samplesPerChannel == 960)
            #expect(frame.pts == Int64(i) * 960)
        }
        // Mono 1 kHz became stereo 1 kHz at 48 kHz.
        let middle = audio[20]
        #expect(middle.channel(0) == middle.channel(1))
        let left = middle.channel(0)
        #expect(TestSupport.goertzelPower(left, frequency: 1_000, sampleRate: 48_000)
            > 100 * TestSupport.goertzelPower(left, frequency: 440, sampleRate: 48_000))
        // Audio and video timelines stay within a frame of each other.
        let lastAudioEnd = Double(audio.last!.pts + 960) / 48_000, lastVideo = Double(video.last!.pts) / 90_000
        #expect(abs(lastAudioEnd - lastVideo) < 0.25, "audio \(lastAudioEnd) s vs video \(lastVideo) s")
    }

    @Test(.requires(.ffmpeg)) func videoOnlyFileLoopsWithContinuousTimestamps() throws {
        let path = TestSupport.temporaryPath(".y4m")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let made = try RequiredTool.ffmpeg.run([
            "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5:duration=1", "-pix_fmt", "yuv420p", path,
        ])
        try #require(made.status == 0, "ffmpeg: \(made.errors)")
        let source = try FileSource(path: path, width: 32, height: 24)
        #expect(source.hasVideo && !source.hasAudio)
        var pts: [Int64] = []
        for _ in 0..<12 {
            guard case .video(let frame) = try source.nextFrame() else { Issue.record("audio from a video-only file"); return }
            #expect(frame.width == 32 && frame.height == 24)
            pts.append(frame.pts)
        }
        #expect(pts == (0..<12).map { Int64($0) * 18_000 })
        #expect(source.loopCount == 2)
    }

    @Test func missingFileThrowsTheFFmpegError() {
        #expect(throws: CodecError.self) { try FileSource(path: "/nonexistent/liveroom.mkv") }
    }
}
