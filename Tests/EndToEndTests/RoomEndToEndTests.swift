import Foundation
import LiveRoomAuth
import LiveRoomProtocol
import Testing

/// Real `liveroom-server` and `liveroom join` processes on loopback.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RoomEndToEndTests {
    @Test func enterMessageAndLeave() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let viewer = try await server.entered("viewer", in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "host" }

        let popup = #"{"cmd":"item_popup_msg","msg":{"itemNumber":1,"itemPrice":199.0,"itemTitle":"Green tea","itemUrl":"https://shop.example/1"}}"#
        host.send("custom 1 \(popup)")
        let message = try await viewer.waitForEvent("onRecvCustomCmdMsg")
        #expect(message["userId"] == "host")
        #expect(message["cmdID"] == 1)
        #expect(message["seq"] == 1)
        #expect(message["data"]?.stringValue == popup)
        #expect(host.events(named: "onRecvCustomCmdMsg").isEmpty, "the sender does not get its own message")

        // An unknown command prints an error and the session goes on.
        viewer.send("dance")
        try await viewer.waitForEvent("onError") { $0["errCode"]?.intValue == ErrorCode.unknownRequest }
        viewer.send("custom 2 still here")
        try await host.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "still here" }

        viewer.send("leave")
        try await viewer.waitForEvent("onExitRoom") { $0["reason"] == 0 }
        #expect(try await viewer.waitForExit() == 0)
        // The audience member was never announced, so the anchor hears nothing of the leave.
        #expect(host.events(named: "onRemoteUserLeaveRoom").isEmpty)

        // End of standard input leaves too.
        host.closeInput()
        try await host.waitForEvent("onExitRoom")
        #expect(try await host.waitForExit() == 0)
    }

    @Test func anchorsSeeEachOtherComeAndGo() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--reconnect-grace", "2"])
        let a = try await server.entered("a", role: "anchor", in: scope)
        let b = try await server.entered("b", role: "anchor", in: scope)
        try await a.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "b" }
        try await b.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "a" }
        let exited = try await server.entered("c", role: "anchor", in: scope)
        exited.send("leave")
        try await a.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "c" && $0["reason"] == 0 }
        // Killed, no exitRoom: the seat is kept for a reconnect for the grace, then the room is told.
        let killed = ContinuousClock.now
        b.stop()
        try await Task.sleep(for: .seconds(1))
        #expect(a.events(named: "onRemoteUserLeaveRoom").allSatisfy { $0["userId"] != "b" }, "not yet: b may come back")
        try await a.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "b" && $0["reason"] == 1 }
        #expect(ContinuousClock.now - killed >= .seconds(2), "after the grace")
    }

    @Test func enterErrorsCarryTRTCCodes() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let app = String(TestServer.sdkAppId)
        let goodSig = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "u1", time: Int64(Date().timeIntervalSince1970), expire: 600).encoded()
        let cases: [(String, [String], Int)] = [
            ("malformed usersig", ["--room", "r", "--user-id", "u1", "--sdk-app-id", app, "--usersig", "not-a-sig"], -3320),
            ("wrong secret", ["--room", "r", "--user-id", "u1", "--sdk-app-id", app, "--secret-key", "wrong"], -100018),
            ("usersig of another user", ["--room", "r", "--user-id", "u2", "--sdk-app-id", app, "--usersig", goodSig], -100018),
            ("expired usersig", ["--room", "r", "--user-id", "u1", "--sdk-app-id", app, "--usersig",
                UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "u1", time: 1_600_000_000, expire: 60).encoded()], -100018),
            ("unknown sdkappid", ["--room", "r", "--user-id", "u1", "--sdk-app-id", "1400000999", "--usersig", goodSig], -3317),
            ("empty room id", ["--room", "", "--user-id", "u1", "--sdk-app-id", app, "--usersig", goodSig], -3318),
            ("long user id", ["--room", "r", "--user-id", String(repeating: "u", count: 33), "--sdk-app-id", app, "--secret-key", TestServer.secretKey], -3319),
        ]
        for (label, arguments, code) in cases {
            let client = try scope.start("liveroom", ["join", "--server", server.url, "--json"] + arguments, name: label)
            let event = try await client.waitForEvent("onEnterRoom")
            #expect(event["result"]?.intValue == code, "\(label): \(event.jsonText)")
            #expect((event["errMsg"]?.stringValue ?? "").isEmpty == false, "\(label) has a message")
            #expect(try await client.waitForExit() == 2, "\(label): join exits with 2 when refused")
        }
        // The server kept serving.
        _ = try await server.entered("fine", in: scope)
    }

    @Test func secondEnterReplacesFirst() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let first = try await server.entered("dup", role: "anchor", in: scope)
        _ = try await server.entered("dup", role: "anchor", in: scope)
        try await first.waitForEvent("onExitRoom") { $0["reason"] == 1 }
        #expect(try await first.waitForExit() == 0)
    }

    @Test func sigtermTellsClientsAndKeepsHistory() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        server.process.terminate()
        try await host.waitForEvent("onExitRoom") { $0["reason"] == 2 }
        #expect(try await server.process.waitForExit(timeout: .seconds(10)) == 0)
        // A new server on the same data directory finds the room closed in its history.
        let again = try await TestServer.start(in: scope)
        let (history, _) = try await again.admin("DescribeRoomInfo", ["RoomId": "room1"], in: scope)
        #expect(history["Response"]?["RoomList"]?.arrayValue?.first?["DestroyReason"] == "dismissed")
    }

    @Test func anchorLimitIsEnforced() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--max-anchors", "1"])
        _ = try await server.entered("a1", role: "anchor", in: scope)
        let second = try server.join("a2", role: "anchor", in: scope)
        let refused = try await second.waitForEvent("onEnterRoom")
        #expect(refused["result"]?.intValue == ErrorCode.tooManyAnchors)
        #expect(refused["errMsg"]?.stringValue?.contains("1 anchors") == true)
    }

    @Test func micConnectionByRequestAndByInvitation() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let fan = try await server.entered("fan", in: scope)
        let watcher = try await server.entered("watcher", in: scope)

        // Without approval, switching to anchor is refused.
        fan.send("switch-role anchor")
        let refused = try await fan.waitForEvent("onSwitchRole")
        #expect(refused["errCode"]?.intValue == ErrorCode.micApprovalRequired)

        fan.send("request-mic")
        try await host.waitForEvent("onMicRequest") { $0["userId"] == "fan" }
        host.send("accept-mic fan")
        try await fan.waitForEvent("onMicRequestResult") { $0["accepted"] == true && $0["userId"] == "host" }
        try await fan.waitForEvent("onSwitchRole", count: 2) { _ in true }
        #expect(fan.events(named: "onSwitchRole").last?["errCode"] == 0)
        try await watcher.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "fan" }
        try await host.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "fan" }

        // The co-host is a real anchor now: their messages reach everyone.
        fan.send("custom 4 hello from the co-host")
        try await watcher.waitForEvent("onRecvCustomCmdMsg") { $0["userId"] == "fan" }

        host.send("end-mic fan")
        try await fan.waitForEvent("onSwitchRole", count: 3) { _ in true }
        try await watcher.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "fan" && $0["reason"] == 3 }

        // Invitation: rejected, then accepted.
        host.send("invite-mic watcher")
        try await watcher.waitForEvent("onMicInvitation") { $0["userId"] == "host" }
        watcher.send("reject-invite")
        try await host.waitForEvent("onMicInvitationResult") { $0["userId"] == "watcher" && $0["accepted"] == false }
        host.send("invite-mic watcher")
        try await watcher.waitForEvent("onMicInvitation", count: 2)
        watcher.send("accept-invite")
        try await host.waitForEvent("onMicInvitationResult") { $0["userId"] == "watcher" && $0["accepted"] == true }
        try await watcher.waitForEvent("onSwitchRole") { $0["errCode"] == 0 }
        try await fan.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "watcher" }

        // Audience may not answer for anchors.
        fan.send("accept-mic watcher")
        try await fan.waitForEvent("onError") { $0["errCode"]?.intValue == ErrorCode.anchorOnly }
    }

    @Test func customMessageRateLimitIsAnErrorNotADrop() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let viewer = try await server.entered("viewer", in: scope)
        for i in 0..<40 { host.send("custom 1 burst \(i)") }
        host.send("custom 11 bad id")
        try await host.waitForEvent("onError") { $0["errCode"]?.intValue == ErrorCode.invalidCustomMessage }
        let limited = host.events(named: "onError").filter { $0["errCode"]?.intValue == ErrorCode.customMessageRateLimited }
        #expect(!limited.isEmpty)
        // Every message was either delivered or refused with an error.
        try await Task.sleep(for: .milliseconds(300))
        let delivered = viewer.events(named: "onRecvCustomCmdMsg").count
        #expect(delivered + limited.count == 40, "delivered \(delivered), refused \(limited.count)")
        #expect(delivered >= 30)
    }

    @Test func usersigCommandMakesVerifiableSigs() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let process = try scope.start(
            "liveroom", ["usersig", "--sdk-app-id", "1400000000", "--secret-key", "k", "--user-id", "alice", "--expire", "600"])
        #expect(try await process.waitForExit() == 0)
        let sig = try #require(process.output.first)
        let verified = try UserSig.verify(sig, sdkAppId: 1_400_000_000, secretKey: "k", identifier: "alice", now: Int64(Date().timeIntervalSince1970))
        #expect(verified.expire == 600)
    }

    @Test func developmentDefaultsArePrintedAndKept() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        func start() async throws -> (ChildProcess, String, String) {
            let server = try scope.start("liveroom-server", ["--port", "0", "--data-dir", scope.dataDirectory.path], name: "dev server")
            let secretLine = try await server.waitForLine { $0.hasPrefix("Secret key: ") }
            let urlLine = try await server.waitForLine { $0.contains("listening on http://127.0.0.1:") }
            #expect(server.output.contains("SDKAppID: 1400000000"))
            let secret = String(secretLine.dropFirst("Secret key: ".count).prefix { $0 != " " })
            return (server, secret, String(urlLine[urlLine.range(of: "http://")!.lowerBound...]))
        }
        let (first, secret, url) = try await start()
        #expect(secret.count == 64)
        let client = try scope.start(
            "liveroom", ["join", "--server", url, "--room", "r", "--user-id", "u", "--sdk-app-id", "1400000000", "--secret-key", secret, "--json", "--duration", "0.5"])
        try await client.waitForEvent("onEnterRoom") { ($0["result"]?.intValue ?? -1) >= 0 }
        #expect(try await client.waitForExit() == 0, "--duration ends the session")
        first.stop()
        let (_, again, _) = try await start()
        #expect(again == secret, "the development secret is kept in the data directory")
    }
}
