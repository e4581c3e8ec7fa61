import NIOSSL
import PostgresNIO

/// A `postgres://` (or `postgresql://`) URL as `--cluster-db` takes it:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
/// User and password may be percent-encoded; an IPv6 host is written in brackets.
public struct ClusterDatabaseURL: Sendable, Hashable {
    public enum TLSMode: String, Sendable, Hashable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// What is wrong with a URL: said plainly, without the password.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The URL without its password, for messages and logs.
    public var redacted: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(username)@\(hostPart):\(port)/\(database)"
    }

    public init(_ text: String) throws(Problem) {
        guard text.utf8.count <= 2048 else { throw Problem(description: "--cluster-db is longer than 2048 bytes") }
        var rest: Substring
        if text.hasPrefix("postgres://") {
            rest = text.dropFirst("postgres://".count)
        } else if text.hasPrefix("postgresql://") {
            rest = text.dropFirst("postgresql://".count)
        } else {
            throw Problem(description: "--cluster-db must be a postgres:// URL (postgres://user:password@host:5432/database)")
        }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let slash = rest.firstIndex(of: "/") else {
            throw Problem(description: "--cluster-db names no database (postgres://user@host:5432/database)")
        }
        let authority = rest[..<slash]
        guard let database = Self.decode(rest[rest.index(after: slash)...]), !database.isEmpty, !database.contains("/") else {
            throw Problem(description: "--cluster-db names no database (postgres://user@host:5432/database)")
        }
        guard let at = authority.lastIndex(of: "@") else {
            throw Problem(description: "--cluster-db names no user (postgres://user@host:5432/database)")
        }
        let userInfo = authority[..<at]
        let hostPort = authority[authority.index(after: at)...]
        let userPart = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let username = Self.decode(userPart[0]), !username.isEmpty else {
            throw Problem(description: "--cluster-db names no user (postgres://user@host:5432/database)")
        }
        var password: String?
        if userPart.count == 2 {
            guard let decoded = Self.decode(userPart[1]) else { throw Problem(description: "--cluster-db has a badly percent-encoded password") }
            password = decoded
        }
        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw Problem(description: "--cluster-db has an IPv6 host without its closing ]") }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Problem(description: "--cluster-db has text after its IPv6 host") }
                portText = after.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = hostPort
        }
        guard !host.isEmpty, host.utf8.count <= 253, host.allSatisfy({ !$0.isWhitespace && $0 != "/" && $0 != "@" }) else {
            throw Problem(description: "--cluster-db names no host (postgres://user@host:5432/database)")
        }
        var port = 5432
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw Problem(description: "--cluster-db's port must be 1 to 65535, not \"\(portText)\"")
            }
            port = number
        }
        var tls = TLSMode.prefer
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "sslmode" else {
                throw Problem(description: "--cluster-db takes only the parameter sslmode (disable, prefer or require), not \"\(parts[0])\"")
            }
            guard let mode = TLSMode(rawValue: String(parts[1])) else {
                throw Problem(description: "--cluster-db's sslmode must be disable, prefer or require, not \"\(parts[1])\"")
            }
            tls = mode
        }
        self.host = String(host)
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Percent-decodes; nil for a malformed escape or bytes that are not UTF-8.
    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        let decoded = String(decoding: bytes, as: UTF8.self)
        guard Array(decoded.utf8) == bytes, !bytes.contains(0) else { return nil }
        return decoded
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension ClusterDatabaseURL {
    /// A postgres-nio client configuration for this database, with its TLS mode.
    func clientConfiguration(connectTimeout: Duration, maxConnections: Int) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        var configuration = PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = maxConnections
        return configuration
    }
}
