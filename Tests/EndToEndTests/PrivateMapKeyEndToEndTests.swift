import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import Testing

/// With `--require-private-map-key`, nobody enters as an anchor without a key that says so:
/// the mic-connection approval cannot be bypassed, and an approved audience member sends.
@Suite(.serialized, .timeLimit(.minutes(2))) struct PrivateMapKeyEndToEndTests {
    /// A PrivateMapKey made by `liveroom usersig --private-map-key`, for string room `room` or numeric room `roomNumber`.
    static func key(_ user: String, room: String = "room1", roomNumber: UInt32? = nil, privilege: Int, in scope: ProcessScope) async throws -> String {
        let target = roomNumber.map { ["--room-number", String($0)] } ?? ["--room", room]
        let process = try scope.start(
            "liveroom",
            ["usersig", "--private-map-key"] + target + ["--privilege", String(privilege), "--user-id", user,
             "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--expire", "600"],
            name: "usersig \(user)")
        return try await process.waitForLine { !$0.isEmpty }
    }

    static func enterResult(_ client: ChildProcess) async throws -> JSONValue {
        try await client.waitForEvent("onEnterRoom")
    }

    @Test func enteringAsAnchorNeedsTheKeysPrivilegesAndMicApprovalGrantsSendingWithRSSUnder200MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--require-private-map-key"])
        let media = ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small

        // No key, or a key for another room: nobody enters.
        let intruder = try server.join("intruder", role: "anchor", in: scope, extra: media)
        let refused = try await Self.enterResult(intruder)
        #expect(refused["result"] == .number(Double(ErrorCode.privilegeCheckFailed)), "\(refused.jsonText)")
        #expect(refused["errMsg"]?.stringValue?.contains("requires a PrivateMapKey") == true, "\(refused.jsonText)")
        let elsewhere = try server.join(
            "intruder2", role: "anchor", in: scope, extra: ["--private-map-key", try await Self.key("intruder2", room: "room2", privilege: 255, in: scope)])
        #expect(try await Self.enterResult(elsewhere)["result"] == .number(Double(ErrorCode.privilegeCheckFailed)))

        // The host's key (255) creates the room and publishes.
        let host = try server.join("host", role: "anchor", in: scope, extra: media + ["--private-map-key", try await Self.key("host", privilege: 255, in: scope)])
        #expect((try await Self.enterResult(host)["result"]?.intValue ?? -1) >= 0)
        try await host.waitForEvent("onPublishAnswer", timeout: .seconds(10))

        // A receive-only key (42) cannot enter as anchor: the mic approval cannot be bypassed.
        let fanKey = try await Self.key("fan", privilege: 42, in: scope)
        let bypass = try server.join("fan", role: "anchor", in: scope, extra: ["--private-map-key", fanKey])
        let bypassed = try await Self.enterResult(bypass)
        #expect(bypassed["result"] == .number(Double(ErrorCode.privilegeCheckFailed)), "\(bypassed.jsonText)")
        #expect(bypassed["errMsg"]?.stringValue?.contains("entering as an anchor") == true, "\(bypassed.jsonText)")
        bypass.stop()

        // WHIP without a key is refused; WHEP with a receive-only key plays.
        let whipOffer = try GhostSessionTests.ghostOffer(direction: .sendonly)
        #expect(try await GhostSessionTests.post(server, "/whip/room1/ghost", user: "ghost", offer: whipOffer) == 403)
        let watcherKey = try await Self.key("watcher", privilege: 42, in: scope)
        let whepOffer = try GhostSessionTests.ghostOffer(direction: .recvonly)
        #expect(try await GhostSessionTests.post(server, "/whep/room1/watcher?privateMapKey=\(watcherKey)", user: "watcher", offer: whepOffer) == 201)
        #expect(try await GhostSessionTests.post(server, "/whip/room1/watcher?privateMapKey=\(watcherKey)", user: "watcher", offer: whipOffer) == 403)

        // The receive-only fan enters as audience, is approved on mic, and then sends.
        let fan = try server.join("fan", in: scope, extra: media + ["--private-map-key", fanKey])
        #expect((try await Self.enterResult(fan)["result"]?.intValue ?? -1) >= 0)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        fan.send("request-mic")
        try await host.waitForEvent("onMicRequest")
        host.send("accept-mic fan")
        try await fan.waitForEvent("onPublishAnswer", timeout: .seconds(10))
        try await host.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "fan" }

        // A room mix's robot gets its key from the server: it enters and publishes in the host's room.
        host.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix","strRoomId":"room1"}},"#
                + #""encoderParam":{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":300},"#
                + #""mixingConfig":{"videoLayoutList":[{"fixedVideoUser":{"userId":"host","strRoomId":"room1"},"#
                + #""rect":{"left":0,"top":0,"right":320,"bottom":240},"zOrder":0}]}}"#)
        #expect(try await host.waitForEvent("onStartPublishMediaStream")["code"] == 0)
        try await fan.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == "mix" && $0["available"] == true }
        #expect(server.residentMiB < 200, "\(server.residentMiB) MiB")
    }

    @Test func aNumericRoomsKeyOpensOnlyTheNumericRoomAndItsRobotGetsANumericKey() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--require-private-map-key"])
        func join(_ user: String, _ room: [String], role: String = "audience", key: String, extra: [String] = []) throws -> ChildProcess {
            try scope.start(
                "liveroom",
                ["join", "--server", server.url, "--user-id", user, "--role", role, "--sdk-app-id", String(TestServer.sdkAppId),
                 "--secret-key", TestServer.secretKey, "--json", "--verbose", "--private-map-key", key] + room + extra,
                name: user)
        }
        // A key for numeric room 77 does not open string room "77", nor a key for "77" room 77.
        let numericKey = try await Self.key("host", roomNumber: 77, privilege: 255, in: scope)
        let wrongRoom = try join("host", ["--room", "77"], role: "anchor", key: numericKey)
        let refused = try await Self.enterResult(wrongRoom)
        #expect(refused["result"] == .number(Double(ErrorCode.privilegeCheckFailed)), "\(refused.jsonText)")
        #expect(refused["errMsg"]?.stringValue?.contains(#"is for room 77, not room "77""#) == true, "\(refused.jsonText)")
        let stringKey = try await Self.key("host", room: "77", privilege: 255, in: scope)
        let wrongKind = try join("host", ["--room-number", "77"], role: "anchor", key: stringKey)
        #expect(try await Self.enterResult(wrongKind)["result"] == .number(Double(ErrorCode.privilegeCheckFailed)))

        // With its own key the host creates numeric room 77 and publishes; a mix into the room
        // (intRoomId) gets its robot in with a key the server makes for the numeric room.
        let media = ["--publish", "color:00FF00"] + PublishTaskEndToEndTests.small
        let host = try join("host", ["--room-number", "77"], role: "anchor", key: numericKey, extra: media)
        #expect((try await Self.enterResult(host)["result"]?.intValue ?? -1) > 0)
        try await host.waitForEvent("onPublishAnswer", timeout: .seconds(10))
        let fan = try join("fan", ["--room-number", "77"], key: try await Self.key("fan", roomNumber: 77, privilege: 42, in: scope))
        #expect((try await Self.enterResult(fan)["result"]?.intValue ?? -1) > 0)
        host.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix","intRoomId":77}},"#
                + #""encoderParam":{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":300},"#
                + #""mixingConfig":{"videoLayoutList":[{"fixedVideoUser":{"userId":"host","intRoomId":77},"#
                + #""rect":{"left":0,"top":0,"right":320,"bottom":240},"zOrder":0}]}}"#)
        let started = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(started["code"] == 0, "\(started.jsonText)")
        try await fan.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == "mix" && $0["available"] == true }
    }
}
