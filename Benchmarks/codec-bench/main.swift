// codec-bench: how fast LiveRoomMedia encodes a 540x960@15 test card with VP8 and H.264 at
// 1300 kbps, next to the ffmpeg command line doing the same encode in the same run, and how
// long decoding the same streams takes against encoding them (what a mix's inputs weigh).
//
//   codec-bench [--seconds 10] [--rounds 5] [--threads 1]
//
// LiveRoomMedia rows time only the encoder calls (frames are rendered beforehand). The
// ffmpeg rows time the whole process by wall clock: start-up, lavfi testsrc rendering and
// RGB→YUV conversion included, so they slightly flatter LiveRoomMedia.
import ArgumentParser
import Foundation
import LiveRoomMedia

struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codec-bench",
        abstract: "Measures LiveRoomMedia's VP8 and H.264 encoders on a 540x960@15 test card, next to ffmpeg doing the same encode.")

    @Option(help: "Seconds of video per round.")
    var seconds: Int = 10
    @Option(help: "Rounds; the median is reported.")
    var rounds: Int = 5
    @Option(help: "Encoder threads.")
    var threads: Int = 1

    func validate() throws {
        guard seconds >= 1, rounds >= 1, threads >= 1 else { throw ValidationError("--seconds, --rounds and --threads must be at least 1") }
    }
}

let width = 540, height = 960, fps = 15, bitrateKbps = 1_300
let options = Options.parseOrExit()
let frameCount = options.seconds * fps

struct Result {
    var name: String
    var roundSeconds: [Double]
    var bytes: Int?

    var median: Double { roundSeconds.sorted()[roundSeconds.count / 2] }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func benchEncoder(_ name: String, make: () throws -> any VideoEncoding, frames: [VideoFrame]) throws -> Result {
    var rounds: [Double] = []
    var bytes = 0
    let clock = ContinuousClock()
    for _ in 0..<options.rounds {
        let encoder = try make()
        bytes = 0
        var produced = 0
        let elapsed = try clock.measure {
            for frame in frames {
                for packet in try encoder.encode(frame, forceKeyframe: false) {
                    bytes += packet.data.count
                    produced += 1
                }
            }
        }
        precondition(produced == frames.count, "\(name) produced \(produced) of \(frames.count) frames")
        rounds.append(seconds(elapsed))
    }
    return Result(name: name, roundSeconds: rounds, bytes: bytes)
}

/// Times decoding what `make` encodes from `frames` (encoded once, not timed), as the mixer
/// decodes an input: each frame into the same picture.
func benchDecoder(_ name: String, make: () throws -> any VideoEncoding, decoder makeDecoder: () throws -> any VideoDecoding, frames: [VideoFrame]) throws -> Result {
    let encoder = try make()
    let encoded = try frames.flatMap { try encoder.encode($0, forceKeyframe: false) }
    var rounds: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<options.rounds {
        let decoder = try makeDecoder()
        var picture: VideoFrame?
        var decoded = 0
        let elapsed = try clock.measure {
            for frame in encoded where try decoder.decode(frame, into: &picture) { decoded += 1 }
        }
        precondition(decoded == frames.count, "\(name) decoded \(decoded) of \(frames.count) frames")
        rounds.append(seconds(elapsed))
    }
    return Result(name: name, roundSeconds: rounds, bytes: encoded.reduce(0) { $0 + $1.data.count })
}

func findTool(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

func benchCommand(_ name: String, _ executable: String, _ arguments: [String]) throws -> Result {
    var rounds: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<options.rounds {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let elapsed = try clock.measure {
            try process.run()
            process.waitUntilExit()
        }
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "codec-bench", code: Int(process.terminationStatus), userInfo: [NSLocalizedDescriptionKey: "\(name) exited with \(process.terminationStatus)"])
        }
        rounds.append(seconds(elapsed))
    }
    return Result(name: name, roundSeconds: rounds, bytes: nil)
}

func report(_ result: Result) {
    let median = result.median
    let msPerFrame = median * 1_000 / Double(frameCount)
    let realtime = Double(options.seconds) / median
    let rate = result.bytes.map { String(format: "%6.0f kbps", Double($0) * 8 / Double(options.seconds) / 1_000) } ?? "          "
    let name = result.name.padding(toLength: 48, withPad: " ", startingAt: 0)
    print(String(format: "%@ %7.3f s/round %7.2f ms/frame %6.1fx real time  %@", name, median, msPerFrame, realtime, rate))
}

/// Reads `count` raw I420 frames from ffmpeg's lavfi testsrc (not timed).
func testsrcFrames(ffmpeg: String, count: Int, filter: String = "") throws -> [VideoFrame] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ffmpeg)
    process.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=\(width)x\(height):rate=\(fps)\(filter)",
                         "-frames:v", "\(count)", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let lumaSize = width * height, chromaSize = ((width + 1) / 2) * ((height + 1) / 2), frameSize = lumaSize + 2 * chromaSize
    guard data.count == frameSize * count else { throw NSError(domain: "codec-bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "testsrc gave \(data.count) bytes"]) }
    let bytes = [UInt8](data)
    return try (0..<count).map { index in
        let base = index * frameSize
        return try VideoFrame(
            width: width, height: height,
            y: Array(bytes[base..<(base + lumaSize)]),
            u: Array(bytes[(base + lumaSize)..<(base + lumaSize + chromaSize)]),
            v: Array(bytes[(base + lumaSize + chromaSize)..<(base + frameSize)]),
            pts: Int64(index) * 90_000 / Int64(fps))
    }
}

/// Writes frames as raw I420 for ffmpeg's rawvideo demuxer.
func writeRaw(_ frames: [VideoFrame], to path: String) throws {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    for frame in frames {
        try handle.write(contentsOf: frame.y)
        try handle.write(contentsOf: frame.u)
        try handle.write(contentsOf: frame.v)
    }
}

print("codec-bench: \(width)x\(height)@\(fps), \(options.seconds) s (\(frameCount) frames), \(bitrateKbps) kbps, median of \(options.rounds) rounds, threads \(options.threads) unless noted")
let card = TestCardSource(width: width, height: height, fps: fps, label: "bench")
let cardFrames = (0..<frameCount).map { card.nextFrame(index: $0) }

func makeVP8() throws -> any VideoEncoding {
    try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps, threads: options.threads)
}
func makeH264() throws -> any VideoEncoding {
    try H264Encoder(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps, threads: options.threads)
}

var sections: [(String, [Result])] = []
/// Decoding against encoding on the same content: the weight a decoded pixel has in the
/// server's encoding budget (docs/mixing.md).
func decodeSection(_ title: String, frames: [VideoFrame]) throws -> (String, [Result]) {
    let results = [
        try benchEncoder("VP8   LiveRoomMedia VP8Encoder", make: makeVP8, frames: frames),
        try benchDecoder("VP8   LiveRoomMedia VP8Decoder", make: makeVP8, decoder: { try VP8Decoder() }, frames: frames),
        try benchEncoder("H.264 LiveRoomMedia H264Encoder", make: makeH264, frames: frames),
        try benchDecoder("H.264 LiveRoomMedia H264Decoder", make: makeH264, decoder: { try H264Decoder() }, frames: frames),
    ]
    let ratios = String(format: "decode / H.264 encode: VP8 %.2f, H.264 %.2f", results[1].median / results[2].median, results[3].median / results[2].median)
    return ("\(title): \(ratios)", results)
}
do {
    guard let ffmpeg = findTool("ffmpeg") else {
        print("ffmpeg not on PATH: LiveRoomMedia figures only, no baseline")
        let (title, results) = try decodeSection("decoding, content: TestCardSource", frames: cardFrames)
        print(title)
        for result in results { report(result) }
        exit(0)
    }
    let vp8 = ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "\(bitrateKbps)k"]
    let x264 = ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-b:v", "\(bitrateKbps)k"]
    let threads = ["-threads", "\(options.threads)"]
    let quiet = ["-nostdin", "-hide_banner", "-loglevel", "error"]
    let toNull = ["-f", "null", "-"]

    // The briefed baseline: ffmpeg's testsrc, encoded by the ffmpeg command line.
    let lavfi = quiet + ["-f", "lavfi", "-i", "testsrc=size=\(width)x\(height):rate=\(fps)", "-t", "\(options.seconds)"]
    let testsrc = try testsrcFrames(ffmpeg: ffmpeg, count: frameCount)
    sections.append(("content: ffmpeg testsrc (the briefed command line)", [
        try benchEncoder("VP8   LiveRoomMedia VP8Encoder", make: makeVP8, frames: testsrc),
        try benchCommand("VP8   ffmpeg libvpx -threads \(options.threads)", ffmpeg, lavfi + vp8 + threads + toNull),
        try benchCommand("VP8   ffmpeg libvpx (as briefed, threads auto)", ffmpeg, lavfi + vp8 + toNull),
        try benchEncoder("H.264 LiveRoomMedia H264Encoder", make: makeH264, frames: testsrc),
        try benchCommand("H.264 ffmpeg libx264 -threads \(options.threads)", ffmpeg, lavfi + x264 + threads + toNull),
        try benchCommand("H.264 ffmpeg libx264 (as briefed, threads auto)", ffmpeg, lavfi + x264 + toNull),
        // Fixed cost inside the ffmpeg rows: process start, x264 init, one frame.
        try benchCommand("      ffmpeg start-up + 1 frame (libx264) *", ffmpeg, quiet + ["-f", "lavfi", "-i", "testsrc=size=\(width)x\(height):rate=\(fps)", "-frames:v", "1"] + x264 + threads + toNull),
    ]))

    // Same encoders on LiveRoom's own test card; ffmpeg reads the identical frames raw.
    let rawPath = FileManager.default.temporaryDirectory.appendingPathComponent("codec-bench-\(UUID().uuidString).yuv").path
    try writeRaw(cardFrames, to: rawPath)
    defer { try? FileManager.default.removeItem(atPath: rawPath) }
    let raw = quiet + ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "\(width)x\(height)", "-r", "\(fps)", "-i", rawPath]
    sections.append(("content: TestCardSource (ffmpeg reads the same frames as raw I420)", [
        try benchEncoder("VP8   LiveRoomMedia VP8Encoder", make: makeVP8, frames: cardFrames),
        try benchCommand("VP8   ffmpeg libvpx -threads \(options.threads)", ffmpeg, raw + vp8 + threads + toNull),
        try benchEncoder("H.264 LiveRoomMedia H264Encoder", make: makeH264, frames: cardFrames),
        try benchCommand("H.264 ffmpeg libx264 -threads \(options.threads)", ffmpeg, raw + x264 + threads + toNull),
    ]))
    sections.append(try decodeSection("decoding, content: ffmpeg testsrc", frames: testsrc))
    // Moving noise over the pattern, as a camera's sensor gives: harder to code than either card.
    let noisy = try testsrcFrames(ffmpeg: ffmpeg, count: frameCount, filter: ",noise=alls=12:allf=t")
    sections.append(try decodeSection("decoding, content: ffmpeg testsrc with moving noise", frames: noisy))
    sections.append(try decodeSection("decoding, content: TestCardSource", frames: cardFrames))
} catch {
    print("codec-bench failed: \(error)")
    exit(1)
}
for (title, results) in sections {
    print("\n\(title)")
    for result in results { report(result) }
}
print("\nLiveRoomMedia rows time the encode calls only; ffmpeg rows are wall clock for the whole process (start-up, input, conversion).")
print("* one frame only: read its s/round as the fixed cost inside every ffmpeg row; its per-frame figures are not comparable.")
