import Foundation
import LiveRoomProtocol
import TestTools
import Testing

/// What an attacker can do with packets and connections alone, before any credentials: the
/// server drops and counts what names nothing it has, closes what never finishes its request,
/// keeps serving a room with media throughout, and ends only when told to, cleanly.
/// The scripts are `Tests/Hostile/stun_probe.py` and `Tests/Hostile/half_open.py`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HostileTransportTests {
    static let hostile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Hostile")

    static func script(_ name: String) -> String { hostile.appendingPathComponent(name).path }

    static func dropped(_ metrics: [String: Double], _ reason: String) -> Double {
        metrics["liveroom_media_dropped_total{reason=\"\(reason)\"}"] ?? 0
    }

    /// A STUN check whose ufrag names a media loop the server does not have (`zz`, `Cq`; `B`
    /// with one loop), over UDP from several source ports and framed on ICE-TCP, stopped the
    /// server at an index out of range. Now each is dropped and counted, and the room's media
    /// goes on: a viewer who comes after the probes gets the anchor's video.
    @Test(arguments: [1, 2])
    func checksNamingNoLoopAreDroppedAndCountedWhileARoomKeepsItsMedia(loops: Int) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--media-loops", String(loops)])
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15))
        let before = try await server.metrics()

        // No loop has these: 'z' and 'C' (the 52nd and 3rd loop), 'B' with one loop; an empty
        // ufrag and a check without USERNAME name none.
        let noLoop = ["zz:x", "Cq:x", ":", ""] + (loops == 1 ? ["Bq:x"] : [])
        // These name a loop the server has but no connection on it; a 600-byte USERNAME is not
        // STUN (RFC 8489 allows 513 bytes) or names loop 0's unknown ufrag.
        let otherProbes = (loops == 2 ? ["Bq:x"] : []) + [String(repeating: "A", count: 600) + ":x"]
        let sources = 8
        let probe = try scope.start(
            "/usr/bin/python3",
            [Self.script("stun_probe.py"), "127.0.0.1", String(server.mediaPort), String(server.iceTCPPort), String(sources)] + noLoop + otherProbes,
            name: "stun probe")
        _ = try await probe.waitForLine(timeout: .seconds(20)) { $0.hasPrefix("sent ") }
        #expect(try await probe.waitForExit(timeout: .seconds(10)) == 0, "the probe ran: \(probe.standardError)")
        try await Task.sleep(for: .milliseconds(500))

        await server.checkAlive("after the probes")
        let after = try await server.metrics()
        let counted = Self.dropped(after, "unknown_loop") - Self.dropped(before, "unknown_loop")
        #expect(counted == Double(noLoop.count * (sources + 1)), "each check naming no loop, over UDP and ICE-TCP, counted once: \(after.filter { $0.key.contains("dropped") })")
        let others = ["unknown_ufrag", "malformed_stun"].map { Self.dropped(after, $0) - Self.dropped(before, $0) }.reduce(0, +)
        #expect(others == Double(otherProbes.count * (sources + 1)), "the other probes counted as unknown or malformed: \(after.filter { $0.key.contains("dropped") })")

        // The room's media goes on: a viewer who comes now gets the anchor's video.
        let late = try await server.enteredWithMedia("late-fan", media: [], in: scope)
        try await late.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        try await server.checkServesANormalRoom(in: scope)
        late.stop()
        fan.stop()
        host.stop()
        try await server.checkStopsCleanly()
    }

    /// Thousands of connections from five addresses that never finish a request head: each
    /// address holds at most its cap (the rest refused at once, with 429 and the code), the
    /// others are closed at the head deadline, the descriptors come back, and a normal room is
    /// served while they hang on.
    @Test(arguments: ["silent", "http"])
    func halfOpenConnectionsAreCappedPerAddressAndClosedInTime(mode: String) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // The default deadline, 10 s: longer than opening them all takes on 2 shared cores.
        let (cap, perSource, timeout) = (400, 420, 10.0)
        let sources = (2...6).map { "127.0.0.\($0)" }
        let server = try await TestServer.start(in: scope, extra: ["--max-connections-per-address", String(cap)])
        let baseline = try #require(server.process.openDescriptors)
        let flood = try scope.start(
            "/usr/bin/python3",
            [Self.script("half_open.py"), "127.0.0.1", String(URL(string: server.url)!.port!), String(perSource), "40", mode, String(timeout / 2)] + sources,
            name: "half-open \(mode)")
        let opened = try await flood.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("opened ") }
        // The server accepts a little behind the client's connects: its peak over the next seconds.
        var held = 0
        for _ in 0..<15 {
            held = max(held, server.process.openDescriptors ?? 0)
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(held >= baseline + sources.count * cap - 50, "the server holds the admitted connections: \(baseline) descriptors before, \(held) now (\(opened))")
        #expect(held <= baseline + sources.count * cap + 50, "and no more than the caps allow: \(baseline) before, \(held) now")
        // Served throughout, from an address of its own.
        try await server.checkServesANormalRoom(in: scope)
        _ = try await flood.waitForLine(timeout: .seconds(50)) { $0 == "done" }
        let last = try #require(flood.output.last { $0.hasPrefix("state ") }).split(separator: " ")
        let (open, refused, answered, timedOut) = (Int(last[1])!, Int(last[2])!, Int(last[3])!, Int(last[4])!)
        #expect(open == 0, "every connection was closed: \(last)")
        #expect(refused == sources.count * (perSource - cap), "over each address's cap, refused at once: \(last)")
        #expect(answered == refused, "each refusal answered 429 with its code: \(last)")
        #expect(timedOut == sources.count * cap, "the rest closed at the deadline: \(last)")
        if let low = Double(last[5]), let high = Double(last[6]) {
            #expect(low >= timeout - 0.5 && high <= timeout + 3, "closed \(timeout) s after opening: between \(low) and \(high) s")
        } else {
            Issue.record("no timed-out connection: \(last)")
        }
        try await Task.sleep(for: .seconds(1))
        let after = try #require(server.process.openDescriptors)
        #expect(after <= baseline + 10, "the descriptors came back: \(baseline) before, \(after) after")
        await server.checkAlive("after the half-open connections")
        try await server.checkServesANormalRoom(in: scope)
        try await server.checkStopsCleanly()
    }

    /// The hostile run in which a server once ended without a line: a client that sends and
    /// never reads until it is cut off, then 300 idle WebSockets until the login deadline. The
    /// server keeps running and answering, and stops cleanly when told to.
    @Test func aFloodThenIdleConnectionsLeaveTheServerRunning() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--login-timeout", "4", "--max-connections-per-address", "400"])
        let url = URL(string: server.url)!
        let reader = try scope.start("/usr/bin/python3", [Self.script("slow_reader.py"), url.host!, String(url.port!), "40"], name: "slow reader")
        _ = try await reader.waitForLine(timeout: .seconds(45)) { $0.hasPrefix("closed") || $0.hasPrefix("gave-up") }
        #expect(reader.output.contains { $0.hasPrefix("closed") }, "the never-reading client was cut off: \(reader.output.suffix(3))")
        await server.checkAlive("after the never-reading client")
        let idle = try scope.start(
            "/usr/bin/python3", [Self.script("idle_flood.py"), url.host!, String(url.port!), "300", "20"], name: "idle flood")
        _ = try await idle.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("opened ") }
        _ = try await idle.waitForLine(timeout: .seconds(20)) { $0 == "closed 300" }
        await server.checkAlive("after the idle connections")
        try await server.checkServesANormalRoom(in: scope)
        try await server.checkStopsCleanly()
    }

    /// Signals that carry no intent to stop the server do not; a fault does, and leaves its
    /// cause in the log: a line naming the signal. (Swift's backtracer, which `scripts/serve.sh`
    /// turns on, would add the backtrace after it, and take half a minute over a debug build:
    /// it is off here, so the process dies by the signal at once.)
    @Test func brokenPipesAndHangUpsLeaveItRunningAndAFaultLeavesItsCause() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, environment: ["SWIFT_BACKTRACE": "enable=no"])
        for signal in [SIGPIPE, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ] { server.process.send(signal: signal) }
        try await Task.sleep(for: .milliseconds(500))
        await server.checkAlive("after SIGPIPE, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM and SIGXFSZ")
        try await server.checkServesANormalRoom(in: scope)
        server.process.send(signal: SIGSEGV)
        _ = try await server.process.waitForExit(timeout: .seconds(20))
        #expect(server.process.ending?.bySignal == true && server.process.ending?.status == SIGSEGV, "\(server.exitDescription)")
        #expect(server.process.standardError.contains("liveroom-server: stopped by SIGSEGV"), "\(server.exitDescription)")
    }
}
