import Foundation
import LiveRoomProtocol
import Testing

/// TRTC's integer `roomId` and string `strRoomId` are separate rooms, with real processes:
/// `liveroom join --room-number 123` and `--room 123` never meet, and the admin API's
/// `DismissRoom` on RoomId 123 ends only the numeric room.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RoomNamespaceEndToEndTests {
    /// Starts `liveroom join --json` in numeric room `number` and waits until it entered.
    static func enteredNumeric(_ user: String, _ number: UInt32, role: String = "audience", server: TestServer, in scope: ProcessScope) async throws -> ChildProcess {
        let client = try scope.start(
            "liveroom",
            ["join", "--server", server.url, "--room-number", String(number), "--user-id", user, "--role", role,
             "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--json"],
            name: user)
        let enter = try await client.waitForEvent("onEnterRoom")
        #expect((enter["result"]?.intValue ?? -1) > 0, "\(user) could not enter room \(number): \(enter.jsonText)")
        return client
    }

    @Test func numericRoom123AndStringRoom123AreApartAndDismissRoomEndsOnlyTheNumericOne() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await Self.enteredNumeric("host", 123, role: "anchor", server: server, in: scope)
        let fan = try await Self.enteredNumeric("fan", 123, server: server, in: scope)
        let other = try await server.entered("other", room: "123", role: "anchor", in: scope)
        let watcher = try await server.entered("watcher", room: "123", in: scope)
        try await fan.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "host" }
        try await watcher.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "other" }

        // Each room's message reaches its own members only.
        host.send("custom 1 to the numeric room")
        other.send("custom 1 to the string room")
        try await fan.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "to the numeric room" }
        try await watcher.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "to the string room" }
        try await Task.sleep(for: .milliseconds(300))
        #expect(fan.events(named: "onRecvCustomCmdMsg").map { $0["data"] } == ["to the numeric room"])
        #expect(watcher.events(named: "onRecvCustomCmdMsg").map { $0["data"] } == ["to the string room"])
        #expect(host.events(named: "onRemoteUserEnterRoom").allSatisfy { $0["userId"] != "other" }, "the string room's anchor is not in room 123")
        #expect(other.events(named: "onRemoteUserEnterRoom").allSatisfy { $0["userId"] != "host" }, "the numeric room's anchor is not in room \"123\"")

        // DescribeRoom tells them apart by RoomId's JSON type.
        let (numeric, _) = try await server.admin("DescribeRoom", ["RoomId": 123], in: scope)
        #expect(numeric["Response"]?["RoomId"] == 123, "\(numeric.jsonText)")
        #expect(numeric["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue }.sorted() == ["fan", "host"])
        let (string, _) = try await server.admin("DescribeRoom", ["RoomId": "123"], in: scope)
        #expect(string["Response"]?["RoomId"] == "123", "\(string.jsonText)")
        #expect(string["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue }.sorted() == ["other", "watcher"])

        // DismissRoom on RoomId 123: the numeric room's members are told and leave; the string room goes on.
        let (dismissed, status) = try await server.admin("DismissRoom", ["RoomId": 123], in: scope)
        #expect(status == 0 && dismissed["Response"]?["Error"] == nil, "\(dismissed.jsonText)")
        try await host.waitForEvent("onExitRoom") { $0["reason"] == 2 }
        try await fan.waitForEvent("onExitRoom") { $0["reason"] == 2 }
        #expect(try await host.waitForExit() == 0)
        #expect(try await fan.waitForExit() == 0)
        other.send("custom 2 still here")
        try await watcher.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "still here" }
        #expect(other.events(named: "onExitRoom").isEmpty && watcher.events(named: "onExitRoom").isEmpty)
        let (gone, _) = try await server.admin("DescribeRoom", ["RoomId": 123], in: scope)
        #expect(gone["Response"]?["Error"]?["Code"] == "FailedOperation.RoomNotExist", "\(gone.jsonText)")
        #expect(gone["Response"]?["Error"]?["Message"] == "room 123 does not exist", "\(gone.jsonText)")
        let (stillThere, _) = try await server.admin("DescribeRoom", ["RoomId": "123"], in: scope)
        #expect(stillThere["Response"]?["Error"] == nil, "\(stillThere.jsonText)")

        // The history shows the numeric room by its number, dismissed, and the string room still open.
        var rooms: [JSONValue] = []
        for _ in 0..<50 {
            let (history, _) = try await server.admin("DescribeRoomInfo", [:], in: scope)
            rooms = history["Response"]?["RoomList"]?.arrayValue ?? []
            if rooms.contains(where: { $0["RoomId"] == 123 && $0["IsFinished"] == true }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let numericEntry = rooms.first { $0["RoomId"] == 123 }
        #expect(numericEntry?["RoomString"] == "123" && numericEntry?["DestroyReason"] == "dismissed", "\(rooms)")
        let stringEntry = rooms.first { $0["RoomId"] == "123" }
        #expect(stringEntry?["RoomString"] == "123" && stringEntry?["IsFinished"] == false, "\(rooms)")
    }

    @Test func joinTakesExactlyOneOfRoomAndRoomNumber() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        for rooms in [["--room", "123", "--room-number", "123"], [], ["--room-number", "0"], ["--room-number", "4294967296"]] {
            let client = try scope.start(
                "liveroom",
                ["join", "--server", server.url, "--user-id", "u", "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--json"]
                    + rooms,
                name: "join \(rooms)")
            let status = try await client.waitForExit()
            #expect(status != nil && status != 0, "\(rooms) exits with an error")
            #expect(client.events(named: "onEnterRoom").isEmpty, "\(rooms) never enters")
        }
    }
}
