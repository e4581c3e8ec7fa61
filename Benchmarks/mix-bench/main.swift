// mix-bench: the cost of server-side mixing, with LiveRoomMedia's parts and with the server's
// PublishTaskRunner, next to the ffmpeg command line doing the same mix in the same run.
//
//   mix-bench [--inputs 4,9,16] [--seconds 10] [--threads 1]
//
// Each input is a 540x960@15 VP8 stream: 5 s of test card with its own label, encoded
// once up front with VP8Encoder (and written to a WebM file for ffmpeg). Per output frame
// LiveRoom decodes every input with VP8Decoder, composes them in a grid on a 540x960
// canvas with VideoCompositor (bilinear), encodes H.264 at 1300 kbps @15 (ultrafast,
// zerolatency, baseline, 2 s GOP), decodes each input's tone from the same 20 ms Opus packets
// the runner is fed (the runner must decode them too), mixes them with AudioMixer, encodes AAC
// 128 kbps 48 kHz stereo, and muxes FLV through RTMPPublisher into /dev/null. ffmpeg
// does the same from the WebM files and lavfi sine sources (xstack + pad, amix, libx264,
// aac, -f flv /dev/null). Both loop the 5 s inputs for --seconds of output.
//
// The server task runner measurement runs the server's own path for the same mix: each
// input's VP8 frames are cut into RTP packets (VP8Packetizer, one SSRC per input, 90 kHz
// timestamps) and its tone into 20 ms Opus packets, and a feeder (the main thread) hands
// them to a PublishTaskRunner in real time, a frame per input every 1/15 s and an Opus
// packet per input every 20 ms, for --seconds. The runner reassembles, decodes, lays out
// the grid template, composes, encodes H.264 + AAC and writes FLV to /dev/null, paced by
// its own clock, on its own thread.
//
// CPU s/s is user+system CPU seconds (getrusage) per second of output; RT is output
// seconds per wall-clock second (above 1 keeps up with real time). ffmpeg's figures
// include its start-up and the tone synthesis; LiveRoom's exclude the up-front encode.
// The runner's figure is the whole process (runner and publisher threads, encoder set-up)
// minus the feeder thread's own CPU time (CLOCK_THREAD_CPUTIME_ID, printed apart); it
// runs in real time, so instead of RT it shows the frames it wrote against 15 x seconds
// and the ticks it skipped for falling behind.
import ArgumentParser
import Foundation
import LiveRoomMedia
import LiveRoomPublishTasks
import LiveRoomTaskRunner
import LiveRoomWire
import NIOCore

struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mix-bench",
        abstract: "Measures server-side mixing: LiveRoomMedia's parts and the PublishTaskRunner, next to ffmpeg doing the same mix.")

    @Option(help: "Input counts to measure, comma separated.")
    var inputs: String = "4,9,16"
    @Option(help: "Seconds of output per measurement.")
    var seconds: Int = 10
    @Option(help: "Encoder threads for LiveRoomMedia's H.264 encoder and ffmpeg.")
    var threads: Int = 1

    /// The input counts of ``inputs``.
    var inputCounts: [Int] { inputs.split(separator: ",").compactMap { Int($0) } }

    func validate() throws {
        let parts = inputs.split(separator: ",")
        guard !parts.isEmpty, parts.allSatisfy({ Int($0).map { $0 > 0 } ?? false }) else {
            throw ValidationError("--inputs takes positive counts separated by commas, such as 4,9,16")
        }
        guard seconds >= 1 else { throw ValidationError("--seconds must be at least 1") }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
    }
}

let width = 540, height = 960, fps = 15, bitrateKbps = 1_300, inputSeconds = 5
let options = Options.parseOrExit()
let outputFrames = options.seconds * fps

func cpuSeconds(_ who: Int32) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(who), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// CPU seconds of the calling thread.
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func wallSeconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// The grid for `count` inputs: columns x rows, and each cell's rectangle (even-aligned).
@MainActor func grid(_ count: Int) -> [PixelRect] {
    let columns = Int(Double(count).squareRoot().rounded(.up))
    let rows = (count + columns - 1) / columns
    let cellWidth = (width / columns) & ~1, cellHeight = (height / rows) & ~1
    return (0..<count).map { PixelRect(x: ($0 % columns) * cellWidth, y: ($0 / columns) * cellHeight, width: cellWidth, height: cellHeight) }
}

func toneFrequency(_ input: Int) -> Int { 300 + 50 * input }

// MARK: - Inputs, encoded once

let maxInputs = options.inputCounts.max() ?? 4
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mix-bench-\(getpid())").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

print("encoding \(maxInputs) VP8 inputs of \(inputSeconds) s at \(width)x\(height)@\(fps)…")
var inputs: [[EncodedVideoFrame]] = []
for index in 0..<maxInputs {
    let card = TestCardSource(width: width, height: height, fps: fps, label: "user\(index)")
    let encoder = try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: 800)
    var frames: [EncodedVideoFrame] = []
    for i in 0..<(inputSeconds * fps) { frames += try encoder.encode(card.nextFrame(index: i), forceKeyframe: i == 0) }
    inputs.append(frames)
    let recorder = try MediaRecorder(path: "\(directory)/input\(index).webm")
    try recorder.addVideoStream(codec: .vp8, width: width, height: height)
    for frame in frames { try recorder.writeVideo(frame) }
    try recorder.finish()
}
// One second of each tone (whole periods, so it loops cleanly).
let tones: [[AudioFrame]] = (0..<maxInputs).map { index in
    let source = ToneSource(frequency: Double(toneFrequency(index)), amplitude: 0.5 / Double(maxInputs).squareRoot())
    return (0..<50).map { source.nextFrame(index: $0) }
}

// MARK: - LiveRoom

/// - Parameter realTime: sleep until each output frame is due (as the runner does), instead of a tight loop.
@MainActor func runLiveRoom(count: Int, realTime: Bool = false) throws -> (cpu: Double, wall: Double, dropped: Int) {
    let cells = grid(count)
    let cpuStart = cpuSeconds(RUSAGE_SELF.rawValue)
    let start = ContinuousClock.now

    let decoders = try (0..<count).map { _ in try VP8Decoder() }
    let opusDecoders = try (0..<count).map { _ in try OpusDecoder() }
    let compositor = try VideoCompositor(width: width, height: height)
    let video = try H264Encoder(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps, gopSeconds: 2, threads: options.threads, globalHeader: true)
    let audio = try AACEncoder(sampleRate: 48_000, channels: 2, bitrateKbps: 128)
    var mixer = AudioMixer()
    let publisher = try RTMPPublisher(
        url: "/dev/null",
        video: .init(width: width, height: height, fps: fps, parameterSets: video.parameterSets!),
        audio: .init(sampleRate: 48_000, channels: 2, audioSpecificConfig: audio.audioSpecificConfig),
        queueCapacity: 4096)

    var audioIndex = 0
    let frameInterval = Duration.nanoseconds(1_000_000_000 / Int64(fps))
    for frameIndex in 0..<outputFrames {
        if realTime {
            let wait = ContinuousClock.now.duration(to: start.advanced(by: frameInterval * frameIndex))
            if wait > .zero { Thread.sleep(forTimeInterval: seconds(wait)) }
        }
        compositor.fill(.black)
        for input in 0..<count {
            let encoded = inputs[input][frameIndex % inputs[input].count]
            for picture in try decoders[input].decode(encoded) { try compositor.draw(picture, into: cells[input]) }
        }
        let timestamp = Int64(frameIndex) * 1000 / Int64(fps)
        for frame in try video.encode(compositor.frame(pts: Int64(frameIndex) * 6_000), forceKeyframe: false) {
            publisher.write(video: frame, timestampMs: timestamp)
        }
        // Audio up to the end of this video frame, in 20 ms mixes.
        while audioIndex * 20 < (frameIndex + 1) * 1000 / fps {
            let decoded = try (0..<count).map { input in
                try opusDecoders[input].decode(Array(opusPayloads[input][audioIndex % 50].readableBytesView), pts: Int64(audioIndex) * 960)
            }
            let mixed = try mixer.mix(decoded.map { .init(frame: $0) }, pts: Int64(audioIndex) * 960)
            for frame in try audio.encode(mixed) { publisher.write(audio: frame, timestampMs: frame.ptsMilliseconds) }
            audioIndex += 1
        }
    }
    publisher.stop()
    return (cpuSeconds(RUSAGE_SELF.rawValue) - cpuStart, wallSeconds(since: start), publisher.statistics.droppedPackets)
}

// MARK: - Server task runner

// Each input's frames as VP8 RTP payloads, and its tone as 50 Opus packets (one second).
let inputPayloads: [[[ByteBuffer]]] = try inputs.map { frames in
    var packetizer = VP8Packetizer(maxPayloadSize: 1_200)
    return try frames.map { try packetizer.packetize(frame: ByteBuffer(bytes: $0.data)) }
}
let opusPayloads: [[ByteBuffer]] = try tones.map { frames in
    let encoder = try OpusEncoder(sampleRate: 48_000, channels: 2, bitrateKbps: 32)
    return try frames.map { ByteBuffer(bytes: try encoder.encode($0).data) }
}

/// What the runner reported through its callbacks.
final class RunnerEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var _keyframeRequests = 0
    private var _failures: [String] = []
    private var _cost: Int?

    func keyframeRequested() { lock.withLock { _keyframeRequests += 1 } }
    func record(_ event: PublishTaskRunner.Event) {
        switch event {
        case .rtmpFailed(let url, let message): lock.withLock { _failures.append("\(url): \(message)") }
        case .encoding(let pixels): lock.withLock { _cost = pixels }
        default: break
        }
    }
    /// The last cost the runner reported for the encoding budget (pixels a second).
    var cost: Int? { lock.withLock { _cost } }
    var keyframeRequests: Int { lock.withLock { _keyframeRequests } }
    var failures: [String] { lock.withLock { _failures } }
}

struct RunnerResult {
    /// Process CPU seconds, feeder excluded.
    var cpu: Double
    /// The feeder thread's CPU seconds.
    var feederCPU: Double
    var statistics: PublishTaskRunner.Statistics
    var framesSent: Int
    var keyframeRequests: Int
    /// What the runner last reported to count against the encoding budget.
    var cost: Int?
}

/// One input's RTP state: sequence numbers and SSRCs as a browser would keep them.
struct RTPSender {
    static let videoPayloadType: UInt8 = 96
    static let opusPayloadType: UInt8 = 111

    var videoSSRC: UInt32, audioSSRC: UInt32
    var videoSequence: UInt16, audioSequence: UInt16

    init(input: Int) {
        videoSSRC = 0x1000 + UInt32(input)
        audioSSRC = 0x2000 + UInt32(input)
        videoSequence = UInt16(truncatingIfNeeded: input * 1_000)
        audioSequence = UInt16(truncatingIfNeeded: input * 1_000 + 500)
    }

    /// The packets of one frame, serialized and parsed back as the media port hands them to taps.
    mutating func videoPackets(_ payloads: [ByteBuffer], timestamp: UInt32) throws -> [RTPPacket] {
        try payloads.indices.map { index in
            videoSequence &+= 1
            let header = RTPHeader(
                marker: index == payloads.count - 1, payloadType: Self.videoPayloadType, sequenceNumber: videoSequence, timestamp: timestamp, ssrc: videoSSRC)
            return try RTPPacket.parse(RTPPacket(header: header, payload: payloads[index]).serialize())
        }
    }

    mutating func audioPacket(_ payload: ByteBuffer, timestamp: UInt32) throws -> RTPPacket {
        audioSequence &+= 1
        let header = RTPHeader(payloadType: Self.opusPayloadType, sequenceNumber: audioSequence, timestamp: timestamp, ssrc: audioSSRC)
        return try RTPPacket.parse(RTPPacket(header: header, payload: payload).serialize())
    }
}

@MainActor func runTaskRunner(count: Int) throws -> RunnerResult {
    let roomId = "bench"
    let users = (0..<count).map { MixUser(userId: "user\($0)", roomId: roomId) }
    let events = RunnerEvents()
    let config = PublishTaskConfig(
        target: PublishTarget(mode: .mixStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: "/dev/null")]),
        encoderParam: StreamEncoderParam(
            videoEncodedWidth: width, videoEncodedHeight: height, videoEncodedFPS: fps, videoEncodedGOP: 2, videoEncodedKbps: bitrateKbps,
            audioEncodedSampleRate: 48_000, audioEncodedChannelNum: 2, audioEncodedKbps: 128),
        mixingConfig: StreamMixingConfig(template: .grid))

    let cpuStart = cpuSeconds(RUSAGE_SELF.rawValue)
    var runner: PublishTaskRunner? = try PublishTaskRunner(
        taskId: "mix-bench-\(count)", roomId: roomId, config: config,
        onEvent: { events.record($0) }, requestKeyframe: { _ in events.keyframeRequested() })
    runner!.setAnchors(users.map { MixAnchor(user: $0, hasVideo: true, hasAudio: true) })
    runner!.connect(url: "/dev/null")

    // The feeder: this thread, sending each input's packets at their due times.
    let feederStart = threadCPUSeconds()
    var senders = (0..<count).map(RTPSender.init(input:))
    let start = ContinuousClock.now
    let end = start.advanced(by: .seconds(options.seconds))
    let frameInterval = Duration.nanoseconds(1_000_000_000 / Int64(fps))
    let audioPackets = options.seconds * 50
    var videoIndex = 0, audioIndex = 0
    while videoIndex < outputFrames || audioIndex < audioPackets {
        let videoDue = videoIndex < outputFrames ? start.advanced(by: frameInterval * videoIndex) : end
        let audioDue = audioIndex < audioPackets ? start.advanced(by: .milliseconds(20 * audioIndex)) : end
        let wait = ContinuousClock.now.duration(to: min(videoDue, audioDue))
        if wait > .zero { Thread.sleep(forTimeInterval: seconds(wait)) }
        if videoDue <= audioDue {
            for input in 0..<count {
                let payloads = inputPayloads[input][videoIndex % inputPayloads[input].count]
                for packet in try senders[input].videoPackets(payloads, timestamp: UInt32(truncatingIfNeeded: videoIndex * 90_000 / fps)) {
                    runner!.receive(from: users[input], videoCodec: .vp8, packet: packet)
                }
            }
            videoIndex += 1
        } else {
            for input in 0..<count {
                let packet = try senders[input].audioPacket(opusPayloads[input][audioIndex % 50], timestamp: UInt32(truncatingIfNeeded: audioIndex * 960))
                runner!.receive(from: users[input], videoCodec: nil, packet: packet)
            }
            audioIndex += 1
        }
    }
    let feederCPU = threadCPUSeconds() - feederStart
    let remaining = ContinuousClock.now.duration(to: end)
    if remaining > .zero { Thread.sleep(forTimeInterval: seconds(remaining)) }

    // Stop, let the last tick finish, then wait for the task's thread (which holds the runner) to end.
    runner!.stop()
    Thread.sleep(forTimeInterval: 0.2)
    let statistics = runner!.statistics
    weak let finished = runner
    runner = nil
    let deadline = ContinuousClock.now.advanced(by: .seconds(5))
    while finished != nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
    if finished != nil { print("warning: the runner's thread had not ended 5 s after stop(); its CPU figure may be short") }
    for failure in events.failures { print("runner RTMP failure: \(failure)") }
    return RunnerResult(
        cpu: cpuSeconds(RUSAGE_SELF.rawValue) - cpuStart - feederCPU, feederCPU: feederCPU, statistics: statistics,
        framesSent: videoIndex * count, keyframeRequests: events.keyframeRequests, cost: events.cost)
}

// MARK: - ffmpeg

@MainActor func ffmpegArguments(count: Int) -> [String] {
    let cells = grid(count)
    var arguments = ["-hide_banner", "-nostats", "-loglevel", "error", "-y", "-threads", "\(options.threads)", "-filter_threads", "1"]
    for input in 0..<count {
        arguments += ["-threads", "1", "-stream_loop", "-1", "-c:v", "libvpx", "-i", "\(directory)/input\(input).webm"]
    }
    for input in 0..<count {
        arguments += ["-f", "lavfi", "-i", "sine=frequency=\(toneFrequency(input)):sample_rate=48000"]
    }
    var graph = ""
    for input in 0..<count { graph += "[\(input):v]scale=\(cells[input].width):\(cells[input].height):flags=bilinear[v\(input)];" }
    graph += (0..<count).map { "[v\($0)]" }.joined()
    graph += "xstack=inputs=\(count):layout=" + cells.map { "\($0.x)_\($0.y)" }.joined(separator: "|") + ":fill=black,pad=\(width):\(height):0:0:black[v];"
    graph += (0..<count).map { "[\(count + $0):a]" }.joined() + "amix=inputs=\(count):normalize=0,aformat=channel_layouts=stereo[a]"
    arguments += [
        "-filter_complex", graph, "-map", "[v]", "-map", "[a]", "-t", "\(options.seconds)",
        "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-profile:v", "baseline",
        "-b:v", "\(bitrateKbps)k", "-maxrate", "\(bitrateKbps)k", "-bufsize", "\(bitrateKbps)k", "-g", "\(2 * fps)", "-r", "\(fps)",
        "-x264-params", "keyint-min=\(2 * fps):scenecut=0",
        "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2",
        "-f", "flv", "/dev/null",
    ]
    return arguments
}

@MainActor func runFFmpeg(count: Int) throws -> (cpu: Double, wall: Double)? {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments = ffmpegArguments(count: count)
    process.standardInput = FileHandle.nullDevice
    let cpuStart = cpuSeconds(RUSAGE_CHILDREN.rawValue)
    let start = ContinuousClock.now
    try process.run()
    process.waitUntilExit()
    let wall = wallSeconds(since: start)
    guard process.terminationStatus == 0 else {
        print("ffmpeg failed with status \(process.terminationStatus)")
        return nil
    }
    return (cpuSeconds(RUSAGE_CHILDREN.rawValue) - cpuStart, wall)
}

// MARK: - Report

func shellQuoted(_ argument: String) -> String {
    argument.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=,".contains($0) } ? argument : "'\(argument)'"
}

print("output: \(options.seconds) s of \(width)x\(height)@\(fps) H.264 \(bitrateKbps) kbps + AAC 128 kbps, FLV to /dev/null, \(options.threads) encoder thread(s) (the runner: 1)")
print("")
var rows: [String] = []
var costRows: [String] = []
for count in options.inputCounts where count <= maxInputs {
    let ours = try runLiveRoom(count: count)
    let paced = try runLiveRoom(count: count, realTime: true)
    let runner = try runTaskRunner(count: count)
    let theirs = try runFFmpeg(count: count)
    let seconds = Double(options.seconds)
    func cell(_ value: Double?, _ width: Int) -> String {
        let text = value.map { String(format: "%.3f", $0) } ?? "n/a"
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
    func cell(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
    func cell(_ value: Int, _ width: Int) -> String { cell(String(value), width) }
    let stats = runner.statistics
    rows.append([
        cell(count, 6), cell(ours.cpu / seconds, 16), cell(seconds / ours.wall, 11), cell(ours.dropped, 7), cell(paced.cpu / seconds, 14),
        cell(runner.cpu / seconds, 14), cell("\(stats.videoFrames)/\(outputFrames)", 13), cell(stats.skippedVideoFrames, 7),
        cell(theirs.map { $0.cpu / seconds }, 14), cell(theirs.map { seconds / $0.wall }, 9),
    ].joined(separator: " | "))
    print("server task runner, \(count) inputs: \(stats.videoFrames) video frames (\(outputFrames) expected), \(stats.skippedVideoFrames) skipped, "
        + "\(stats.audioFrames) AAC frames, \(stats.decodedFrames) of \(runner.framesSent) input frames decoded, \(stats.decodeErrors) decode errors, "
        + "\(stats.inputPackets) RTP packets, \(runner.keyframeRequests) keyframe requests; feeder thread \(String(format: "%.3f", runner.feederCPU)) CPU s (not counted)")
    if let cost = runner.cost {
        // What the encoding budget counts for this task against the CPU it took: the budget's
        // default assumes a core per this many million pixels a second.
        costRows.append(String(format: "%6d | %22.1f | %14.3f | %17.0f", count, Double(cost) / 1e6, runner.cpu / seconds, Double(cost) / 1e6 / (runner.cpu / seconds)))
    }
    print("ffmpeg command for \(count) inputs:")
    print("  ffmpeg " + ffmpegArguments(count: count).map(shellQuoted).joined(separator: " "))
    print("")
}
print("inputs | LiveRoom CPU s/s | LiveRoom RT | dropped | real-time s/s  | runner CPU s/s | runner frames | skipped | ffmpeg CPU s/s | ffmpeg RT")
print("-------+------------------+-------------+---------+----------------+----------------+---------------+---------+----------------+----------")
for row in rows { print(row) }
print("")
print("inputs | counted, Mpx/s (budget) | runner CPU s/s | counted Mpx/s per core")
print("-------+------------------------+----------------+-----------------------")
for row in costRows { print(row) }
