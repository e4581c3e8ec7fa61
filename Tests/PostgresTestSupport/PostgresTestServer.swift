import Foundation
import TestTools

/// A real PostgreSQL server for tests: Debian's `initdb` and `pg_ctl` in a temporary
/// directory, listening on 127.0.0.1 on a free port (its Unix socket in that directory too),
/// with the one superuser `liveroom` and trust authentication on loopback. PostgreSQL refuses
/// to run as root, so when the tests run as root the server runs as the `postgres` user Debian's
/// package creates (`runuser -u postgres --`), the directory owned by it. Tests that start one
/// carry `.requires(.postgreSQL)`.
///
/// ```swift
/// let database = try PostgresTestServer()
/// try database.start()
/// defer { database.stop() }
/// let url = database.url  // postgres://liveroom@127.0.0.1:PORT/postgres?sslmode=disable
/// ```
public final class PostgresTestServer: @unchecked Sendable {
    public let port: Int
    /// The temporary directory: `data/` (the cluster), `server.log`, the socket.
    public let directory: String
    private let lock = NSLock()
    private var running = false

    /// The user the server runs as when the tests run as root.
    public static let unprivilegedUser = "postgres"

    /// Runs `initdb` into a new temporary directory. Does not start the server.
    public init(port: Int? = nil) throws {
        self.port = try port ?? Self.freeLoopbackPort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if getuid() == 0 {
            guard let user = getpwnam(Self.unprivilegedUser) else {
                throw PostgresTestError(message: "running as root and there is no user \(Self.unprivilegedUser) to run PostgreSQL as (Debian's postgresql package makes it)")
            }
            guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw PostgresTestError(message: "chown \(directory): errno \(errno)")
            }
        }
        try run(
            "initdb",
            ["-D", directory + "/data", "-U", "liveroom", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"],
            timeout: 120)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `postgres://liveroom@127.0.0.1:PORT/postgres?sslmode=disable`.
    public var url: String { "postgres://liveroom@127.0.0.1:\(port)/postgres?sslmode=disable" }

    /// The server log so far, for failure messages.
    public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

    /// Starts the server and waits until it accepts connections (`pg_ctl -w`, 60 s at most).
    public func start() throws {
        try run(
            "pg_ctl",
            ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60",
             "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c fsync=off -c full_page_writes=off",
             "start"],
            timeout: 90)
        lock.withLock { running = true }
    }

    /// Stops the server at once (`pg_ctl -m immediate`, as a crash would); nothing when it is
    /// not running. Commits are written to the operating system before they are answered
    /// (`synchronous_commit` stays on; only `fsync` is off), so a restart finds every commit.
    public func stop() {
        guard lock.withLock({ let was = running; running = false; return was }) else { return }
        try? run("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "-t", "30", "stop"], timeout: 40)
    }

    /// Runs one of PostgreSQL's programs, as the unprivileged user when we are root; throws
    /// with its output when it fails or outlives `timeout` seconds.
    ///
    /// Spawned directly (posix_spawn, every descriptor above 2 closed, output to a file) and
    /// reaped with waitpid: `pg_ctl start` leaves the server running, and Foundation's Process
    /// would take a server holding a descriptor it inherited for a program still running.
    private func run(_ program: String, _ arguments: [String], timeout: Double) throws {
        let executable = RequiredTool.postgreSQLBinDirectory + "/" + program
        let argv = getuid() == 0 ? ["/usr/sbin/runuser", "-u", Self.unprivilegedUser, "--", executable] + arguments : [executable] + arguments
        let output = directory + "/\(program).out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // glibc 2.34's posix_spawn_file_actions_addclosefrom_np, which Swift does not import;
        // without it, each descriptor up to 1023 is closed one by one.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        } else {
            for fd in Int32(3)..<1024 where fcntl(fd, F_GETFD) != -1 { posix_spawn_file_actions_addclose(&actions, fd) }
        }
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw PostgresTestError(message: "cannot start \(argv[0]): errno \(spawned)") }
        func text() -> String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 {
                if errno == EINTR { continue }
                status = 0  // reaped elsewhere: judged by what follows
                break
            }
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw PostgresTestError(message: "\(program) did not finish within \(Int(timeout)) s: \(text())")
            }
            usleep(20_000)
        }
        // Exited normally with status 0: WIFEXITED and WEXITSTATUS by hand (macros Swift does not import).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw PostgresTestError(message: "\(program) \(arguments.last ?? "") failed (wait status \(status)): \(text())\n\(log)")
        }
    }

    /// A free TCP port on 127.0.0.1 (TestTools' ``freeLoopbackPort()``).
    public static func freeLoopbackPort() throws -> Int {
        try TestTools.freeLoopbackPort()
    }
}

/// The test PostgreSQL server could not be set up or started.
public struct PostgresTestError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
