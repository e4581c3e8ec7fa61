import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import TestTools
import Testing

/// Where `liveroom-server` and `liveroom` were built: $LIVEROOM_BIN_DIR, the test bundle's
/// own directory, or `.build/debug` of this package.
let binDirectory: URL = {
    if let dir = ProcessInfo.processInfo.environment["LIVEROOM_BIN_DIR"] { return URL(fileURLWithPath: dir) }
    let own = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if FileManager.default.isExecutableFile(atPath: own.appendingPathComponent("liveroom-server").path) { return own }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug")
}()

/// How long a test waits for ffmpeg or ffprobe to finish.
let toolTimeout: Duration = .seconds(20)

/// A child process with its output collected line by line. Every process a test starts is
/// stopped when the test ends (``stop()``, or at the latest by ``ProcessScope``).
final class ChildProcess: Sendable {
    let name: String
    private let process: Process
    private let input: Pipe
    private let lines = Locked<[String]>([])
    private let errorText = Locked("")
    /// Set once standard output reached its end: every line is in ``output``.
    private let outputEnded = Locked(false)

    /// `environment`: variables set for the process on top of the test's own.
    init(_ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String] = [:]) throws {
        self.name = name ?? executable
        process = Process()
        process.executableURL = executable.hasPrefix("/") ? URL(fileURLWithPath: executable) : binDirectory.appendingPathComponent(executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        // A thread per pipe reads until the end: Foundation's readabilityHandler loses output
        // past about 32 KB on Linux.
        Self.readLines(output.fileHandleForReading) { [lines, outputEnded] complete, ended in
            if !complete.isEmpty { lines.withLock { $0 += complete } }
            if ended { outputEnded.withLock { $0 = true } }
        }
        Self.readLines(errors.fileHandleForReading, splitting: false) { [errorText] text, _ in
            errorText.withLock { $0 += text.joined() }
        }
        try process.run()
    }

    /// Reads `handle` on a thread of its own until its end, handing on complete lines (or,
    /// without `splitting`, whatever arrived) and, at the end, `true`.
    private static func readLines(_ handle: FileHandle, splitting: Bool = true, _ deliver: @escaping @Sendable ([String], Bool) -> Void) {
        let fd = handle.fileDescriptor
        let thread = Thread {
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                if !splitting {
                    deliver([String(decoding: chunk[..<count], as: UTF8.self)], false)
                    continue
                }
                buffer += chunk[..<count]
                var complete: [String] = []
                var start = 0
                while let newline = buffer[start...].firstIndex(of: 0x0A) {
                    complete.append(String(decoding: buffer[start..<newline], as: UTF8.self))
                    start = newline + 1
                }
                buffer.removeFirst(start)
                if !complete.isEmpty { deliver(complete, false) }
            }
            deliver(buffer.isEmpty ? [] : [String(decoding: buffer, as: UTF8.self)], true)
            withExtendedLifetime(handle) {}
        }
        thread.start()
    }

    var output: [String] { lines.withLock { $0 } }
    var standardError: String { errorText.withLock { $0 } }
    /// How many file descriptors the process has open (`/proc/<pid>/fd`), nil once it has exited.
    var openDescriptors: Int? {
        guard process.isRunning else { return nil }
        return (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd"))?.count
    }

    /// The JSON events printed so far (lines that parse as objects with "event").
    var events: [JSONValue] {
        output.compactMap { try? JSONValue.parse($0) }.filter { $0["event"] != nil }
    }

    func events(named name: String) -> [JSONValue] {
        events.filter { $0["event"]?.stringValue == name }
    }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits until an output line satisfies `match`, polling, for at most `timeout`.
    @discardableResult
    func waitForLine(timeout: Duration = .seconds(10), _ match: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = output.first(where: match) { return line }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut(description: "\(name): no matching line in \(timeout); output:\n\(output.joined(separator: "\n"))\nstderr:\n\(standardError)")
    }

    /// Waits for the `count`-th event named `name` that satisfies `match`.
    @discardableResult
    func waitForEvent(
        _ name: String, count: Int = 1, timeout: Duration = .seconds(10), where match: (JSONValue) -> Bool = { _ in true }
    ) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let found = events(named: name).filter(match)
            if found.count >= count { return found[count - 1] }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut(description: "\(self.name): no \(name) in \(timeout); output:\n\(output.joined(separator: "\n"))\nstderr:\n\(standardError)")
    }

    /// Waits for the process to end by itself and its output to be read; nil if it did not
    /// end within `timeout`.
    func waitForExit(timeout: Duration = .seconds(10)) async throws -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning || !outputEnded.withLock({ $0 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        return process.isRunning ? nil : process.terminationStatus
    }

    var isRunning: Bool { process.isRunning }

    /// How the process ended: its status, and whether a signal ended it; nil while it runs.
    var ending: (status: Int32, bySignal: Bool)? {
        process.isRunning ? nil : (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }

    /// Sends `signal` to the process.
    func send(signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Sends SIGTERM and returns at once.
    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// SIGKILL, as a crash or `kill -9` would, then waits for the exit.
    func crash() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The resident set size in bytes (`VmRSS` of /proc/<pid>/status), nil once it has exited.
    var residentBytes: Int? {
        guard process.isRunning, let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// SIGTERM, then SIGKILL after two seconds.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Starts processes for one test and stops all of them at the end.
final class ProcessScope: Sendable {
    private let children = Locked<[ChildProcess]>([])
    let dataDirectory: URL

    init() throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
    }

    func start(_ executable: String, _ arguments: [String], name: String? = nil, environment: [String: String] = [:]) throws -> ChildProcess {
        let child = try ChildProcess(executable, arguments, name: name, environment: environment)
        children.withLock { $0.append(child) }
        return child
    }

    /// Runs one of the GStreamer scripts in `Tests/Interop` with Debian's python3 (which has
    /// python3-gi); the test carries `.requires(.gstreamerWebRTC)`.
    func startPython(_ script: String, _ arguments: [String], name: String) throws -> ChildProcess {
        try start(RequiredTool.gstreamerWebRTC.path, [RequiredTool.interopDirectory.appendingPathComponent(script).path] + arguments, name: name)
    }

    func stopAll() {
        for child in children.withLock({ $0 }).reversed() { child.stop() }
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    deinit { stopAll() }
}

/// A running `liveroom-server` on a free loopback port, with a known app and secret.
struct TestServer {
    static let sdkAppId: UInt64 = 1_400_000_123
    static let secretKey = "e2e-secret-key-0123456789abcdef"
    let process: ChildProcess
    let url: String
    let mediaPort: UInt16
    /// The ICE-TCP port.
    let iceTCPPort: UInt16

    /// - Parameter allowLoopbackEgress: lets publish tasks reach the tests' local nginx on
    ///   127.0.0.1 (`--egress-allow 127.0.0.1`); the egress tests turn it off.
    static func start(
        in scope: ProcessScope, extra: [String] = [], allowLoopbackEgress: Bool = true, environment: [String: String] = [:]
    ) async throws -> TestServer {
        let process = try scope.start(
            "liveroom-server",
            ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", scope.dataDirectory.path,
             "--sdk-app-id", String(sdkAppId), "--secret-key", secretKey, "--log-level", "warning"]
                + (allowLoopbackEgress ? ["--egress-allow", "127.0.0.1"] : []) + extra,
            name: "server", environment: environment)
        let line = try await process.waitForLine { $0.contains("LiveRoom server listening on ") }
        let url = String(line[line.range(of: "listening on ")!.upperBound...]).trimmingCharacters(in: .whitespaces)
        let mediaLine = try await process.waitForLine { $0.hasPrefix("Media UDP port: ") }
        let tcpLine = try await process.waitForLine { $0.hasPrefix("ICE-TCP port: ") }
        return TestServer(
            process: process, url: url, mediaPort: UInt16(mediaLine.dropFirst("Media UDP port: ".count))!,
            iceTCPPort: UInt16(tcpLine.dropFirst("ICE-TCP port: ".count)) ?? 0)
    }

    /// Starts `liveroom join --json` for a user.
    func join(_ user: String, room: String = "room1", role: String = "audience", in scope: ProcessScope, extra: [String] = []) throws -> ChildProcess {
        try scope.start(
            "liveroom",
            ["join", "--server", url, "--room", room, "--user-id", user, "--role", role,
             "--sdk-app-id", String(Self.sdkAppId), "--secret-key", Self.secretKey, "--json", "--verbose"] + extra,
            name: user)
    }

    /// Joins and waits until the user is in the room.
    func entered(_ user: String, room: String = "room1", role: String = "audience", in scope: ProcessScope) async throws -> ChildProcess {
        let client = try join(user, room: room, role: role, in: scope)
        let enter = try await client.waitForEvent("onEnterRoom")
        #expect((enter["result"]?.intValue ?? -1) >= 0, "\(user) could not enter: \(enter.jsonText)")
        return client
    }

    /// Runs `liveroom admin` and returns its output and exit status.
    func admin(_ action: String, _ body: JSONValue, in scope: ProcessScope) async throws -> (JSONValue, Int32) {
        let process = try scope.start(
            "liveroom",
            ["admin", "--server", url, "--sdk-app-id", String(Self.sdkAppId), "--secret-key", Self.secretKey, action, body.jsonText],
            name: "admin \(action)")
        guard let status = try await process.waitForExit() else { throw TimedOut(description: "admin \(action) did not finish") }
        let text = process.output.joined(separator: "\n")
        guard let answer = try? JSONValue.parse(text) else {
            throw TimedOut(description: "admin \(action) printed no JSON (status \(status)): \(text)\nstderr: \(process.standardError)")
        }
        return (answer, status)
    }
}

extension TestServer {
    /// Checks that the server still serves a normal room: an anchor and an audience member
    /// enter a fresh room, the anchor's custom message reaches the audience, and both leave.
    func checkServesANormalRoom(in scope: ProcessScope, room: String = "normal-\(UUID().uuidString.prefix(8))") async throws {
        let host = try await entered("normal-host", room: room, role: "anchor", in: scope)
        let viewer = try await entered("normal-viewer", room: room, in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "normal-host" }
        host.send("custom 1 still serving")
        try await viewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "still serving" }
        host.stop()
        viewer.stop()
    }

    /// The server's resident set size in MiB. A server that is not running any more is a
    /// failure of the test, with its exit status and its log, not a size of 0.
    var residentMiB: Int {
        guard let bytes = process.residentBytes else {
            Issue.record("the server is not running: \(exitDescription)")
            return Int.max
        }
        return bytes >> 20
    }

    /// How the server ended, with the end of its log.
    var exitDescription: String {
        let status = process.ending.map { "\($0.bySignal ? "ended by signal" : "exit status") \($0.status)" } ?? "still running"
        return "\(status); log:\n\(process.standardError.suffix(4000))"
    }

    /// The server's Prometheus metrics, by series (the name with its labels).
    func metrics() async throws -> [String: Double] {
        let (data, response) = try await URLSession.shared.data(from: try #require(URL(string: url + "/metrics")))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        var values: [String: Double] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// Checks that the server process is still running and answers `GET /metrics`.
    func checkAlive(_ when: String) async {
        guard process.isRunning else {
            Issue.record("\(when): the server is not running: \(exitDescription)")
            return
        }
        do {
            #expect(try await metrics()["liveroom_rooms"] != nil, "\(when): /metrics answers")
        } catch {
            Issue.record("\(when): /metrics did not answer: \(error)")
        }
    }

    /// Stops the server with SIGTERM and checks that it shut down cleanly (status 0) in time.
    func checkStopsCleanly(timeout: Duration = .seconds(15)) async throws {
        guard process.isRunning else {
            Issue.record("the server is not running: \(exitDescription)")
            return
        }
        process.terminate()
        let status = try await process.waitForExit(timeout: timeout)
        #expect(status == 0 && process.ending?.bySignal == false, "SIGTERM ends the server cleanly: \(exitDescription)")
        #expect(process.standardError.contains("liveroom-server: stopped: graceful shutdown"), "the log says why it stopped")
    }
}
