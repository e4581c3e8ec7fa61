/// An IPv4 or IPv6 address as raw integers, without any socket types.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// An IPv4 address in host order, e.g. `0xC000_0201` for 192.0.2.1.
    case v4(UInt32)
    /// An IPv6 address as its high and low 64 bits in host order.
    case v6(high: UInt64, low: UInt64)

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (with `::` compression and an
    /// optional embedded IPv4 tail). Returns `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        if let v4 = Self.parseIPv4(Substring(text)) {
            self = .v4(v4)
        } else if let (high, low) = Self.parseIPv6(Substring(text)) {
            self = .v6(high: high, low: low)
        } else {
            return nil
        }
    }

    /// The address in network byte order (4 or 16 bytes).
    public var bytes: [UInt8] {
        switch self {
        case .v4(let value):
            return (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
        case .v6(let high, let low):
            return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        }
    }

    /// Creates an address from 4 or 16 network-order bytes.
    public init?(bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        switch array.count {
        case 4:
            self = .v4(array.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let high = array[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = array[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = .v6(high: high, low: low)
        default:
            return nil
        }
    }

    /// Text form: dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run compressed).
    public var description: String {
        switch self {
        case .v4(let value):
            return (0..<4).map { String((value >> (24 - 8 * $0)) & 0xFF) }.joined(separator: ".")
        case .v6(let high, let low):
            let groups: [UInt16] = (0..<4).map { UInt16(truncatingIfNeeded: high >> (48 - 16 * $0)) }
                + (0..<4).map { UInt16(truncatingIfNeeded: low >> (48 - 16 * $0)) }
            // Longest run of zero groups, at least two long.
            var bestStart = -1, bestLength = 0, index = 0
            while index < 8 {
                if groups[index] == 0 {
                    var end = index
                    while end < 8 && groups[end] == 0 { end += 1 }
                    if end - index > bestLength { bestStart = index; bestLength = end - index }
                    index = end
                } else {
                    index += 1
                }
            }
            let hex = groups.map { String($0, radix: 16) }
            guard bestLength >= 2 else { return hex.joined(separator: ":") }
            let head = hex[0..<bestStart].joined(separator: ":")
            let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
            return head + "::" + tail
        }
    }

    static func parseIPv4(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let octet = UInt8(part) else { return nil }
            value = value << 8 | UInt32(octet)
        }
        return value
    }

    static func parseIPv6(_ text: Substring) -> (UInt64, UInt64)? {
        guard text.contains(":"), text.count <= 45 else { return nil }
        func groups(_ part: Substring, allowIPv4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            var result: [UInt16] = []
            for (position, piece) in pieces.enumerated() {
                if allowIPv4Tail, position == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    result.append(UInt16(v4 >> 16))
                    result.append(UInt16(v4 & 0xFFFF))
                    continue
                }
                guard !piece.isEmpty, piece.count <= 4, let group = UInt16(piece, radix: 16),
                      piece.allSatisfy({ $0.isHexDigit }) else { return nil }
                result.append(group)
            }
            return result
        }
        var all: [UInt16]
        if let range = text.firstRange(of: "::") {
            let headText = text[text.startIndex..<range.lowerBound]
            let tailText = text[range.upperBound...]
            guard !tailText.contains("::"),
                  let head = groups(headText, allowIPv4Tail: false),
                  let tail = groups(tailText, allowIPv4Tail: true),
                  head.count + tail.count <= 7 else { return nil }
            all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let parsed = groups(text, allowIPv4Tail: true), parsed.count == 8 else { return nil }
            all = parsed
        }
        let high = all[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let low = all[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return (high, low)
    }
}

/// The transport protocol of a candidate and of the path media takes: UDP datagrams, or an
/// ICE-TCP connection (RFC 6544) carrying them framed by RFC 4571.
public enum TransportProtocol: String, Hashable, Sendable {
    case udp
    case tcp
}

/// An IP address and UDP or TCP port. Two addresses with the same IP and port but different
/// protocols are different paths (a client's UDP socket and its ICE-TCP connection).
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    /// The IP address.
    public var address: IPAddress
    /// The port number.
    public var port: UInt16
    /// UDP, or an ICE-TCP connection.
    public var transport: TransportProtocol

    /// Creates a transport address.
    public init(address: IPAddress, port: UInt16, transport: TransportProtocol = .udp) {
        self.address = address
        self.port = port
        self.transport = transport
    }

    /// `192.0.2.1:32853` or `[2001:db8::1]:32853`; a TCP path ends in `/tcp`.
    public var description: String {
        let suffix = transport == .tcp ? "/tcp" : ""
        switch address {
        case .v4: return "\(address):\(port)\(suffix)"
        case .v6: return "[\(address)]:\(port)\(suffix)"
        }
    }
}
