import Foundation
import LiveRoomMedia
import LiveRoomPublishTasks

/// Checks a destination against the egress policy just before connecting, and pins the
/// connection to the address that was checked: host names are resolved here, every address
/// must be allowed, and the connection goes to the first one (so a DNS answer that changes
/// between the check and the connect cannot redirect it).
public struct EgressResolver: Sendable {
    public let policy: EgressPolicy
    /// Whether `rtmps://` connections skip certificate verification (`--rtmps-insecure`).
    public let insecureTLS: Bool
    /// The CA bundle `rtmps://` certificates are checked against.
    public static let caBundle = "/etc/ssl/certs/ca-certificates.crt"

    public init(policy: EgressPolicy, insecureTLS: Bool = false) {
        self.policy = policy
        self.insecureTLS = insecureTLS
    }

    /// A refused destination.
    public struct Refused: Error, CustomStringConvertible {
        public var description: String { EgressPolicy.refusal }
    }

    /// The URL to connect to (the host replaced by the checked address) and the protocol
    /// options that keep the original host where the far end sees it: RTMP's `tcUrl`, and for
    /// `rtmps://` the host name the certificate must carry.
    public func destination(for url: String) throws -> RTMPPublisher.Destination {
        guard let parts = DestinationURL(url) else { return RTMPPublisher.Destination(url: url) }  // a file path (tests, recordings)
        guard let addresses = allowedAddresses(of: parts.host), let address = addresses.first(where: policy.allows(address:)) ?? addresses.first
        else { throw Refused() }
        let literal = address.count == 4 ? address.map(String.init).joined(separator: ".") : "[\(Self.ipv6Text(address))]"
        var options = ["rtmp_tcurl": parts.tcURL]
        if parts.scheme == "rtmps" {
            options["tls_verify"] = insecureTLS ? "0" : "1"
            options["verifyhost"] = parts.host
            if FileManager.default.fileExists(atPath: Self.caBundle) { options["ca_file"] = Self.caBundle }
        }
        return RTMPPublisher.Destination(url: parts.replacingHost(with: literal), protocolOptions: options)
    }

    /// The addresses of `host` (itself when it is an address, resolved when it is a name), or nil
    /// when the policy refuses the host or any of them.
    public func allowedAddresses(of host: String) -> [IPAddressBytes]? {
        let addresses = IPRange.parse(host).map { [$0] } ?? Self.resolve(host)
        return policy.allows(host: host, resolved: addresses) ? addresses : nil
    }

    /// The host's IPv4 and IPv6 addresses (getaddrinfo); none when it does not resolve.
    static func resolve(_ host: String) -> [IPAddressBytes] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddressBytes] = []
        for entry in sequence(first: first, next: { $0.pointee.ai_next }) {
            guard let socketAddress = entry.pointee.ai_addr else { continue }
            switch Int32(entry.pointee.ai_family) {
            case AF_INET:
                socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { addresses.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) }) }
            case AF_INET6:
                socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { addresses.append(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }) }
            default:
                continue
            }
        }
        return addresses
    }

    static func ipv6Text(_ bytes: IPAddressBytes) -> String {
        var storage = in6_addr()
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        inet_ntop(AF_INET6, &storage, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
