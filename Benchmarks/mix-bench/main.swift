// mix-bench: the cost of server-side mixing with LiveRoomMedia, next to the ffmpeg
// command line doing the same mix in the same run.
//
//   mix-bench [--inputs 4,9,16] [--seconds 10] [--threads 1]
//
// Each input is a 540x960@15 VP8 stream: 5 s of test card with its own label, encoded
// once up front with VP8Encoder (and written to a WebM file for ffmpeg). Per output frame
// LiveRoom decodes every input with VP8Decoder, composes them in a grid on a 540x960
// canvas with VideoCompositor (bilinear), encodes H.264 at 1300 kbps @15 (ultrafast,
// zerolatency, baseline, 2 s GOP), mixes one tone per input with AudioMixer, encodes AAC
// 128 kbps 48 kHz stereo, and muxes FLV through RTMPPublisher into /dev/null. ffmpeg
// does the same from the WebM files and lavfi sine sources (xstack + pad, amix, libx264,
// aac, -f flv /dev/null). Both loop the 5 s inputs for --seconds of output.
//
// CPU s/s is user+system CPU seconds (getrusage) per second of output; RT is output
// seconds per wall-clock second (above 1 keeps up with real time). ffmpeg's figures
// include its start-up and the tone synthesis; LiveRoom's exclude the up-front encode.
import Foundation
import LiveRoomMedia

struct Options {
    var inputs = [4, 9, 16]
    var seconds = 10
    var threads = 1

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            guard let value = iterator.next() else { fatalError("usage: mix-bench [--inputs 4,9,16] [--seconds N] [--threads N]") }
            switch flag {
            case "--inputs": inputs = value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--seconds": seconds = max(1, Int(value) ?? 10)
            case "--threads": threads = max(1, Int(value) ?? 1)
            default: fatalError("unknown option \(flag)")
            }
        }
    }
}

let width = 540, height = 960, fps = 15, bitrateKbps = 1_300, inputSeconds = 5
let options = Options(CommandLine.arguments)
let outputFrames = options.seconds * fps

func cpuSeconds(_ who: Int32) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(who), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
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

let maxInputs = options.inputs.max() ?? 4
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

@MainActor func runLiveRoom(count: Int) throws -> (cpu: Double, wall: Double, dropped: Int) {
    let cells = grid(count)
    let cpuStart = cpuSeconds(RUSAGE_SELF.rawValue)
    let start = ContinuousClock.now

    let decoders = try (0..<count).map { _ in try VP8Decoder() }
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
    for frameIndex in 0..<outputFrames {
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
            let mixed = try mixer.mix((0..<count).map { .init(frame: tones[$0][audioIndex % 50]) }, pts: Int64(audioIndex) * 960)
            for frame in try audio.encode(mixed) { publisher.write(audio: frame, timestampMs: frame.ptsMilliseconds) }
            audioIndex += 1
        }
    }
    publisher.stop()
    return (cpuSeconds(RUSAGE_SELF.rawValue) - cpuStart, wallSeconds(since: start), publisher.statistics.droppedPackets)
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

print("output: \(options.seconds) s of \(width)x\(height)@\(fps) H.264 \(bitrateKbps) kbps + AAC 128 kbps, FLV to /dev/null, \(options.threads) encoder thread(s)")
print("")
var rows: [String] = []
for count in options.inputs where count <= maxInputs {
    let ours = try runLiveRoom(count: count)
    let theirs = try runFFmpeg(count: count)
    let seconds = Double(options.seconds)
    func cell(_ value: Double?, _ width: Int) -> String {
        let text = value.map { String(format: "%.3f", $0) } ?? "n/a"
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
    func cell(_ value: Int, _ width: Int) -> String { String(repeating: " ", count: max(0, width - String(value).count)) + String(value) }
    rows.append([
        cell(count, 6), cell(ours.cpu / seconds, 16), cell(seconds / ours.wall, 11),
        cell(theirs.map { $0.cpu / seconds }, 14), cell(theirs.map { seconds / $0.wall }, 9), cell(ours.dropped, 7),
    ].joined(separator: " | "))
    print("ffmpeg command for \(count) inputs:")
    print("  ffmpeg " + ffmpegArguments(count: count).map(shellQuoted).joined(separator: " "))
    print("")
}
print("inputs | LiveRoom CPU s/s | LiveRoom RT | ffmpeg CPU s/s | ffmpeg RT | dropped")
print("-------+------------------+-------------+----------------+-----------+--------")
for row in rows { print(row) }
