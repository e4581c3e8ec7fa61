import CZlib
import Crypto
import Foundation

/// A TLSSigAPIv2-compatible UserSig: the credential a user presents to enter a room,
/// and an administrator presents to call the admin API.
///
/// The signed content is `TLS.identifier:U\nTLS.sdkappid:N\nTLS.time:T\nTLS.expire:E\n`,
/// signed with HMAC-SHA256 keyed by the secret key's UTF-8 bytes. The signature and fields
/// are put in a JSON object, compressed with zlib, and encoded in base64 with
/// `+`→`*`, `/`→`-`, `=`→`_`, as Tencent's public tls-sig-api-v2 libraries do.
public struct UserSig: Sendable, Hashable {
    public var identifier: String
    public var sdkAppId: UInt64
    /// Seconds since 1970 when the signature was made.
    public var time: Int64
    /// How many seconds after `time` it stays valid.
    public var expire: Int64
    /// Base64 of the HMAC-SHA256 signature (`TLS.sig`).
    public var signature: String
    /// Base64 of the signed user buffer (`TLS.userbuf`), which a PrivateMapKey carries.
    public var userbuf: String?

    /// The identifier the admin API accepts.
    public static let administrator = "administrator"

    /// Signs a new UserSig.
    /// - Parameter userbuf: bytes to sign along (a PrivateMapKey's privileges), or nil.
    public static func make(
        sdkAppId: UInt64, secretKey: String, identifier: String, time: Int64, expire: Int64, userbuf: [UInt8]? = nil
    ) -> UserSig {
        let buffer = userbuf.map { Data($0).base64EncodedString() }
        return UserSig(
            identifier: identifier, sdkAppId: sdkAppId, time: time, expire: expire,
            signature: signature(sdkAppId: sdkAppId, secretKey: secretKey, identifier: identifier, time: time, expire: expire, userbuf: buffer),
            userbuf: buffer)
    }

    /// The base64 HMAC-SHA256 over the TLSSigAPIv2 content string; a user buffer adds its
    /// `TLS.userbuf` line after `TLS.expire`.
    public static func signature(
        sdkAppId: UInt64, secretKey: String, identifier: String, time: Int64, expire: Int64, userbuf: String? = nil
    ) -> String {
        var content = "TLS.identifier:\(identifier)\nTLS.sdkappid:\(sdkAppId)\nTLS.time:\(time)\nTLS.expire:\(expire)\n"
        if let userbuf { content += "TLS.userbuf:\(userbuf)\n" }
        let mac = HMAC<SHA256>.authenticationCode(for: Data(content.utf8), using: SymmetricKey(data: Data(secretKey.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// The encoded credential string (what a client sends as `userSig`).
    public func encoded() -> String {
        // Field order follows the reference libraries; a verifier must not depend on it.
        let json = "{\"TLS.ver\":\"2.0\",\"TLS.identifier\":\(jsonString(identifier)),\"TLS.sdkappid\":\(sdkAppId),"
            + "\"TLS.expire\":\(expire),\"TLS.time\":\(time),"
            + (userbuf.map { "\"TLS.userbuf\":\(jsonString($0))," } ?? "") + "\"TLS.sig\":\(jsonString(signature))}"
        let compressed = Zlib.compress(Array(json.utf8))
        return UserSig.encodeBase64URL(compressed)
    }

    /// Decodes the credential string without checking the signature.
    public static func decode(_ text: String) throws(UserSigError) -> UserSig {
        guard !text.isEmpty else { throw .malformed("UserSig is empty") }
        guard let compressed = decodeBase64URL(text) else { throw .malformed("UserSig is not TLSSigAPIv2 base64") }
        guard let json = Zlib.decompress(compressed, limit: 64 * 1024) else {
            throw .malformed("UserSig does not inflate as zlib data")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw .malformed("UserSig does not hold a JSON object")
        }
        guard let identifier = object["TLS.identifier"] as? String,
            let sdkAppId = integer(object["TLS.sdkappid"]),
            let time = integer(object["TLS.time"]),
            let expire = integer(object["TLS.expire"]),
            let signature = object["TLS.sig"] as? String
        else {
            throw .malformed("UserSig lacks one of TLS.identifier, TLS.sdkappid, TLS.time, TLS.expire, TLS.sig")
        }
        guard sdkAppId >= 0 else { throw .malformed("UserSig has a negative TLS.sdkappid") }
        var userbuf: String?
        if let value = object["TLS.userbuf"] {
            guard let text = value as? String else { throw .malformed("UserSig has a TLS.userbuf that is not a string") }
            userbuf = text
        }
        return UserSig(identifier: identifier, sdkAppId: UInt64(sdkAppId), time: time, expire: expire, signature: signature, userbuf: userbuf)
    }

    /// Decodes and checks a credential: signature, SDKAppID, identifier and expiry.
    /// - Parameter now: seconds since 1970.
    @discardableResult
    public static func verify(
        _ text: String, sdkAppId: UInt64, secretKey: String, identifier: String, now: Int64
    ) throws(UserSigError) -> UserSig {
        let sig = try decode(text)
        guard sig.sdkAppId == sdkAppId else {
            throw .checkFailed("UserSig was made for SDKAppID \(sig.sdkAppId), not \(sdkAppId)")
        }
        guard sig.identifier == identifier else {
            throw .checkFailed("UserSig was made for user \"\(sig.identifier)\", not \"\(identifier)\"")
        }
        let expected = signature(
            sdkAppId: sdkAppId, secretKey: secretKey, identifier: identifier, time: sig.time, expire: sig.expire, userbuf: sig.userbuf)
        guard constantTimeEqual(Array(expected.utf8), Array(sig.signature.utf8)) else {
            throw .checkFailed("UserSig signature does not match this SDKAppID's secret key")
        }
        guard sig.time &+ sig.expire > now else {
            throw .checkFailed("UserSig expired at \(sig.time &+ sig.expire) (now \(now))")
        }
        return sig
    }

    static func encodeBase64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = String(text.map { c -> Character in
            switch c {
            case "+": "*"
            case "/": "-"
            case "=": "_"
            default: c
            }
        })
        return text
    }

    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        let standard = String(text.map { c -> Character in
            switch c {
            case "*": "+"
            case "-": "/"
            case "_": "="
            default: c
            }
        })
        return Data(base64Encoded: standard).map(Array.init)
    }

    private static func integer(_ value: Any?) -> Int64? {
        switch value {
        case let n as NSNumber:
            // JSONSerialization gives NSNumber for both integers and booleans; refuse fractions.
            let d = n.doubleValue
            guard d == d.rounded(), abs(d) < 9.0e15 else { return nil }
            return n.int64Value
        case let s as String:
            return Int64(s)
        default:
            return nil
        }
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    private func jsonString(_ s: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes])
        // Strip the surrounding [ ] of the one-element array.
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}

/// Why a UserSig was refused. `code` is TRTC's error code for it.
public enum UserSigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Empty or not a UserSig at all (TRTC -3320, ERR_TRTC_INVALID_USER_SIG).
    case malformed(String)
    /// A well-formed UserSig that does not verify: wrong signature, app, user, or expired
    /// (TRTC -100018, ERR_TRTC_USER_SIG_CHECK_FAILED).
    case checkFailed(String)

    public var code: Int {
        switch self {
        case .malformed: -3320
        case .checkFailed: -100018
        }
    }

    public var message: String {
        switch self {
        case .malformed(let m), .checkFailed(let m): m
        }
    }

    public var description: String { "\(code): \(message)" }
}

/// zlib's one-shot compress and a bounded inflate.
enum Zlib {
    static func compress(_ input: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(input.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                compress2(out.baseAddress, &length, inp.baseAddress, uLong(inp.count), Z_DEFAULT_COMPRESSION)
            }
        }
        precondition(status == Z_OK, "compress2 cannot fail with a compressBound buffer")
        output.removeLast(output.count - Int(length))
        return output
    }

    /// Inflates a zlib stream; nil if it is not one or inflates past `limit` bytes.
    static func decompress(_ input: [UInt8], limit: Int) -> [UInt8]? {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: limit)
        var input = input
        let status = input.withUnsafeMutableBufferPointer { inp in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = inp.baseAddress
                stream.avail_in = uInt(inp.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeLast(output.count - Int(stream.total_out))
        return output
    }
}
