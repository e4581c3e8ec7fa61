import Crypto

/// TRTC's callback signature: the `Sign` header is base64 of HMAC-SHA256 over the raw body
/// bytes, keyed with the callback key.
public enum WebhookSignature {
    /// The longest callback key TRTC allows.
    public static let maxKeyLength = 32

    /// Whether `key` is a callback key TRTC would take: 1 to 32 ASCII letters and digits.
    public static func isValidKey(_ key: String) -> Bool {
        (1...maxKeyLength).contains(key.utf8.count)
            && key.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// The `Sign` header value for `body`.
    public static func sign(_ body: [UInt8], key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(key.utf8)))
        return base64(Array(mac))
    }

    /// Standard base64 with padding.
    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(triple >> 18 & 63)])
            out.append(alphabet[Int(triple >> 12 & 63)])
            out.append(index + 1 < bytes.count ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
