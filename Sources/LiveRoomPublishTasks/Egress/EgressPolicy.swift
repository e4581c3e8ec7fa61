import Foundation
import LiveRoomProtocol

/// Where the server may connect on a client's behalf (CDN URLs, image URLs). Destinations in
/// loopback, private, shared (CGNAT), link-local, multicast, reserved, documentation and other
/// special-use ranges are refused unless the operator allowed them (`--egress-allow`), so a
/// client cannot make the server reach the machine itself or the internal network.
public struct EgressPolicy: Sendable, Hashable {
    /// Ranges and host names the operator allowed despite the rules above.
    public private(set) var allowedRanges: [IPRange]
    public private(set) var allowedHosts: Set<String>

    /// One refusal message for every refused destination: it says nothing about whether
    /// anything listens there.
    public static let refusal = "destination not allowed by the server's egress policy"

    /// The policy with nothing allowed beyond the public internet.
    public init() {
        allowedRanges = []
        allowedHosts = []
    }

    /// - Parameter allow: CIDR ranges (`10.1.0.0/16`, `fd00::/8`), single addresses, or host
    ///   names (matched case-insensitively, exactly).
    public init(allow: [String]) throws(LiveRoomError) {
        allowedRanges = []
        allowedHosts = []
        for entry in allow.map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            if let range = IPRange(entry) {
                allowedRanges.append(range)
            } else if entry.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (97...122).contains($0 | 0x20) }),
                !entry.contains("/")
            {
                allowedHosts.insert(entry.lowercased())
            } else {
                throw LiveRoomError(ErrorCode.invalidParameter, "egress allow entry \(entry.quoted) is neither a CIDR range, an address nor a host name")
            }
        }
    }

    /// Whether the host name itself was allowed (before resolving it).
    public func allows(host: String) -> Bool {
        allowedHosts.contains(host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
    }

    /// Whether the server may connect to `address` (raw bytes: 4 for IPv4, 16 for IPv6).
    public func allows(address: IPAddressBytes) -> Bool {
        if allowedRanges.contains(where: { $0.contains(address) }) { return true }
        return !Self.isSpecialUse(address)
    }

    /// Whether every address a host resolved to may be reached (none resolved: no).
    public func allows(host: String, resolved addresses: [IPAddressBytes]) -> Bool {
        if allows(host: host) { return true }
        return !addresses.isEmpty && addresses.allSatisfy(allows(address:))
    }

    /// Ranges that are not the public internet (RFC 6890 and successors).
    static let specialUse: [IPRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
        "240.0.0.0/4", "255.255.255.255/32",
        "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16", "fc00::/7",
        "fe80::/10", "fec0::/10", "ff00::/8",
    ].map { IPRange($0)! }

    static func isSpecialUse(_ address: IPAddressBytes) -> Bool {
        // An IPv4-mapped (::ffff:a.b.c.d) or -compatible (::a.b.c.d) address is judged as IPv4.
        if address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }),
            (address[10] == 0xFF && address[11] == 0xFF) || (address[10] == 0 && address[11] == 0 && address[12...].contains { $0 != 0 })
        {
            return isSpecialUse(Array(address[12...]))
        }
        return specialUse.contains { $0.contains(address) }
    }
}

/// An IP address as raw bytes in network order: 4 for IPv4, 16 for IPv6.
public typealias IPAddressBytes = [UInt8]

/// An address range in CIDR notation.
public struct IPRange: Sendable, Hashable {
    public let base: IPAddressBytes
    public let prefixLength: Int

    /// `a.b.c.d/n`, `x:y::/n`, or a single address.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let base = IPRange.parse(first) else { return nil }
        let length = parts.count == 2 ? Int(parts[1]) : base.count * 8
        guard let length, (0...base.count * 8).contains(length) else { return nil }
        self.base = base
        self.prefixLength = length
    }

    public func contains(_ address: IPAddressBytes) -> Bool {
        guard address.count == base.count else { return false }
        var remaining = prefixLength
        for index in 0..<base.count where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if address[index] & mask != base[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    /// Parses a literal IPv4 or IPv6 address (brackets allowed around IPv6).
    public static func parse(_ text: String) -> IPAddressBytes? {
        let text = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        if text.contains(":") {
            var storage = in6_addr()
            guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
            return withUnsafeBytes(of: storage) { Array($0) }
        }
        var storage = in_addr()
        guard inet_pton(AF_INET, text, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: storage) { Array($0) }
    }
}
