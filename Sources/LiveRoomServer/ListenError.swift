import Glibc
import NIOCore

/// A port the server could not listen on, named by the setting that chose it and the address
/// (two servers on one machine both want the default ICE-TCP port 7881, for one).
public struct ListenError: Error, CustomStringConvertible {
    /// What listens there: "HTTP and WebSocket", "media UDP", "ICE-TCP".
    public var what: String
    /// The flag and environment variable that set the port.
    public var setting: String
    public var host: String
    public var port: Int
    public var reason: String

    public var description: String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "cannot listen for \(what) on \(address) (\(setting)): \(reason)"
    }

    init(_ what: String, setting: String, host: String, port: Int, error: any Error) {
        self.what = what
        self.setting = setting
        self.host = host
        self.port = port
        reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
    }

    /// Runs `listen`, naming the port in any error it throws.
    static func naming<T>(_ what: String, setting: String, host: String, port: Int, _ listen: () async throws -> T) async throws -> T {
        do {
            return try await listen()
        } catch {
            throw ListenError(what, setting: setting, host: host, port: port, error: error)
        }
    }
}
