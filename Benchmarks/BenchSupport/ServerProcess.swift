import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `liveroom-server` under test, a child process on loopback with its own data directory.
/// Its CPU time is read from `/proc/<pid>/stat`; it is stopped with SIGTERM, then SIGKILL.
public final class ServerProcess: Sendable {
    /// `http://127.0.0.1:PORT`, as the server printed it.
    public let httpURL: String
    public let pid: pid_t
    private let process: Process
    private let dataDirectory: URL

    /// The signaling WebSocket URL.
    public var signalingURL: String { "ws://" + httpURL.dropFirst("http://".count) + "/ws" }

    /// Starts the server with `extraArguments` and waits (at most `timeout`) for its "listening on http://…" line.
    public static func start(
        binary: String, sdkAppId: UInt64, secretKey: String, extraArguments: [String] = [], timeout: Duration = .seconds(30)
    ) async throws -> ServerProcess {
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", dataDirectory.path,
            "--sdk-app-id", String(sdkAppId), "--secret-key", secretKey, "--log-level", "warning",
        ] + extraArguments
        let output = Pipe()
        process.standardOutput = output
        // Standard error stays ours: the server's warnings show up next to the bench's progress.
        let lines = Mutex<[String]>([])
        let pending = Mutex<[UInt8]>([])
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            if chunk.isEmpty { handle.readabilityHandler = nil }
            let complete: [String] = pending.withLock { buffer in
                buffer += chunk
                var out: [String] = []
                while let newline = buffer.firstIndex(of: 0x0A) {
                    out.append(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
                return out
            }
            if !complete.isEmpty { lines.withLock { $0 += complete } }
        }
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = lines.withLock({ $0.first { $0.contains("listening on http://") } }),
                let range = line.range(of: "http://")
            {
                let url = String(line[range.lowerBound...]).trimmingCharacters(in: .whitespaces)
                return ServerProcess(httpURL: url, pid: process.processIdentifier, process: process, dataDirectory: dataDirectory)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: dataDirectory)
        throw BenchError("\(binary) did not print \"listening on http://\" within \(timeout); output: \(lines.withLock { $0 })")
    }

    private init(httpURL: String, pid: pid_t, process: Process, dataDirectory: URL) {
        self.httpURL = httpURL
        self.pid = pid
        self.process = process
        self.dataDirectory = dataDirectory
    }

    public var isRunning: Bool { process.isRunning }

    /// The resident set size in bytes (`VmRSS` of `/proc/<pid>/status`); nil once it has exited.
    public var residentBytes: Int? {
        guard process.isRunning, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// User plus system CPU time so far, in clock ticks (fields 14 and 15 of `/proc/<pid>/stat`).
    public func cpuTicks() throws -> UInt64 {
        let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
        guard let close = text.lastIndex(of: ")") else { throw BenchError("cannot parse /proc/\(pid)/stat") }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state), so utime (14) is fields[11] and stime (15) fields[12].
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else {
            throw BenchError("cannot parse utime/stime in /proc/\(pid)/stat")
        }
        return user + system
    }

    /// Per-thread scheduler figures from `/proc/<pid>/task/*/schedstat`: nanoseconds on a CPU
    /// and nanoseconds waiting on a run queue, by thread id. The busiest thread shows how near
    /// the single media event loop is to a full core; the waiting shows CPU taken by others.
    public func threadSchedStats() -> [Int: ThreadSchedStat] {
        var stats: [Int: ThreadSchedStat] = [:]
        guard let tids = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return stats }
        for tid in tids {
            guard let id = Int(tid), let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8) else { continue }
            let fields = text.split(separator: " ")
            guard fields.count >= 2, let running = UInt64(fields[0]), let waiting = UInt64(fields[1]) else { continue }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            stats[id] = ThreadSchedStat(runningNanoseconds: running, waitingNanoseconds: waiting, name: name)
        }
        return stats
    }

    /// Stops the server when this process gets SIGINT or SIGTERM, then exits; keep the result alive.
    public func stopOnSignals() -> [any DispatchSourceSignal] {
        onSignals { [self] in terminateNow() }
    }

    /// Stops the server at once, without waiting on anything but half a second (SIGTERM, then
    /// SIGKILL), and removes its data directory: for a signal handler.
    public func terminateNow() {
        kill(pid, SIGTERM)
        usleep(500_000)
        kill(pid, SIGKILL)
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`; removes the data directory.
    public func stop(grace: Duration = .seconds(5)) async {
        if process.isRunning {
            kill(pid, SIGTERM)
            let deadline = ContinuousClock.now + grace
            while process.isRunning, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
            if process.isRunning {
                kill(pid, SIGKILL)
                process.waitUntilExit()
            }
        }
        try? FileManager.default.removeItem(at: dataDirectory)
    }
}

/// Runs `cleanup` when this process gets SIGINT or SIGTERM, then exits (128 + the signal);
/// keep the result alive. One place for a bench's cleanup, so that everything it started stops
/// before it exits.
public func onSignals(_ cleanup: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
    [SIGINT, SIGTERM].map { signalNumber in
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
        source.setEventHandler {
            cleanup()
            exit(128 + signalNumber)
        }
        source.resume()
        return source
    }
}

/// Datagrams the kernel dropped because a UDP socket's receive buffer was full, summed over
/// the UDP sockets of process `pid` (the `drops` column of `/proc/net/udp`, by socket inode).
public func udpReceiveDrops(pid: pid_t) -> Int {
    guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return 0 }
    var inodes = Set<Substring>()
    for fd in fds {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
            target.hasPrefix("socket:["), target.hasSuffix("]")
        else { continue }
        inodes.insert(Substring(target.dropFirst(8).dropLast()))
    }
    // Read to the end: String(contentsOfFile:) stops after the first chunk of a /proc file.
    guard let data = FileHandle(forReadingAtPath: "/proc/net/udp")?.readDataToEndOfFile() else { return 0 }
    let table = String(decoding: data, as: UTF8.self)
    var drops = 0
    for line in table.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
        guard fields.count >= 13, inodes.contains(fields[9]), let count = Int(fields[12]) else { continue }
        drops += count
    }
    return drops
}

public struct ThreadSchedStat: Sendable {
    public init(runningNanoseconds: UInt64, waitingNanoseconds: UInt64, name: String = "") {
        self.runningNanoseconds = runningNanoseconds
        self.waitingNanoseconds = waitingNanoseconds
        self.name = name
    }

    public var runningNanoseconds: UInt64
    public var waitingNanoseconds: UInt64
    /// The thread's name (`/proc/<pid>/task/<tid>/comm`, at most 15 bytes).
    public var name: String

    /// The CPU each kind of thread used between `before` and `after` (the same process), in %
    /// of one core over `seconds`, busiest first; with `waiting`, the time they were ready to
    /// run but waited for a core instead. Threads are grouped by name without the numbers
    /// SwiftNIO adds (`NIO-SGLTN-3-#1` counts as `NIO-SGLTN`).
    public static func busiest(
        from before: [Int: ThreadSchedStat], to after: [Int: ThreadSchedStat], seconds: Double, waiting: Bool = false
    ) -> [(name: String, percent: Double)] {
        var byName: [String: UInt64] = [:]
        for (id, now) in after {
            let used =
                waiting
                ? now.waitingNanoseconds &- (before[id]?.waitingNanoseconds ?? 0) : now.runningNanoseconds &- (before[id]?.runningNanoseconds ?? 0)
            byName[group(now.name), default: 0] += used
        }
        return byName.map { ($0.key, seconds > 0 ? Double($0.value) / 1e9 / seconds * 100 : 0) }.sorted { $0.percent > $1.percent }
    }

    /// `NIO-ELT-2-#1` → `NIO-ELT`; libdispatch's worker threads (`com.apple.root.default-qos`
    /// and its overcommit queue, cut to 15 bytes), which run Swift's tasks, → `pool`; other
    /// names as they are.
    static func group(_ name: String) -> String {
        if name.hasSuffix("qos") || name.hasSuffix("qos.overcommit") { return "pool" }
        guard let match = name.firstMatch(of: /^(.+?)-\d+-#\d+$/) else { return name }
        return String(match.1)
    }
}

/// Clock ticks per second for `/proc` CPU times.
public let clockTicksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

/// This process's user plus system CPU time, in seconds (getrusage).
public func benchCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Monotonic nanoseconds (CLOCK_MONOTONIC): the clock of the send-time header extension.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// A failure of the bench itself, with a message for the user.
public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `body`, failing with `message` if it takes longer than `timeout`.
public func withTimeout<T: Sendable>(_ timeout: Duration, _ message: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw BenchError(message)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

public func median(_ values: [Double]) -> Double {
    percentile(values, 50)
}

/// The nearest-rank percentile `p` (0-100) of `values`; the median of an even count is the mean of the middle two.
public func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    if p == 50 {
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}
