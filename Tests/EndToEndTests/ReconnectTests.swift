import Foundation
import LiveRoomProtocol
import Testing

/// The CLI reconnects as TRTC's SDKs do when its signaling connection is cut
/// (`Tests/Tools/tcp_cut.py` between it and the server), and the server keeps its seat meanwhile.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReconnectTests {
    static let cutTool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/tcp_cut.py").path

    /// A cuttable relay in front of the server's HTTP port; returns it and the URL through it.
    static func relay(_ server: TestServer, scope: ProcessScope) async throws -> (ChildProcess, String) {
        let port = try #require(URL(string: server.url)?.port)
        let relay = try scope.start("/usr/bin/python3", [cutTool, String(port), "120"], name: "tcp cut")
        let ready = try await relay.waitForLine { $0.hasPrefix("ready ") }
        return (relay, "http://127.0.0.1:\(ready.dropFirst("ready ".count))")
    }

    static func joinThrough(_ url: String, _ user: String, role: String, scope: ProcessScope, extra: [String]) async throws -> ChildProcess {
        let client = try scope.start(
            "liveroom",
            ["join", "--server", url, "--room", "room1", "--user-id", user, "--role", role, "--sdk-app-id", String(TestServer.sdkAppId),
             "--secret-key", TestServer.secretKey, "--json", "--verbose"] + extra,
            name: user)
        #expect((try await client.waitForEvent("onEnterRoom")["result"]?.intValue ?? -1) > 0)
        return client
    }

    @Test func aThreeSecondCutIsRecoveredAndTheAudienceNeverSeesTheAnchorLeave() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let (cut, url) = try await Self.relay(server, scope: scope)
        let host = try await Self.joinThrough(url, "host", role: "anchor", scope: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }

        cut.send("cut 3")
        try await host.waitForEvent("onConnectionLost", timeout: .seconds(5))
        _ = try await cut.waitForLine(timeout: .seconds(10)) { $0 == "cut-done" }
        let healed = ContinuousClock.now
        try await host.waitForEvent("onConnectionRecovery", timeout: .seconds(5))
        #expect(!host.events(named: "onTryToReconnect").isEmpty)
        // The anchor entered again and republished: the audience sees its video again, never a leave.
        try await fan.waitForEvent("onUserVideoAvailable", count: 2, timeout: .seconds(5)) { $0["userId"] == "host" && $0["available"] == true }
        @Sendable func receiving(_ event: JSONValue) -> Bool {
            event["remoteStatistics"]?.arrayValue?.contains { $0["userId"] == "host" && ($0["frameRate"]?.intValue ?? 0) > 5 } == true
        }
        let before = fan.events(named: "onStatistics").filter(receiving).count
        try await fan.waitForEvent("onStatistics", count: before + 1, timeout: .seconds(5), where: receiving)
        #expect(ContinuousClock.now - healed < .seconds(5), "video resumed within 5 s of the path healing")
        #expect(fan.events(named: "onRemoteUserLeaveRoom").isEmpty, "the audience never saw the anchor leave")
        #expect(host.events(named: "onExitRoom").isEmpty)
    }

    @Test func aLongCutEndsTheSessionAfterTheRetriesAndTheRoomSeesTheAnchorGo() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--reconnect-grace", "4"])
        let (cut, url) = try await Self.relay(server, scope: scope)
        let host = try await Self.joinThrough(url, "host", role: "anchor", scope: scope, extra: ["--publish", "color:FF0000"] + MediaEndToEndTests.small)
        let fan = try await server.entered("fan", in: scope)
        try await fan.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == "host" && $0["available"] == true }

        cut.send("cut 30")
        let gaveUp = try await host.waitForEvent("onError", timeout: .seconds(15)) { $0["errCode"] == .number(Double(ErrorCode.reconnectFailed)) }
        #expect(gaveUp["errMsg"]?.stringValue?.contains("giving up") == true, "\(gaveUp.jsonText)")
        #expect(host.events(named: "onTryToReconnect").count == 5)
        #expect(try await host.waitForExit(timeout: .seconds(10)) != nil)
        try await fan.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(10)) { $0["userId"] == "host" && $0["reason"] == 1 }
    }
}
