import Foundation
import LiveRoomWire

/// The addresses the server puts in its ICE candidates: where clients send media.
enum AdvertisedAddresses {
    /// One address of a network interface.
    struct Interface: Sendable, Hashable {
        var name: String
        var address: IPAddress
    }

    /// What to advertise, best first:
    /// - the operator's `--announce-ip` addresses, when given (a server behind NAT or on a cloud VM);
    /// - otherwise the bind address, when it is a single address;
    /// - otherwise (bound to every interface) each interface's address of the bind family, except
    ///   loopback, link-local and multicast; loopback only when nothing else exists.
    static func choose(bindHost: String, announced: [String], interfaces: [Interface]) -> [String] {
        if !announced.isEmpty { return unique(announced) }
        guard let bind = IPAddress(bindHost), bind.isUnspecified else { return [bindHost] }
        let family = interfaces.filter { bind.isV4 ? $0.address.isV4 : true }
        let usable = family.filter { !$0.address.isLoopback && !$0.address.isLinkLocal && !$0.address.isMulticast }
            .sorted { ($0.address.isV4 ? 0 : 1, $0.name) < ($1.address.isV4 ? 0 : 1, $1.name) }
        if !usable.isEmpty { return unique(usable.map { "\($0.address)" }) }
        return [bind.isV4 ? "127.0.0.1" : "::1"]
    }

    private static func unique(_ addresses: [String]) -> [String] {
        var seen = Set<String>()
        return addresses.filter { seen.insert($0).inserted }
    }

    /// The machine's interface addresses (getifaddrs).
    static func interfaces() -> [Interface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var result: [Interface] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let socketAddress = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length: socklen_t
            switch Int32(socketAddress.pointee.sa_family) {
            case AF_INET: length = socklen_t(MemoryLayout<sockaddr_in>.size)
            case AF_INET6: length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            default: continue
            }
            guard getnameinfo(socketAddress, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            // An IPv6 link-local address comes with its zone ("fe80::1%eth0").
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "%").first.map(String.init) ?? ""
            guard let address = IPAddress(text) else { continue }
            result.append(Interface(name: String(cString: entry.pointee.ifa_name), address: address))
        }
        return result
    }
}

extension IPAddress {
    var isV4: Bool { if case .v4 = self { true } else { false } }

    var isUnspecified: Bool {
        switch self {
        case .v4(let value): value == 0
        case .v6(let high, let low): high == 0 && low == 0
        }
    }

    var isLoopback: Bool {
        switch self {
        case .v4(let value): value >> 24 == 127
        case .v6(let high, let low): high == 0 && low == 1
        }
    }

    var isLinkLocal: Bool {
        switch self {
        case .v4(let value): value >> 16 == 0xA9FE
        case .v6(let high, _): high >> 54 == 0x3FA  // fe80::/10
        }
    }

    var isMulticast: Bool {
        switch self {
        case .v4(let value): value >> 28 == 0xE
        case .v6(let high, _): high >> 56 == 0xFF
        }
    }
}
