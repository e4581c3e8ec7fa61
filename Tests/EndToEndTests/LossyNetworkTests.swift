import Foundation
import TestTools
import Testing

/// Media over a lossy, jittery path: `Tests/Tools/udp_impair.py` sits between both clients and
/// the server's media port (the server announces the relay's address), dropping and delaying
/// datagrams both ways; NACK and retransmission must make up for it.
@Suite(.serialized, .timeLimit(.minutes(3)), .requires(.ffprobe))
struct LossyNetworkTests {
    static let relay = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/udp_impair.py").path

    /// The share of the frames sent in the recorded video's span (first to last video frame;
    /// the file's own duration also covers audio that came before the first keyframe) that the
    /// recording holds, the frames recorded, and that span in seconds.
    static func delivered(_ path: String, fps: Double) throws -> (ratio: Double, frames: Int, seconds: Double) {
        let result = try RequiredTool.ffprobe.run(
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path], timeout: toolTimeout)
        let times = String(decoding: result.output, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        let first = try #require(times.first), last = try #require(times.last)
        let seconds = last - first
        return (Double(times.count) / ((seconds * fps).rounded() + 1), times.count, seconds)
    }

    @Test func tenPercentLossEachWayWithJitterStillDeliversNinetyFivePercentOfTheFrames() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--announce-ip", "127.0.0.2"])
        // The relay stands for the network: as root it runs ahead of the processes it carries
        // packets for, so a busy machine does not add its own delays to the 50 ± 30 ms asked for.
        let relayArguments = [Self.relay, "127.0.0.2", String(server.mediaPort), "127.0.0.1", String(server.mediaPort), "10", "50", "30"]
        let relay = try scope.start(
            getuid() == 0 ? "/usr/bin/nice" : "/usr/bin/python3", (getuid() == 0 ? ["-n", "-10", "/usr/bin/python3"] : []) + relayArguments,
            name: "impairment relay")
        _ = try await relay.waitForLine { $0 == "ready" }

        let recordings = scope.dataDirectory.appendingPathComponent("rec-lossy")
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(20)) { $0["userId"] == "host" }
        try await Task.sleep(for: .seconds(8))
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)

        let stats = try #require(relay.output.last { $0.hasPrefix("stats ") })
        let (ratio, frames, seconds) = try Self.delivered(recordings.appendingPathComponent("host.mkv").path, fps: 15)
        #expect(ratio >= 0.95, "\(frames) frames in \(seconds) s at 15 fps = \(Int(ratio * 100)) %; relay \(stats)")
        #expect(seconds >= 6, "the recording spans the run: \(seconds) s")
    }
}
