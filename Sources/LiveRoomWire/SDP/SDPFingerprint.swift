/// `a=fingerprint:<hash function> <hex:hex:…>` (RFC 8122), the DTLS certificate hash.
public struct SDPFingerprint: Hashable, Sendable {
    /// The hash function name, e.g. `sha-256`.
    public var hashFunction: String
    /// The hash bytes.
    public var bytes: [UInt8]

    /// Creates a fingerprint.
    public init(hashFunction: String, bytes: [UInt8]) {
        self.hashFunction = hashFunction
        self.bytes = bytes
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else { throw .malformed("SDP fingerprint \"\(value)\" is not <hash> <hex>") }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.count == 2, pair.allSatisfy(\.isHexDigit), let byte = UInt8(pair, radix: 16) else {
                throw .malformed("SDP fingerprint \"\(value)\" has a bad hex pair")
            }
            bytes.append(byte)
        }
        self.init(hashFunction: String(parts[0]), bytes: bytes)
    }

    /// The hash as uppercase colon-separated hex, as RFC 8122 writes it.
    public var hexString: String {
        let digits: [Character] = Array("0123456789ABCDEF")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0xF)]]) }.joined(separator: ":")
    }

    var text: String { "\(hashFunction) \(hexString)" }
}
