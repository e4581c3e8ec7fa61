import Foundation
import LiveRoomProtocol
import Testing

/// What `docs/security.md` promises about `kill -9`: the development credentials and the room
/// history written before the kill survive, and rooms open at the kill are closed at restart.
@Suite(.serialized, .timeLimit(.minutes(1))) struct DurabilityTests {
    @Test func theDevelopmentKeyIsPrivateAndItAndRoomHistorySurviveKillNine() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }

        // The development credentials: made once, kept in the database, the same after a crash.
        let devDirectory = scope.dataDirectory.appendingPathComponent("dev").path
        func startDevelopmentServer() async throws -> (ChildProcess, String) {
            let server = try scope.start(
                "liveroom-server", ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", devDirectory], name: "dev server")
            let line = try await server.waitForLine { $0.hasPrefix("Secret key: ") }
            return (server, String(line.dropFirst("Secret key: ".count).prefix { $0 != " " }))
        }
        let (first, key) = try await startDevelopmentServer()
        // The key is in a file only the server's user can read, in a directory only it can list.
        let attributes = FileManager.default.attributesOfItem
        #expect(try attributes(devDirectory)[.posixPermissions] as? Int == 0o700)
        #expect(try attributes(devDirectory + "/liveroom.sqlite")[.posixPermissions] as? Int == 0o600)
        first.crash()
        let (second, keyAgain) = try await startDevelopmentServer()
        #expect(key == keyAgain && key.count >= 32, "\(key) then \(keyAgain)")
        second.stop()

        // Room history: what was recorded before the kill is there after it; the room that was
        // open is closed as "server restarted".
        let server = try await TestServer.start(in: scope)
        let alice = try await server.entered("alice", room: "shop1", role: "anchor", in: scope)
        let bob = try await server.entered("bob", room: "shop2", in: scope)
        bob.send("leave")
        _ = try await bob.waitForExit()
        try await Task.sleep(for: .milliseconds(500))  // the recorder writes off the hub, within milliseconds
        server.process.crash()
        alice.stop()

        let restarted = try await TestServer.start(in: scope)
        let (answer, status) = try await restarted.admin("DescribeRoomInfo", ["SdkAppId": .number(Double(TestServer.sdkAppId))], in: scope)
        #expect(status == 0, "\(answer.jsonText)")
        let rooms = answer["Response"]?["RoomList"]?.arrayValue ?? []
        let shop1 = rooms.first { $0["RoomString"] == "shop1" }
        let shop2 = rooms.first { $0["RoomString"] == "shop2" }
        #expect(shop1?["IsFinished"] == true && shop1?["DestroyReason"] == "server restarted", "\(answer.jsonText)")
        #expect(shop1?["UserIds"]?.arrayValue == ["alice"], "\(answer.jsonText)")
        #expect(shop2?["IsFinished"] == true && shop2?["UserIds"]?.arrayValue == ["bob"], "\(answer.jsonText)")
    }
}
