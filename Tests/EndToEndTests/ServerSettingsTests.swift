import Foundation
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
        #expect(status == 64 && text.contains("LIVEROOM_SIGNALING_NICE=high is not a valid number"), "\(text)")
        // A value in range, negative as it is written, starts the server.
        let server = try await TestServer.start(in: scope, extra: ["--signaling-nice", "-5"])
        #expect(server.process.isRunning)
    }
}
