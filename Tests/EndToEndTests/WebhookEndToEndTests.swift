import Foundation
import LiveRoomProtocol
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Signed webhooks from the durable outbox, against a receiver in the test: every event
/// arrives, in order per room, through a receiver that is down, failing, slow or hostile, and
/// across a restart of the server.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct WebhookEndToEndTests {
    static let key = "e2eWebhookKey42"
    static let small = ["--resolution", "160x120", "--fps", "10", "--bitrate", "150"]

    /// What one room's scenario sends, in order (see ``roomScenario``).
    static let scenarioEvents = [101, 103, 201, 203, 103, 202, 201, 202, 204, 105, 104, 104, 102]

    func startServer(_ scope: ProcessScope, receiverPort: UInt16, extra: [String] = []) async throws -> TestServer {
        try await TestServer.start(
            in: scope, extra: ["--webhook-url", "http://127.0.0.1:\(receiverPort)/hooks/trtc?app=1", "--webhook-key", Self.key] + extra)
    }

    /// In `room`: the anchor enters and publishes, a viewer enters, the anchor mutes and unmutes
    /// its video, switches to audience, the viewer leaves, the anchor leaves.
    func roomScenario(_ server: TestServer, room: String, scope: ProcessScope) async throws {
        let anchor = try server.join("\(room)-anchor", room: room, role: "anchor", in: scope, extra: ["--publish", "testsrc"] + Self.small)
        try await anchor.waitForEvent("onEnterRoom")
        try await anchor.waitForEvent("onPublishAnswer", timeout: .seconds(15))
        let viewer = try await server.entered("\(room)-viewer", room: room, in: scope)
        anchor.send("mute-video on")
        try await viewer.waitForEvent("onUserVideoAvailable") { $0["available"] == false }
        anchor.send("mute-video off")
        try await viewer.waitForEvent("onUserVideoAvailable") { $0["available"] == true }
        anchor.send("switch-role audience")
        try await anchor.waitForEvent("onSwitchRole") { $0["role"] == "audience" }
        viewer.send("leave")
        _ = try await viewer.waitForExit()
        anchor.send("leave")
        _ = try await anchor.waitForExit()
    }

    func checkSigned(_ receiver: WebhookReceiver) {
        let state = receiver.snapshot
        #expect(state.badSignatures.isEmpty, "bad Sign on: \(state.badSignatures.prefix(3))")
        #expect(state.badHeaders.isEmpty, "bad headers: \(state.badHeaders.prefix(3))")
    }

    @Test func aReceiverDownForTenSecondsGetsEveryEventInOrderPerRoom() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let first = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId)
        let port = first.port
        let server = try await startServer(scope, receiverPort: port)
        // A first event while the receiver is up.
        let early = try await server.entered("early", room: "wh-early", in: scope)
        try await first.waitUntil(timeout: .seconds(10), "the first enter") { $0.eventsByRoom().rooms["wh-early"] == [101, 103] }
        first.stop()
        let downAt = ContinuousClock.now
        async let roomA: Void = roomScenario(server, room: "wh-a", scope: scope)
        async let roomB: Void = roomScenario(server, room: "wh-b", scope: scope)
        _ = try await (roomA, roomB)
        early.send("leave")
        _ = try await early.waitForExit()
        try await Task.sleep(until: downAt + .seconds(10))
        #expect(first.snapshot.delivered.count == 2, "nothing is answered while the receiver is down")

        let second = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId, port: port)
        defer { second.stop() }
        try await second.waitUntil(timeout: .seconds(30), "both rooms' events") { receiver in
            let rooms = receiver.eventsByRoom().rooms
            return rooms["wh-a"]?.count == Self.scenarioEvents.count && rooms["wh-b"]?.count == Self.scenarioEvents.count
                && rooms["wh-early"]?.count == 2
        }
        let (rooms, repeats) = second.eventsByRoom()
        #expect(rooms["wh-a"] == Self.scenarioEvents)
        #expect(rooms["wh-b"] == Self.scenarioEvents)
        #expect(rooms["wh-early"] == [104, 102])
        #expect(repeats == 0, "a delivered event is not sent again")
        checkSigned(first)
        checkSigned(second)
        // The bodies are TRTC's shape.
        let enter = try #require(second.snapshot.delivered.first { $0.body["EventType"]?.intValue == 103 })
        let info = try #require(enter.body["EventInfo"])
        #expect(enter.body["EventGroupId"]?.intValue == 1 && (enter.body["CallbackTs"]?.intValue ?? 0) > 1_700_000_000_000)
        #expect(info["UserId"]?.stringValue?.hasPrefix("wh-") == true && info["Role"]?.intValue == 20 && (info["EventTs"]?.intValue ?? 0) > 1_700_000_000)
        // The metrics count the deliveries and the failures.
        let metrics = try await fetch(server.url + "/metrics")
        #expect(metric("liveroom_webhook_pending", in: metrics) == 0, "\(metrics)")
        #expect(metric("liveroom_webhook_delivered_total", in: metrics) >= Double(2 * Self.scenarioEvents.count + 4))
        #expect(metric("liveroom_webhook_failures_total", in: metrics) >= 1)
    }

    @Test func aReceiverAnswering500IsRetriedUntilItAnswers200() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let receiver = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId, mode: .fail(count: 4))
        defer { receiver.stop() }
        let server = try await startServer(scope, receiverPort: receiver.port)
        let alice = try await server.entered("alice", room: "wh-500", in: scope)
        alice.send("leave")
        _ = try await alice.waitForExit()
        try await receiver.waitUntil(timeout: .seconds(30), "the room's events") { $0.eventsByRoom().rooms["wh-500"]?.count == 4 }
        #expect(receiver.eventsByRoom().rooms["wh-500"] == [101, 103, 104, 102])
        #expect(receiver.snapshot.refusedWith500 == 4)
        checkSigned(receiver)
    }

    @Test func pendingEventsArriveAfterTheServerIsKilledAndRestarts() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // A free port, closed again: the receiver is down until the server has restarted.
        let probe = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId)
        let port = probe.port
        probe.stop()
        let server = try await startServer(scope, receiverPort: port)
        for user in ["u1", "u2"] {
            let client = try await server.entered(user, room: "wh-restart", role: "anchor", in: scope)
            client.send("leave")
            _ = try await client.waitForExit()
        }
        try await Task.sleep(for: .milliseconds(500))  // stored within milliseconds
        // kill -9: nothing is flushed on the way out; what was stored is all there is.
        server.process.crash()

        let receiver = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId, port: port)
        defer { receiver.stop() }
        let restarted = try await startServer(scope, receiverPort: port)
        try await receiver.waitUntil(timeout: .seconds(20), "the events from before the restart") {
            $0.eventsByRoom().rooms["wh-restart"]?.count == 8
        }
        #expect(receiver.eventsByRoom().rooms["wh-restart"] == [101, 103, 104, 102, 101, 103, 104, 102])
        checkSigned(receiver)
        // New events still flow after the old ones.
        let later = try await restarted.entered("u3", room: "wh-after", in: scope)
        try await receiver.waitUntil(timeout: .seconds(10), "an event after the restart") { $0.eventsByRoom().rooms["wh-after"] == [101, 103] }
        later.stop()
    }

    @Test func aSilentAndAnEndlessReceiverAreBoundedAndRoomsStayPrompt() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let receiver = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId, mode: .silent)
        defer { receiver.stop() }
        let server = try await startServer(scope, receiverPort: receiver.port)
        let host = try await server.entered("host", room: "wh-hostile", role: "anchor", in: scope)
        // The receiver never answers: the attempt times out after 5 s and is tried again.
        try await receiver.waitUntil(timeout: .seconds(20), "a second attempt after a timeout") { $0.snapshot.silentConnections >= 2 }
        // Meanwhile rooms are served at once.
        let started = ContinuousClock.now
        let fan = try await server.entered("fan", room: "wh-other", in: scope)
        #expect(ContinuousClock.now - started < .seconds(5), "onEnterRoom waited for webhooks")

        // An answer that never ends is read up to the limit, then the connection is closed.
        receiver.setMode(.endless)
        try await receiver.waitUntil(timeout: .seconds(30), "an endless answer cut off") { !$0.snapshot.endlessWritten.isEmpty }
        let written = receiver.snapshot.endlessWritten
        #expect(written.allSatisfy { $0 < WebhookReceiver.endlessCap }, "the server read an endless answer to the end: \(written)")
        try await server.checkServesANormalRoom(in: scope)

        receiver.setMode(.ok)
        host.send("leave")
        _ = try await host.waitForExit()
        fan.send("leave")
        _ = try await fan.waitForExit()
        try await receiver.waitUntil(timeout: .seconds(30), "every event once the receiver answers") { receiver in
            let rooms = receiver.eventsByRoom().rooms
            return rooms["wh-hostile"]?.count == 4 && rooms["wh-other"]?.count == 4
        }
        #expect(receiver.eventsByRoom().rooms["wh-hostile"] == [101, 103, 104, 102])
        #expect(receiver.eventsByRoom().rooms["wh-other"] == [101, 103, 104, 102])
        checkSigned(receiver)
    }

    @Test func ordersSoldOutPKLinksAndBattlesAreReportedToEachRoom() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let receiver = try WebhookReceiver(key: Self.key, sdkAppId: TestServer.sdkAppId)
        defer { receiver.stop() }
        let server = try await startServer(scope, receiverPort: receiver.port)
        let hostA = try await server.entered("hostA", room: "wh-shopA", role: "anchor", in: scope)
        let hostB = try await server.entered("hostB", room: "wh-shopB", role: "anchor", in: scope)
        let fan = try await server.entered("fan", room: "wh-shopA", in: scope)
        hostA.send(#"product add {"itemNumber":1,"title":"Tea","price":"2.50","itemUrl":"https://shop.example/1","stock":2}"#)
        #expect(try await hostA.waitForEvent("onProductResult")["code"] == 0)
        fan.send("buy 1 1")
        let orderId = try #require(try await fan.waitForEvent("onBuyResult")["orderId"]?.stringValue)
        let (confirmed, _) = try await server.admin("ConfirmOrder", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "OrderId": .string(orderId)], in: scope)
        #expect(confirmed["Response"]?["Order"]?["state"] == "paid", "\(confirmed.jsonText)")
        // Room B's PK allow-list, set by the admin API, lets room A link.
        let allowed = try await server.admin(
            "SetPKAllowList", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "wh-shopB", "AllowedRoomIds": ["wh-shopA"]], in: scope).0
        #expect(allowed["Response"]?["AllowedRoomIds"] == ["wh-shopA"], "\(allowed.jsonText)")
        try await hostB.waitForEvent("onPKAllowList") { $0["rooms"] == [["strRoomId": "wh-shopA"]] }
        hostA.send("connect-room wh-shopB hostB")
        #expect(try await hostA.waitForEvent("onConnectOtherRoom")["errCode"] == 0)
        hostA.send("pk-battle 5")
        try await hostA.waitForEvent("onPKBattleStarted")
        fan.send("buy 1 1")  // the last one: sold out, and room A wins
        #expect(try await fan.waitForEvent("onBuyResult", count: 2)["code"] == 0)
        try await hostB.waitForEvent("onPKBattleEnded", timeout: .seconds(10))
        hostA.send("disconnect-room")
        try await hostA.waitForEvent("onDisconnectOtherRoom")

        func ours(_ room: String) -> [Int] { (receiver.eventsByRoom().rooms[room] ?? []).filter { $0 > 100_000 } }
        try await receiver.waitUntil(timeout: .seconds(15), "the shop and PK events") { _ in ours("wh-shopA").count == 8 && ours("wh-shopB").count == 4 }
        #expect(ours("wh-shopA") == [100201, 100202, 100301, 100303, 100201, 100205, 100304, 100302])
        #expect(ours("wh-shopB") == [100301, 100303, 100304, 100302])
        let delivered = receiver.snapshot.delivered.map(\.body)
        let paid = try #require(delivered.first { $0["EventType"] == 100202 })
        #expect(paid["EventGroupId"] == 1002 && paid["EventInfo"]?["OrderId"] == .string(orderId) && paid["EventInfo"]?["AmountMinor"] == 250, "\(paid.jsonText)")
        #expect(paid["EventInfo"]?["Currency"]?.stringValue?.count == 3 && paid["EventInfo"]?["UserId"] == "fan")
        let ended = delivered.filter { $0["EventType"] == 100304 }
        #expect(ended.count == 2 && ended.allSatisfy { $0["EventInfo"]?["WinnerRoomId"] == "wh-shopA" }, "\(ended.map(\.jsonText))")
        #expect(ended.first { $0["EventInfo"]?["RoomId"] == "wh-shopA" }?["EventInfo"]?["Won"] == true)
        let link = try #require(delivered.first { $0["EventType"] == 100301 && $0["EventInfo"]?["RoomId"] == "wh-shopB" })
        #expect(link["EventInfo"]?["OtherRoomId"] == "wh-shopA" && link["EventInfo"]?["OtherUserId"] == "hostA" && link["EventInfo"]?["Caller"] == false)
        checkSigned(receiver)
    }

    @Test func badWebhookSettingsAreRefusedAtStart() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        for (arguments, message) in [
            (["--webhook-url", "http://127.0.0.1:9/x", "--webhook-key", "not-letters!"], "letters and digits"),
            (["--webhook-url", "http://127.0.0.1:9/x", "--webhook-key", String(repeating: "a", count: 33)], "letters and digits"),
            (["--webhook-url", "ftp://example.com/x", "--webhook-key", "abc"], "http:// or https://"),
            (["--webhook-url", "http://127.0.0.1:9/x"], "needs --webhook-key"),
        ] {
            let server = try scope.start(
                "liveroom-server", ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--data-dir", scope.dataDirectory.path] + arguments,
                name: "server")
            let status = try await server.waitForExit()
            #expect(status != nil && status != 0, "\(arguments) was accepted")
            #expect(server.standardError.contains(message), "\(arguments): \(server.standardError)")
        }
    }

    func fetch(_ url: String) async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: URL(string: url)!)
        return String(decoding: data, as: UTF8.self)
    }

    func metric(_ name: String, in text: String) -> Double {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? -1
    }
}
