/// `scheme://host[:port]/path` split up.
public struct DestinationURL: Sendable, Hashable {
    public var scheme: String
    public var host: String
    public var port: String?
    public var path: String
    /// `user:password@` before the host, kept as written.
    public var userInfo: String

    public init?(_ url: String) {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        scheme = url[..<schemeEnd.lowerBound].lowercased()
        let rest = url[schemeEnd.upperBound...]
        let fullAuthority = rest.prefix { $0 != "/" && $0 != "?" }
        path = String(rest.dropFirst(fullAuthority.count))
        let at = fullAuthority.lastIndex(of: "@")
        userInfo = at.map { String(fullAuthority[...$0]) } ?? ""
        let authority = at.map { fullAuthority[fullAuthority.index(after: $0)...] } ?? fullAuthority
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = after.hasPrefix(":") ? String(after.dropFirst()) : nil
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = String(authority[authority.index(after: colon)...])
        } else {
            host = String(authority)
        }
        guard !host.isEmpty else { return nil }
    }

    public func replacingHost(with literal: String) -> String {
        "\(scheme)://\(userInfo)\(literal)\(port.map { ":\($0)" } ?? "")\(path)"
    }

    /// The URL without its last path part (the stream name) and credentials: RTMP's tcUrl,
    /// with the host as written.
    public var tcURL: String {
        let hostText = host.contains(":") ? "[\(host)]" : host
        let withoutQuery = path.prefix { $0 != "?" }
        let app = withoutQuery.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return "\(scheme)://\(hostText)\(port.map { ":\($0)" } ?? "")\(app)"
    }
}
