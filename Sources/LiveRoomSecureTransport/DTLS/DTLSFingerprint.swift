internal import COpenSSL

/// A certificate fingerprint as carried in SDP `a=fingerprint:` (RFC 8122 §5).
///
/// The SDP form is the hash function's name, a space, and the digest as uppercase hex
/// pairs joined by colons: `sha-256 AB:CD:…`.
public struct DTLSFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// Hash functions a fingerprint may use. LiveRoom's own certificates use ``sha256``.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case sha1 = "sha-1"
        case sha256 = "sha-256"
        case sha384 = "sha-384"
        case sha512 = "sha-512"

        /// Digest length in bytes.
        public var digestLength: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            case .sha384: 48
            case .sha512: 64
            }
        }

        /// OpenSSL's `EVP_MD` (a static object, never freed).
        var messageDigest: OpaquePointer? {
            switch self {
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            case .sha384: EVP_sha384()
            case .sha512: EVP_sha512()
            }
        }
    }

    /// The hash function.
    public let algorithm: Algorithm
    /// The digest of the certificate's DER encoding.
    public let bytes: [UInt8]

    /// Creates a fingerprint; `nil` if `bytes` has the wrong length for `algorithm`.
    public init?(algorithm: Algorithm, bytes: [UInt8]) {
        guard bytes.count == algorithm.digestLength else { return nil }
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// Parses the SDP attribute value, e.g. `"sha-256 AB:CD:…"`.
    ///
    /// The hash name and hex digits are case-insensitive (RFC 8122 §5); surrounding
    /// whitespace is ignored. Returns `nil` for unknown hash functions or malformed digests.
    public init?(sdpValue: String) {
        let parts = sdpValue.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2, let algorithm = Algorithm(rawValue: parts[0].lowercased()) else { return nil }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.utf8.count == 2, let byte = UInt8(pair, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(algorithm: algorithm, bytes: bytes)
    }

    /// The SDP attribute value: `sha-256 AB:CD:…` (uppercase hex, colon separated).
    public var sdpValue: String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = Array(algorithm.rawValue.utf8)
        text.append(UInt8(ascii: " "))
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ":")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { sdpValue }

    /// The fingerprint of a DER-encoded certificate, e.g. one received from a peer.
    public static func of(certificateDER der: [UInt8], algorithm: Algorithm = .sha256) -> DTLSFingerprint {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = der.withUnsafeBytes { raw in
            EVP_Digest(raw.baseAddress, raw.count, &digest, &length, algorithm.messageDigest, nil)
        }
        // EVP_Digest only fails on allocation failure; that is not recoverable here.
        precondition(ok == 1 && Int(length) == algorithm.digestLength, "EVP_Digest failed")
        return DTLSFingerprint(algorithm: algorithm, bytes: Array(digest[0..<Int(length)]))!
    }
}
