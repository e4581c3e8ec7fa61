import Foundation
import TestTools

/// A real RTMP server for tests: Debian's nginx with `libnginx-mod-rtmp`, started on a free
/// loopback port with its own configuration and files in a temporary directory. Tests that
/// start one carry the `.requires(.nginxRTMP)` trait.
///
/// The configuration it writes (`DIR` is the temporary directory, `PORT` the port):
///
/// ```
/// load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
/// daemon off;
/// master_process off;
/// pid DIR/nginx.pid;
/// error_log DIR/error.log warn;
/// events { worker_connections 256; }
/// rtmp {
///     access_log DIR/access.log;
///     server {
///         listen 127.0.0.1:PORT;
///         application live { live on; record off; wait_key on; }
///     }
/// }
/// ```
///
/// `access_log` sits inside `rtmp {}` because the module's compiled-in default path is not
/// writable; `wait_key on` makes a player that joins mid-stream start at a key frame.
/// nginx is started as `nginx -c DIR/nginx.conf -p DIR/ -e DIR/error.log`.
///
/// ```swift
/// let server = try NginxRTMPServer()
/// try server.start()
/// defer { server.stop() }
/// let url = server.url(stream: "test")  // rtmp://127.0.0.1:PORT/live/test
/// ```
public final class NginxRTMPServer: @unchecked Sendable {
    /// The loopback port nginx listens on; kept across ``stop()`` and ``start()``.
    public let port: Int
    /// The temporary directory with the configuration, pid file and logs.
    public let directory: String
    private var process: Process?

    /// Writes the configuration for `port`, or for a free port if nil. Does not start nginx.
    public init(port: Int? = nil) throws {
        self.port = try port ?? Self.freeLoopbackPort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-nginx-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Self.configuration(directory: directory, port: self.port)
            .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    public static func configuration(directory: String, port: Int) -> String {
        """
        load_module \(RequiredTool.rtmpModulePath);
        daemon off;
        master_process off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 256; }
        rtmp {
            access_log \(directory)/access.log;
            server {
                listen 127.0.0.1:\(port);
                application live { live on; record off; wait_key on; }
            }
        }

        """
    }

    /// `rtmp://127.0.0.1:PORT/live/<stream>`.
    public func url(stream: String) -> String { "rtmp://127.0.0.1:\(port)/live/\(stream)" }

    /// The error log so far, for failure messages.
    public var errorLog: String { (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "" }

    /// Starts nginx and waits until the port accepts connections.
    public func start(timeout: Duration = .seconds(10)) throws {
        precondition(process == nil, "nginx already running")
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: RequiredTool.nginxRTMP.path)
        nginx.arguments = ["-c", directory + "/nginx.conf", "-p", directory + "/", "-e", directory + "/error.log"]
        nginx.standardInput = FileHandle.nullDevice
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try nginx.run()
        process = nginx
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard nginx.isRunning else {
                process = nil
                throw NginxError(message: "nginx exited with \(nginx.terminationStatus): \(errorLog)")
            }
            if Self.canConnect(port: port) { return }
            usleep(20_000)
        }
        stop()
        throw NginxError(message: "nginx did not listen on port \(port) within \(timeout): \(errorLog)")
    }

    /// Terminates nginx (SIGTERM, then SIGKILL after `grace`) and waits for it to exit.
    public func stop(grace: Duration = .seconds(3)) {
        guard let nginx = process else { return }
        process = nil
        guard nginx.isRunning else { return }
        nginx.terminate()
        let deadline = ContinuousClock.now + grace
        while nginx.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if nginx.isRunning { Foundation.kill(nginx.processIdentifier, SIGKILL) }
        nginx.waitUntilExit()
    }

    /// Kills nginx at once (SIGKILL), as a crashed CDN edge would go away.
    public func kill() {
        guard let nginx = process else { return }
        process = nil
        Foundation.kill(nginx.processIdentifier, SIGKILL)
        nginx.waitUntilExit()
    }

    public struct NginxError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// A port no one listens on now (TestTools' ``freeLoopbackPort()``).
    public static func freeLoopbackPort() throws -> Int {
        try TestTools.freeLoopbackPort()
    }

    public static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    public static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
