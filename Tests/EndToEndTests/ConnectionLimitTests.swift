import Foundation
import LiveRoomProtocol
import Testing

/// Connection and room limits against a real server, with raw WebSocket clients from
/// `Tests/Hostile/idle_flood.py` and `Tests/Hostile/slow_reader.py`.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ConnectionLimitTests {
    static let flood = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Hostile/idle_flood.py").path

    static func startFlood(_ server: TestServer, count: Int, seconds: Int, source: String = "127.0.0.1", in scope: ProcessScope) throws -> ChildProcess {
        let url = URL(string: server.url)!
        return try scope.start("/usr/bin/python3", [flood, url.host!, String(url.port!), String(count), String(seconds), source], name: "flood from \(source)")
    }

    static func opened(_ flood: ChildProcess) async throws -> Int {
        let line = try await flood.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("opened ") }
        return Int(line.split(separator: " ")[1])!
    }

    static func refusals(_ flood: ChildProcess) -> [Int] {
        flood.output.filter { $0.hasPrefix("refused ") }.compactMap { Int($0.dropFirst("refused ".count)) }
    }

    @Test func aThousandIdleConnectionsAreClosedAtTheLoginDeadlineWithRSSUnder150MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--login-timeout", "4", "--max-connections-per-address", "2000"])
        let before = server.residentMiB
        let flood = try Self.startFlood(server, count: 1000, seconds: 30, in: scope)
        #expect(try await Self.opened(flood) == 1000)
        let peak = server.residentMiB
        #expect(peak < 150, "1000 idle connections: \(before) MiB before, \(peak) MiB with them")
        // The server keeps serving while they hang on.
        try await server.checkServesANormalRoom(in: scope)
        _ = try await flood.waitForLine(timeout: .seconds(20)) { $0 == "closed 1000" }
        #expect(Self.refusals(flood).allSatisfy { $0 == ErrorCode.loginTimeout }, "each was told -7013")
        #expect(Self.refusals(flood).count >= 900, "\(Self.refusals(flood).count) were told why")
        #expect(server.residentMiB < 150)
    }

    @Test func aClientThatSendsAndNeverReadsIsCutOffWithRSSUnder150MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // A login deadline longer than the test: only the outbox limit can end this connection.
        let server = try await TestServer.start(in: scope, extra: ["--login-timeout", "120"])
        let url = URL(string: server.url)!
        let reader = URL(fileURLWithPath: Self.flood).deletingLastPathComponent().appendingPathComponent("slow_reader.py").path
        let started = ContinuousClock.now
        let client = try scope.start("/usr/bin/python3", [reader, url.host!, String(url.port!), "40"], name: "slow reader")
        var peak = server.residentMiB
        while !client.output.contains(where: { $0.hasPrefix("closed") || $0.hasPrefix("gave-up") }), ContinuousClock.now - started < .seconds(45) {
            peak = max(peak, server.residentMiB)
            try await Task.sleep(for: .milliseconds(200))
        }
        let end = try #require(client.output.last { $0.hasPrefix("closed") || $0.hasPrefix("gave-up") })
        #expect(end.hasPrefix("closed"), "the server cut the client off: \(end)")
        #expect(ContinuousClock.now - started < .seconds(20), "within seconds of the outbox filling")
        #expect(peak < 150, "\(peak) MiB at most while it sent \(end)")
        try await server.checkServesANormalRoom(in: scope)
        await server.checkAlive("at the end")
        try await server.checkStopsCleanly()
    }

    @Test func connectionsOverTheCapsAreRefusedWithTheirCodesAndCountedOutWhenTheyClose() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(
            in: scope, extra: ["--max-connections", "5", "--max-connections-per-address", "3", "--login-timeout", "3"])
        // Four from one address: the fourth is refused for the address before its request is
        // read (429, with the code in its body).
        let first = try Self.startFlood(server, count: 4, seconds: 10, in: scope)
        #expect(try await Self.opened(first) == 3)
        _ = try await first.waitForLine { $0.hasPrefix("refused ") }
        #expect(Self.refusals(first) == [ErrorCode.tooManyConnectionsFromAddress])
        // Three from another address: two fit under the total of five, the third is refused (503).
        let second = try Self.startFlood(server, count: 3, seconds: 10, source: "127.0.0.2", in: scope)
        #expect(try await Self.opened(second) == 2)
        _ = try await second.waitForLine { $0.hasPrefix("refused ") }
        #expect(Self.refusals(second) == [ErrorCode.serverFull])
        // At the login deadline they are closed and counted out: a normal room fits again.
        _ = try await first.waitForLine(timeout: .seconds(10)) { $0 == "closed 3" }
        _ = try await second.waitForLine(timeout: .seconds(10)) { $0 == "closed 2" }
        try await server.checkServesANormalRoom(in: scope)
        await server.checkAlive("at the end")
        try await server.checkStopsCleanly()
    }

    @Test func aConnectionThatDoesNotAnswerPingsIsClosed() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // The login deadline is far; only the keepalive can close the silent connection.
        let server = try await TestServer.start(in: scope, extra: ["--ping-interval", "1", "--login-timeout", "60"])
        let flood = try Self.startFlood(server, count: 1, seconds: 15, in: scope)
        #expect(try await Self.opened(flood) == 1)
        let started = ContinuousClock.now
        _ = try await flood.waitForLine(timeout: .seconds(10)) { $0 == "closed 1" }
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func oneUserSigEntersAtMostTheAllowedRooms() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--max-rooms-per-user", "3", "--max-rooms", "4"])
        for room in ["a", "b", "c"] { _ = try await server.entered("greedy", room: room, in: scope) }
        let fourth = try server.join("greedy", room: "d", in: scope)
        let refused = try await fourth.waitForEvent("onEnterRoom")
        #expect(refused["result"] == .number(Double(ErrorCode.tooManyRoomsForUser)), "\(refused.jsonText)")
        // Rooms a, b, c exist; one more may be created, then none.
        _ = try await server.entered("other", room: "d", in: scope)
        let fifth = try server.join("other2", room: "e", in: scope)
        let full = try await fifth.waitForEvent("onEnterRoom")
        #expect(full["result"] == .number(Double(ErrorCode.tooManyRooms)), "\(full.jsonText)")
        _ = try await server.entered("other3", room: "a", in: scope)
        #expect(server.residentMiB < 150)
    }
}
