import Foundation
import LiveRoomProtocol
import Testing

/// Settings the server checks before it starts: a value out of range or not a number ends it
/// with exit status 64 and a message naming the setting.
@Suite(.timeLimit(.minutes(1))) struct ServerSettingsTests {
    static func refusal(_ arguments: [String], environment: [String: String] = [:], in scope: ProcessScope) async throws -> (Int32?, String) {
        let server = try scope.start(
            "liveroom-server",
            ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", scope.dataDirectory.path] + arguments,
            name: "server", environment: environment)
        let status = try await server.waitForExit()
        return (status, server.standardError + server.output.joined())
    }

    @Test func aSignalingNiceOutOfRangeOrNotANumberIsRefused() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        for value in ["1", "-21", "99999999999", "-99999999999"] {
            let (status, text) = try await Self.refusal(["--signaling-nice", value], in: scope)
            #expect(status == 64 && text.contains("--signaling-nice (LIVEROOM_SIGNALING_NICE) must be -20 to 0"), "\(value): \(status.map(String.init) ?? "running") \(text)")
        }
        let (status, text) = try await Self.refusal([], environment: ["LIVEROOM_SIGNALING_NICE": "high"], in: scope)
        #expect(status == 64 && text.contains("LIVEROOM_SIGNALING_NICE=high is not a whole number from -20 to 0"), "\(text)")
        // A value in range, negative as it is written, starts the server.
        let server = try await TestServer.start(in: scope, extra: ["--signaling-nice", "-5"])
        #expect(server.process.isRunning)
    }

    /// A `--config` file sets what it names; the environment wins over it, a flag over both.
    @Test func aConfigFileSetsTheServerAndTheEnvironmentAndFlagsWinOverIt() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let file = scope.dataDirectory.appendingPathComponent("liveroom.yaml")
        try FileManager.default.createDirectory(at: scope.dataDirectory, withIntermediateDirectories: true)
        // port 1 loses to TestServer's --port 0; maxAnchors 3 to the environment's 1.
        try Data("port: 1\nloginTimeout: 1\nmaxAnchors: 3\n".utf8).write(to: file)
        let server = try await TestServer.start(in: scope, extra: ["--config", file.path], environment: ["LIVEROOM_MAX_ANCHORS": "1"])

        let (events, close) = try await SignalingRobustnessTests.exchange(server.url, frames: [], settle: .seconds(3))
        #expect(close?.closeCode == .policyViolation, "the file's 1 s login deadline: \(String(describing: close))")
        #expect(events.compactMap { $0["errCode"]?.intValue } == [ErrorCode.loginTimeout], "\(events)")

        _ = try await server.entered("a1", role: "anchor", in: scope)
        let second = try server.join("a2", role: "anchor", in: scope)
        let refused = try await second.waitForEvent("onEnterRoom")
        #expect(refused["result"]?.intValue == ErrorCode.tooManyAnchors, "LIVEROOM_MAX_ANCHORS=1 wins over the file: \(refused)")
    }

    @Test func aBadConfigFileStopsTheServerNamingTheKey() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        try FileManager.default.createDirectory(at: scope.dataDirectory, withIntermediateDirectories: true)
        let file = scope.dataDirectory.appendingPathComponent("liveroom.yaml")
        try Data("pingIntervall: 30\n".utf8).write(to: file)
        let (status, text) = try await Self.refusal(["--config", file.path], in: scope)
        #expect(status == 64 && text.contains("no setting is called \"pingIntervall\""), "\(text)")
    }
}
