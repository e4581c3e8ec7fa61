import Foundation
import RTMPTestSupport
import Synchronization
import Testing
@testable import LiveRoomMedia
import TestTools

/// A mix as a mix task would make it: a 320x240 canvas with a red rectangle on the left
/// and a blue one on the right over green, H.264 at 15 fps with 1 s GOPs, and two mixed
/// tones in AAC.
final class MixFixture {
    static let width = 320, height = 240, fps = 15
    static let redRect = PixelRect(x: 16, y: 40, width: 128, height: 160)
    static let blueRect = PixelRect(x: 176, y: 40, width: 128, height: 160)
    static let background = YUVColor(rgb: 0x00FF00)
    static let backgroundRects = [
        PixelRect(x: 0, y: 0, width: 320, height: 40), PixelRect(x: 0, y: 200, width: 320, height: 40),
        PixelRect(x: 144, y: 40, width: 32, height: 160),
    ]

    let compositor: VideoCompositor
    let video: H264Encoder
    let audio: AACEncoder
    var mixer = AudioMixer()
    let red = ColorSource(rgb: 0xFF0000, width: 160, height: 120)
    let blue = ColorSource(rgb: 0x0000FF, width: 640, height: 360)
    let lowTone = ToneSource(frequency: 440, amplitude: 0.2)
    let highTone = ToneSource(frequency: 1000, amplitude: 0.2)
    /// The next video frame and the next 20 ms audio frame to make.
    var videoIndex = 0, audioIndex = 0
    /// Ask the encoder for an IDR picture at the next video frame.
    var forceKeyframe = false

    init() throws {
        compositor = try VideoCompositor(width: Self.width, height: Self.height, background: Self.background)
        video = try H264Encoder(width: Self.width, height: Self.height, fps: Self.fps, bitrateKbps: 600, gopSeconds: 1, globalHeader: true)
        audio = try AACEncoder(sampleRate: 48_000, channels: 2, bitrateKbps: 96)
    }

    var videoTrack: RTMPPublisher.VideoTrack {
        .init(width: Self.width, height: Self.height, fps: Self.fps, parameterSets: video.parameterSets!)
    }
    var audioTrack: RTMPPublisher.AudioTrack {
        .init(sampleRate: 48_000, channels: 2, audioSpecificConfig: audio.audioSpecificConfig)
    }

    /// The next composed picture, encoded.
    func nextVideo() throws -> (frames: [EncodedVideoFrame], timestampMs: Int64) {
        compositor.fill(Self.background)
        try compositor.draw(red.nextFrame(index: videoIndex), into: Self.redRect)
        try compositor.draw(blue.nextFrame(index: videoIndex), into: Self.blueRect)
        let frames = try video.encode(compositor.frame(pts: Int64(videoIndex) * 6_000), forceKeyframe: forceKeyframe)
        forceKeyframe = false
        defer { videoIndex += 1 }
        return (frames, Int64(videoIndex) * 1000 / Int64(Self.fps))
    }

    /// Makes `milliseconds` of media and writes it to `publisher`, in real time if asked.
    func push(to publisher: RTMPPublisher, milliseconds: Int, realTime: Bool, until stop: () -> Bool = { false }) throws {
        let start = ContinuousClock.now
        for tick in 0..<(milliseconds / 20) {
            if stop() { return }
            let pcm = try mixer.mix([.init(frame: lowTone.nextFrame(index: audioIndex)), .init(frame: highTone.nextFrame(index: audioIndex), volume: 50)], pts: Int64(audioIndex) * 960)
            audioIndex += 1
            for frame in try audio.encode(pcm) { publisher.write(audio: frame, timestampMs: frame.ptsMilliseconds) }
            while videoIndex * 1000 / Self.fps <= audioIndex * 20 {
                let (frames, timestamp) = try nextVideo()
                for frame in frames { publisher.write(video: frame, timestampMs: timestamp) }
            }
            if realTime {
                let due = start + .milliseconds(20 * (tick + 1))
                let now = ContinuousClock.now
                if due > now { Thread.sleep(forTimeInterval: Double((due - now).components.attoseconds) / 1e18 + Double((due - now).components.seconds)) }
            }
        }
    }

    /// Checks a picture of the mix (after encoding and decoding) pixel by pixel.
    static func expectLayout(_ frame: VideoFrame, sourceLocation: SourceLocation = #_sourceLocation) {
        VideoCompositorTests.expect(frame, redRect, is: YUVColor(rgb: 0xFF0000), inset: 6, tolerance: 12, sourceLocation: sourceLocation)
        VideoCompositorTests.expect(frame, blueRect, is: YUVColor(rgb: 0x0000FF), inset: 6, tolerance: 12, sourceLocation: sourceLocation)
        for rect in backgroundRects {
            VideoCompositorTests.expect(frame, rect, is: background, inset: 6, tolerance: 12, sourceLocation: sourceLocation)
        }
    }
}

/// Records the states a publisher reports.
final class StateRecorder: Sendable {
    private let states = Mutex<[RTMPPublisher.State]>([])

    var callback: @Sendable (RTMPPublisher.State) -> Void { { state in self.states.withLock { $0.append(state) } } }
    var names: [String] { states.withLock { $0.map(Self.name) } }
    var last: RTMPPublisher.State? { states.withLock { $0.last } }

    static func name(_ state: RTMPPublisher.State) -> String {
        switch state {
        case .connecting: "connecting"
        case .pushing: "pushing"
        case .failed: "failed"
        case .stopped: "stopped"
        }
    }

    /// Waits until `count` states have been reported.
    @discardableResult
    func wait(count: Int, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if states.withLock({ $0.count }) >= count { return true }
            usleep(10_000)
        }
        return false
    }

    /// Waits until the latest state is `name`.
    @discardableResult
    func wait(for name: String, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let last, Self.name(last) == name { return true }
            usleep(10_000)
        }
        return false
    }
}

enum PulledVideo {
    /// The last whole 4:2:0 picture in a raw `yuv420p` file.
    static func lastFrame(_ data: Data, width: Int, height: Int) -> VideoFrame? {
        let size = width * height * 3 / 2
        guard data.count >= size else { return nil }
        let start = (data.count / size - 1) * size
        let bytes = [UInt8](data[start..<(start + size)])
        return try? VideoFrame(
            width: width, height: height, y: Array(bytes[0..<(width * height)]),
            u: Array(bytes[(width * height)..<(width * height * 5 / 4)]), v: Array(bytes[(width * height * 5 / 4)...]), pts: 0)
    }
}

@Suite(.serialized) struct RTMPPublisherTests {
    struct ProbedPacket: Decodable { var codec_type: String; var pts: Int?; var pts_time: String?; var flags: String }
    struct PacketProbe: Decodable { var packets: [ProbedPacket] }

    static func packets(_ path: String) throws -> [ProbedPacket] {
        let result = try RequiredTool.ffprobe.run(["-v", "error", "-show_packets", "-of", "json", path])
        try #require(result.status == 0, "ffprobe: \(result.errors)")
        return try JSONDecoder().decode(PacketProbe.self, from: result.output).packets
    }

    /// The first picture of `path`, decoded by ffmpeg; nil if ffmpeg gave less than a whole picture.
    static func firstFrame(_ path: String) throws -> VideoFrame? {
        let result = try RequiredTool.ffmpeg.run(["-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        try #require(result.status == 0, "ffmpeg: \(result.errors)")
        return PulledVideo.lastFrame(result.output, width: MixFixture.width, height: MixFixture.height)
    }

    @Test(.requires(.ffmpeg, .ffprobe)) func writesAMixToAnFLVFile() throws {
        let path = TestSupport.temporaryPath(".flv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let mix = try MixFixture()
        let states = StateRecorder()
        let publisher = try RTMPPublisher(url: path, video: mix.videoTrack, audio: mix.audioTrack, onStateChange: states.callback)
        try mix.push(to: publisher, milliseconds: 2000, realTime: false)
        publisher.stop()
        #expect(states.names == ["connecting", "pushing", "stopped"])
        let stats = publisher.statistics
        #expect(stats.videoFramesWritten == mix.videoIndex && stats.videoFramesWritten >= 30)
        #expect(stats.audioFramesWritten >= 90)
        #expect(stats.droppedPackets == 0 && stats.skippedVideoFrames == 0 && stats.discardedPackets == 0 && stats.connections == 1)

        let (streams, duration) = try MediaRecorderTests.probe(path)
        let video = try #require(streams.first { $0.type == "video" })
        #expect(video.codec == "h264" && video.width == 320 && video.height == 240)
        #expect(video.frames == stats.videoFramesWritten)
        let audio = try #require(streams.first { $0.type == "audio" })
        #expect(audio.codec == "aac" && audio.sampleRate == "48000" && audio.channels == 2)
        #expect(audio.frames == stats.audioFramesWritten)
        let seconds = try #require(duration)
        #expect(seconds > 1.9 && seconds < 2.3, "duration \(seconds)")
        MixFixture.expectLayout(try #require(try Self.firstFrame(path), "ffmpeg decoded no picture of \(path)"))
    }

    @Test func aPacketOlderThanTheConnectionsFirstIsLiftedNotRefused() throws {
        let path = TestSupport.temporaryPath(".flv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let mix = try MixFixture()
        let states = StateRecorder()
        let publisher = try RTMPPublisher(url: path, video: mix.videoTrack, audio: mix.audioTrack, onStateChange: states.callback)
        #expect(states.wait(count: 2, timeout: .seconds(5)))
        // A relay's first keyframe at 2000 ms, then audio the AAC encoder stamped 21 ms earlier.
        let keyframe = try #require(try mix.video.encode(VideoFrame(width: 320, height: 240, color: .black), forceKeyframe: true).first)
        publisher.write(video: keyframe, timestampMs: 2000)
        let tone = try (0..<10).flatMap { try mix.audio.encode(ToneSource().nextFrame(index: $0)) }
        try #require(tone.count >= 3)
        for (index, frame) in tone.enumerated() { publisher.write(audio: frame, timestampMs: 1979 + Int64(index) * 21) }
        publisher.stop()
        #expect(states.names == ["connecting", "pushing", "stopped"], "no failure")
        #expect(publisher.statistics.videoFramesWritten == 1 && publisher.statistics.audioFramesWritten == tone.count)
    }

    @Test(.requires(.ffmpeg, .ffprobe)) func aTrackChangeSendsANewSequenceHeaderOnTheSameConnection() throws {
        let path = TestSupport.temporaryPath(".flv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let small = try H264Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 400, gopSeconds: 1, globalHeader: true)
        let large = try H264Encoder(width: 640, height: 360, fps: 15, bitrateKbps: 800, gopSeconds: 1, globalHeader: true)
        let states = StateRecorder()
        let publisher = try RTMPPublisher(
            url: path, video: .init(width: 320, height: 240, fps: 15, parameterSets: small.parameterSets!), audio: nil, onStateChange: states.callback)
        for index in 0..<10 {
            for frame in try small.encode(VideoFrame(width: 320, height: 240, color: YUVColor(rgb: 0xFF0000))) {
                publisher.write(video: frame, timestampMs: Int64(index) * 66)
            }
        }
        publisher.changeVideoTrack(.init(width: 640, height: 360, fps: 15, parameterSets: large.parameterSets!))
        for index in 10..<20 {
            for frame in try large.encode(VideoFrame(width: 640, height: 360, color: YUVColor(rgb: 0x0000FF))) {
                publisher.write(video: frame, timestampMs: Int64(index) * 66)
            }
        }
        publisher.stop()
        #expect(states.names == ["connecting", "pushing", "stopped"])
        #expect(publisher.statistics.videoFramesWritten == 20 && publisher.statistics.connections == 1)
        // Every frame decodes, the last ones at the new size.
        let result = try RequiredTool.ffmpeg.run(["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "640x360", "-"])
        #expect(result.status == 0 && result.errors.isEmpty, "ffmpeg: \(result.errors)")
        #expect(result.output.count == 20 * 640 * 360 * 3 / 2, "20 frames decoded")
        let sizes = try RequiredTool.ffprobe.run([
            "-v", "error", "-select_streams", "v", "-show_entries", "frame=width", "-of", "csv=p=0", path,
        ])
        let widths = String(decoding: sizes.output, as: UTF8.self).split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
        #expect(widths.first == "320" && widths.last == "640", "\(widths)")
    }

    @Test(.requires(.ffprobe)) func reconnectContinuesTheTimelineFromTheNextKeyFrame() throws {
        let path = TestSupport.temporaryPath(".flv")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let mix = try MixFixture()
        let states = StateRecorder()
        let publisher = try RTMPPublisher(url: path, video: mix.videoTrack, audio: mix.audioTrack, onStateChange: states.callback)
        try mix.push(to: publisher, milliseconds: 1000, realTime: false)
        #expect(states.wait(count: 2, timeout: .seconds(5)))
        // Re-open the file: what the first connection wrote is replaced.
        publisher.reconnect()
        #expect(states.wait(count: 4, timeout: .seconds(5)))
        // Frames 16...29 are inter frames and must be skipped; frame 30 is the next IDR.
        try mix.push(to: publisher, milliseconds: 1000, realTime: false)
        publisher.stop()
        let stats = publisher.statistics
        #expect(stats.connections == 2)
        #expect(stats.skippedVideoFrames == 14, "skipped \(stats.skippedVideoFrames)")
        #expect(states.names == ["connecting", "pushing", "connecting", "pushing", "stopped"])

        let packets = try Self.packets(path)
        let video = packets.filter { $0.codec_type == "video" }
        let audio = packets.filter { $0.codec_type == "audio" }
        let first = try #require(video.first)
        #expect(first.flags.hasPrefix("K"), "first video packet after reconnect is a key frame")
        #expect(first.pts == 2000, "video continues at frame 30 = 2000 ms, got \(String(describing: first.pts))")
        #expect(video.count == 1, "only frame 30 is due by 2000 ms")
        let firstAudio = try #require(audio.first?.pts)
        // AAC frames lag the input by the encoder delay: the first one after the reconnect starts at 960 ms.
        #expect(firstAudio >= 900 && firstAudio < 1100, "audio continues near 1 s, got \(firstAudio)")
        let audioTimes = audio.compactMap(\.pts)
        #expect(zip(audioTimes, audioTimes.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func aDeadServerFailsWithinTheTimeoutAndWritesNeverBlock() throws {
        // A listener that never accepts: TCP connects, the RTMP handshake never answers.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = NginxRTMPServer.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(fd, 4) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))

        let mix = try MixFixture()
        let states = StateRecorder()
        let started = ContinuousClock.now
        let publisher = try RTMPPublisher(
            url: "rtmp://127.0.0.1:\(port)/live/dead", video: mix.videoTrack, audio: mix.audioTrack,
            queueCapacity: 16, connectTimeout: .seconds(1), onStateChange: states.callback)
        // While connecting, 1 s of media overflows the 16-packet queue without blocking.
        let writeStart = ContinuousClock.now
        try mix.push(to: publisher, milliseconds: 1000, realTime: false)
        #expect(ContinuousClock.now - writeStart < .milliseconds(900))
        let whileConnecting = publisher.statistics
        #expect(whileConnecting.droppedPackets > 0)
        #expect(states.wait(for: "failed", timeout: .seconds(5)))
        #expect(ContinuousClock.now - started < .seconds(4))
        if case .failed(let error) = publisher.state {
            #expect(String(describing: error).contains("avio_open2"), "\(error)")
        } else {
            Issue.record("not failed: \(publisher.state)")
        }
        // Writes after the failure are discarded, not queued.
        try mix.push(to: publisher, milliseconds: 200, realTime: false)
        #expect(publisher.statistics.discardedPackets > whileConnecting.discardedPackets)
        #expect(publisher.statistics.videoFramesWritten == 0)
        // reconnect() tries again and fails again; stop() during a connect returns at once.
        publisher.reconnect()
        #expect(states.wait(for: "connecting", timeout: .seconds(2)))
        let stopStart = ContinuousClock.now
        publisher.stop()
        #expect(ContinuousClock.now - stopStart < .milliseconds(800))
        #expect(states.names.last == "stopped")
    }

    @Test(.requires(.nginxRTMP, .ffmpeg, .ffprobe))
    func pushesAMixToNginxThatFFmpegPullsBack() throws {
        let server = try NginxRTMPServer()
        try server.start()
        defer { server.stop() }
        let url = server.url(stream: "test")
        // Players join first and wait for the stream (nginx-rtmp's idle streams).
        let pull = try ToolProcess(.ffmpeg, [
            "-v", "error", "-i", url, "-frames:v", "5", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        let probe = try ToolProcess(.ffprobe, ["-v", "error", "-show_streams", "-of", "json", url])
        Thread.sleep(forTimeInterval: 0.3)

        let mix = try MixFixture()
        let states = StateRecorder()
        let publisher = try RTMPPublisher(url: url, video: mix.videoTrack, audio: mix.audioTrack, onStateChange: states.callback)
        try mix.push(to: publisher, milliseconds: 3000, realTime: true)
        let pulled = pull.wait(timeout: .seconds(10))
        let probed = probe.wait(timeout: .seconds(10))
        publisher.stop()
        #expect(states.names == ["connecting", "pushing", "stopped"])
        #expect(publisher.statistics.droppedPackets == 0 && publisher.statistics.videoFramesWritten >= 45)

        #expect(pulled == 0, "ffmpeg pull: \(pull.errors)\n\(server.errorLog)")
        let frame = try #require(PulledVideo.lastFrame(pull.output, width: 320, height: 240), "pulled \(pull.output.count) bytes")
        MixFixture.expectLayout(frame)

        #expect(probed == 0, "ffprobe: \(probe.errors)")
        let streams = try Probe(json: probe.output).streams
        let video = try #require(streams.first { $0.type == "video" })
        #expect(video.codec == "h264" && video.width == 320 && video.height == 240)
        let audio = try #require(streams.first { $0.type == "audio" })
        #expect(audio.codec == "aac" && audio.sampleRate == "48000" && audio.channels == 2)
    }

    @Test(.requires(.nginxRTMP, .ffmpeg))
    func reportsAFailureWhenNginxDiesAndReconnectsAfterItIsBack() throws {
        signal(SIGPIPE, SIG_IGN)  // a write to the dead connection must come back as EPIPE
        let server = try NginxRTMPServer()
        try server.start()
        defer { server.stop() }
        let url = server.url(stream: "again")
        let mix = try MixFixture()
        let states = StateRecorder()
        let publisher = try RTMPPublisher(
            url: url, video: mix.videoTrack, audio: mix.audioTrack, connectTimeout: .seconds(3), writeTimeout: .seconds(2),
            onStateChange: states.callback)
        defer { publisher.stop() }
        try mix.push(to: publisher, milliseconds: 1000, realTime: true)
        #expect(states.names == ["connecting", "pushing"])

        server.kill()
        // Keep pushing as a mix task would until the publisher notices.
        try mix.push(to: publisher, milliseconds: 8000, realTime: true) {
            if case .failed = publisher.state { return true } else { return false }
        }
        try #require(states.names.last == "failed", "states \(states.names)")
        let beforeReconnect = publisher.statistics

        try server.start()
        publisher.reconnect()
        mix.forceKeyframe = true
        try mix.push(to: publisher, milliseconds: 3000, realTime: true) { states.names.last == "pushing" }
        try #require(states.names.last == "pushing", "states \(states.names)\n\(server.errorLog)")
        let pull = try ToolProcess(.ffmpeg, [
            "-v", "error", "-i", url, "-frames:v", "3", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        // A player joining mid-stream takes a few seconds to probe; keep the stream going until it has its frames.
        try mix.push(to: publisher, milliseconds: 12_000, realTime: true) { !pull.isRunning }
        let pulled = pull.wait(timeout: .seconds(2))
        #expect(pulled == 0, "ffmpeg pull after reconnect: \(pull.errors)\n\(publisher.statistics)\n\(server.errorLog)")
        let frame = try #require(PulledVideo.lastFrame(pull.output, width: 320, height: 240), "pulled \(pull.output.count) bytes")
        MixFixture.expectLayout(frame)
        let stats = publisher.statistics
        #expect(stats.connections == 2)
        #expect(stats.videoFramesWritten > beforeReconnect.videoFramesWritten)
        #expect(states.names == ["connecting", "pushing", "failed", "connecting", "pushing"])
    }
}
