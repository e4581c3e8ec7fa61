import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomWire
import NIOCore
import Synchronization
import TestTools
import Testing

@testable import LiveRoomTaskRunner

func rtp(_ payload: ByteBuffer, seq: UInt16, ts: UInt32, marker: Bool = false, pt: UInt8 = 96) throws -> RTPPacket {
    try RTPPacket.parse(RTPPacket(header: RTPHeader(marker: marker, payloadType: pt, sequenceNumber: seq, timestamp: ts, ssrc: 42), payload: payload).serialize())
}

@Suite struct MixInputTests {
    let now = ContinuousClock.now

    @Test func opusIsDecodedToTheOutputFormatAndQueuedWithinBounds() throws {
        let input = try MixInput(user: MixUser(userId: "a", roomId: "r"), outputRate: 44_100, outputChannels: 1)
        let encoder = try OpusEncoder()
        let tone = ToneSource(frequency: 440)
        #expect(input.takeAudio(count: 1024, pts: 0) == nil, "nothing queued yet")
        for index in 0..<2 { input.receiveAudio(try encoder.encode(tone.nextFrame(index: index)).data) }
        #expect(input.takeAudio(count: 1024, pts: 0) == nil, "40 ms is below the 60 ms priming")
        for index in 2..<5 { input.receiveAudio(try encoder.encode(tone.nextFrame(index: index)).data) }
        let frame = try #require(input.takeAudio(count: 1024, pts: 7))
        #expect(frame.sampleRate == 44_100 && frame.channels == 1 && frame.samples.count == 1024 && frame.pts == 7)
        #expect(frame.samples.contains { abs(Int($0)) > 1000 }, "the tone, not silence")
        // Two seconds arrive while nobody takes any: the queue keeps at most 300 ms.
        for index in 5..<105 { input.receiveAudio(try encoder.encode(tone.nextFrame(index: index)).data) }
        var taken = 0
        while let block = input.takeAudio(count: 1024, pts: 0), block.samples.contains(where: { $0 != 0 }) { taken += 1 }
        #expect(taken <= 13, "at most 300 ms at 44.1 kHz in 1024-sample blocks, took \(taken)")
    }

    @Test func vp8PacketsBecomeAPicture() throws {
        let input = try MixInput(user: MixUser(userId: "a", roomId: "r"), outputRate: 48_000, outputChannels: 2)
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 500)
        let source = ColorSource(rgb: 0x00FF00, width: 320, height: 240)
        var packetizer = VP8Packetizer(maxPayloadSize: 1000)
        var seq: UInt16 = 100
        var frames: [MixInput.EncodedFrame] = []
        for index in 0..<3 {
            for encoded in try encoder.encode(source.nextFrame(index: index)) {
                let payloads = try packetizer.packetize(frame: ByteBuffer(bytes: encoded.data))
                for (i, payload) in payloads.enumerated() {
                    for case .frame(let frame) in input.receiveVideo(try rtp(payload, seq: seq, ts: UInt32(index) * 6000, marker: i == payloads.count - 1), codec: .vp8, now: now) {
                        frames.append(frame)
                    }
                    seq &+= 1
                }
            }
        }
        #expect(frames.count == 3 && frames.first?.isKeyframe == true)
        for frame in frames { #expect(input.decode(frame)) }
        let picture = try #require(input.picture)
        #expect(picture.width == 320 && picture.height == 240)
        let pixel = picture.pixel(x: 160, y: 120)
        #expect(abs(Int(pixel.y) - Int(YUVColor(rgb: 0x00FF00).y)) < 12)
    }

    /// A frame is drawn once it has waited as long as the sound mixed with it: the audio
    /// queue's depth (here about 89 ms: 100 ms queued, 1024 samples taken at 48 kHz, what is
    /// left plus half of what was taken), or at once when the input has no audio.
    @Test func framesWaitAsLongAsTheSoundMixedWithThem() throws {
        let input = try MixInput(user: MixUser(userId: "a", roomId: "r"), outputRate: 48_000, outputChannels: 2)
        let frame = { (arrival: ContinuousClock.Instant) in
            MixInput.EncodedFrame(
                codec: .vp8, data: [0x00], isKeyframe: false, rtpTimestamp: 0, arrival: arrival,
                sei: [TaggedSEIMessage(message: SEIMessage(payloadType: 242, data: [7]), tag: nil)])
        }
        _ = input.queue(frame(now))
        let first = input.decodeQueued(drawnAt: now)
        #expect(first.decoded + first.failed == 1, "no audio: drawn at once")
        let encoder = try OpusEncoder()
        let tone = ToneSource(frequency: 440)
        for index in 0..<5 { input.receiveAudio(try encoder.encode(tone.nextFrame(index: index)).data) }
        _ = try #require(input.takeAudio(count: 1024, pts: 0))
        #expect(abs(input.audioLatency.inMilliseconds - 89.3) < 1, "\(input.audioLatency)")
        for offset in [0, 40] { _ = input.queue(frame(now + .milliseconds(offset))) }
        let early = input.decodeQueued(drawnAt: now + .milliseconds(60))
        #expect(early.decoded + early.failed == 0, "neither has waited 89 ms")
        let one = input.decodeQueued(drawnAt: now + .milliseconds(100))
        #expect(one.decoded + one.failed == 1)
        #expect(one.sei.count == 1, "a frame's SEI goes with the output frame that draws it")
        #expect(input.hasQueuedFrames)
        let rest = input.decodeQueued()
        #expect(rest.decoded + rest.failed == 1 && !input.hasQueuedFrames)
    }

    /// A square wave whose RMS is `dbfs` below full scale.
    static func square(dbfs: Double, count: Int = 960) -> [Int16] {
        let amplitude = Int16((32768 * pow(10, dbfs / 20)).rounded())
        return (0..<count).map { $0 % 2 == 0 ? amplitude : -amplitude }
    }

    @Test func audioLevelRunsFromMinus60DBFSToFullScale() {
        #expect(MixInput.level(of: []) == 0)
        #expect(MixInput.level(of: [Int16](repeating: 0, count: 960)) == 0)
        #expect(MixInput.level(of: (0..<960).map { $0 % 2 == 0 ? Int16.max : Int16.min }) == 100)
        #expect(MixInput.level(of: [Int16](repeating: .min, count: 10)) == 100)
        #expect(MixInput.level(of: Self.square(dbfs: -30)) == 50)
        #expect(MixInput.level(of: Self.square(dbfs: -6)) == 90)
        #expect(MixInput.level(of: Self.square(dbfs: -54)) == 10)
        #expect(MixInput.level(of: Self.square(dbfs: -60)) == 0)
        #expect(MixInput.level(of: Self.square(dbfs: -80)) == 0)
        #expect(MixInput.level(of: [1] + [Int16](repeating: 0, count: 959)) == 0)
        // A sine whose RMS is -30 dBFS: its peak is 3 dB higher.
        let peak = 32768 * pow(10, -30.0 / 20) * 2.0.squareRoot()
        let sine = (0..<4800).map { Int16((peak * sin(2 * Double.pi * 440 * Double($0) / 48_000)).rounded()) }
        #expect(abs(MixInput.level(of: sine) - 50) <= 1)
    }
}

@Suite struct RoomStreamTests {
    @Test func keyframesCarryParameterSetsAndAudioIsCutInto20msOpus() throws {
        let stream = try RoomStream(mediaStart: .now)
        let encoder = try H264Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 300, globalHeader: true)
        let frame = VideoFrame(width: 320, height: 240, color: YUVColor(rgb: 0xFF0000))
        let keyframe = try #require(try encoder.encode(frame, forceKeyframe: true).first)
        let packets = stream.videoPackets(keyframe, parameterSets: encoder.parameterSets, timestampMs: 1000)
        let parsed = try packets.map { try RTPPacket.parse(ByteBuffer(bytes: $0)) }
        #expect(parsed.last?.header.marker == true && parsed.dropLast().allSatisfy { !$0.header.marker })
        #expect(Set(parsed.map(\.header.timestamp)).count == 1)
        #expect(zip(parsed, parsed.dropFirst()).allSatisfy { $0.header.sequenceNumber &+ 1 == $1.header.sequenceNumber })
        var depacketizer = H264Depacketizer()
        var units: [H264AccessUnit] = []
        for packet in parsed {
            units += try depacketizer.push(payload: packet.payload, sequenceNumber: packet.header.sequenceNumber, timestamp: packet.header.timestamp, marker: packet.header.marker)
        }
        let unit = try #require(units.last)
        #expect(AnnexB.parameterSets(in: Array(buffer: unit.annexB)) != nil, "SPS and PPS travel with the keyframe")

        // 1024-sample blocks at 44.1 kHz mono in, 960-sample Opus frames at 48 kHz out.
        var audio: [[UInt8]] = []
        for index in 0..<10 {
            let block = try AudioFrame(samples: [Int16](repeating: 1000, count: 1024), sampleRate: 44_100, channels: 1, pts: Int64(index * 1024))
            audio += try stream.audioPackets(block)
        }
        let headers = try audio.map { try RTPPacket.parse(ByteBuffer(bytes: $0)).header }
        #expect((10...11).contains(headers.count), "232 ms of audio is 11 frames of 20 ms, less what the resampler holds")
        #expect(zip(headers, headers.dropFirst()).allSatisfy { $0.timestamp &+ 960 == $1.timestamp })
    }
}

@Suite struct PublishTaskRunnerTests {
    @Test func aMixRunsWithNobodyPresentAndWritesFLV() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("runner-\(UUID().uuidString).flv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let config = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: "rtmp://unused/live/x")]),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 320, videoEncodedHeight: 240, videoEncodedFPS: 15, videoEncodedKbps: 300),
            mixingConfig: StreamMixingConfig(backgroundColor: 0x0000FF))
        let events = Mutex<[PublishTaskRunner.Event]>([])
        let runner = try PublishTaskRunner(
            taskId: "t", roomId: "r", config: config, onEvent: { event in events.withLock { $0.append(event) } }, requestKeyframe: { _ in })
        runner.connect(url: path)
        try await Task.sleep(for: .seconds(2.5))
        let statistics = runner.statistics
        runner.stop()
        // After its first 2 s the mix reports what it costs: its output, with no input to decode.
        #expect(events.withLock { $0 } == [.rtmpConnected(url: path), .encoding(pixelsPerSecond: 320 * 240 * 15)])
        #expect(statistics.videoFrames >= 30, "a frame every 1/15 s: \(statistics)")
        #expect(statistics.audioFrames >= 100, "a 1024-sample block every 21 ms: \(statistics)")
        #expect(statistics.skippedVideoFrames == 0 && statistics.encodeErrors == 0)
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) < 1000 {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) >= 1000, "the FLV file was written")
    }

    @Test(.requires(.ffmpeg))
    func watermarkImagesAreDrawnFromTheImageDirectory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("runner-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let image = directory.appendingPathComponent("mark.png").path
        let output = directory.appendingPathComponent("out.flv").path
        _ = try RequiredTool.ffmpeg.run(["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0xFF00FF:s=64x64", "-frames:v", "1", image])
        let config = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: "rtmp://unused/live/x")]),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 320, videoEncodedHeight: 240, videoEncodedFPS: 15, videoEncodedKbps: 500),
            mixingConfig: StreamMixingConfig(
                backgroundColor: 0x0000FF,
                watermarkList: [
                    Watermark(watermarkUrl: "mark.png", rect: MixRect(x: 0, y: 0, width: 160, height: 120)),
                    Watermark(watermarkUrl: "../../etc/passwd", rect: MixRect(x: 160, y: 0, width: 160, height: 120)),
                ]))
        let events = Mutex<[PublishTaskRunner.Event]>([])
        let runner = try PublishTaskRunner(
            taskId: "t", roomId: "r", config: config, onEvent: { event in events.withLock { $0.append(event) } }, requestKeyframe: { _ in },
            images: ImageLoader(directory: directory.path, egress: EgressResolver(policy: EgressPolicy())))
        try await Task.sleep(for: .milliseconds(500))  // images load off the task's thread
        runner.connect(url: output)
        try await Task.sleep(for: .seconds(1.2))
        let statistics = runner.statistics
        runner.stop()
        let seen = events.withLock { $0 }
        #expect(seen.contains(.rtmpConnected(url: output)))
        let refused = seen.compactMap { event -> LiveRoomError? in
            if case .imageUnavailable("../../etc/passwd", let error) = event { return error } else { return nil }
        }
        #expect(refused.count == 1 && refused.first?.code == ErrorCode.imageUnavailable, "reported once: \(seen)")
        #expect(statistics.videoFrames >= 15 && statistics.encodeErrors == 0, "\(statistics)")
        try await Task.sleep(for: .milliseconds(500))
        let decoded = try RequiredTool.ffmpeg.run(["-v", "error", "-y", "-i", output, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        let pixels = [UInt8](decoded.output)
        try #require(pixels.count == 320 * 240 * 3, "\(decoded.errors)")
        func color(_ x: Int, _ y: Int) -> [Int] { (0..<3).map { Int(pixels[(y * 320 + x) * 3 + $0]) } }
        #expect(zip(color(80, 60), [255, 0, 255]).allSatisfy { abs($0 - $1) < 48 }, "the watermark: \(color(80, 60))")
        #expect(zip(color(240, 180), [0, 0, 255]).allSatisfy { abs($0 - $1) < 48 }, "the background: \(color(240, 180))")
    }
}

@Suite struct EncodingMeterTests {
    let start = ContinuousClock.now

    @Test func aReportCountsTheOutputAndTheDecodedPicturesWeighted() {
        var meter = EncodingMeter(start: start)
        // Two 540x960 VP8 inputs and one 320x240 H.264 input at 15 fps for 2 s.
        for _ in 0..<30 {
            meter.decoded(pixels: 540 * 960, codec: .vp8)
            meter.decoded(pixels: 540 * 960, codec: .vp8)
            meter.decoded(pixels: 320 * 240, codec: .h264)
        }
        #expect(meter.windowEnd == start + .seconds(2))
        #expect(meter.report(encodingPixelsPerSecond: 540 * 960 * 15, now: start + .seconds(1)) == nil, "the window has not ended")
        let decoding = 2 * 540 * 960 * 15 * 64 / 100 + 320 * 240 * 15 * 25 / 100
        #expect(meter.report(encodingPixelsPerSecond: 540 * 960 * 15, now: start + .seconds(2)) == 540 * 960 * 15 + decoding)
        #expect(meter.windowEnd == start + .seconds(4), "the next window starts")
    }

    @Test func aCostIsReportedAgainOnlyWhenItMovedByMoreThanATenth() {
        var meter = EncodingMeter(start: start)
        #expect(meter.report(encodingPixelsPerSecond: 1_000_000, now: start + .seconds(2)) == 1_000_000)
        #expect(meter.report(encodingPixelsPerSecond: 1_100_000, now: start + .seconds(4)) == nil, "a tenth more")
        #expect(meter.report(encodingPixelsPerSecond: 900_000, now: start + .seconds(6)) == nil, "a tenth less")
        // An input joins: 100 pictures of 10,000 VP8 pixels in 2 s count 320,000 a second.
        for _ in 0..<100 { meter.decoded(pixels: 10_000, codec: .vp8) }
        #expect(meter.report(encodingPixelsPerSecond: 1_000_000, now: start + .seconds(8)) == 1_320_000)
        #expect(meter.report(encodingPixelsPerSecond: 1_000_000, now: start + .seconds(10)) == 1_000_000, "and leaves")
    }

    @Test func nothingIsReportedWhileTheEncodingIsUnknownButTheWindowMovesOn() {
        var meter = EncodingMeter(start: start)
        meter.decoded(pixels: 1_000_000, codec: .vp8)
        #expect(meter.report(encodingPixelsPerSecond: nil, now: start + .seconds(3)) == nil)
        #expect(meter.windowEnd == start + .seconds(5))
        #expect(meter.reportNow(0) == 0 && meter.reported == 0, "a relay's first frame")
        #expect(meter.report(encodingPixelsPerSecond: 0, now: start + .seconds(5)) == nil, "nothing decoded since: still nothing")
    }
}
