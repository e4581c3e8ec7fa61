/// A libsrtp2 failure: the `srtp_err_status_t` code and the operation that returned it.
public struct SRTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An `srtp_err_status_t` value.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let fail = Code(rawValue: 1)
        public static let badParam = Code(rawValue: 2)
        public static let allocFail = Code(rawValue: 3)
        public static let initFail = Code(rawValue: 5)
        /// Authentication tag (HMAC or GCM) did not verify: tampered, or wrong key.
        public static let authFail = Code(rawValue: 7)
        public static let cipherFail = Code(rawValue: 8)
        /// Packet index already seen (a replay).
        public static let replayFail = Code(rawValue: 9)
        /// Packet index is older than the replay window.
        public static let replayOld = Code(rawValue: 10)
        /// No stream for this SSRC in this direction (e.g. protecting on an inbound session).
        public static let noContext = Code(rawValue: 13)
        public static let parseError = Code(rawValue: 21)

        private static let names = [
            "ok", "fail", "bad_param", "alloc_fail", "dealloc_fail", "init_fail", "terminus",
            "auth_fail", "cipher_fail", "replay_fail", "replay_old", "algo_fail", "no_such_op",
            "no_ctx", "cant_check", "key_expired", "socket_err", "signal_err", "nonce_bad",
            "read_fail", "write_fail", "parse_err", "encode_err", "semaphore_err", "pfkey_err",
            "bad_mki", "pkt_idx_old", "pkt_idx_adv",
        ]

        /// libsrtp's name without the `srtp_err_status_` prefix, e.g. `auth_fail`.
        public var name: String {
            rawValue < Self.names.count ? Self.names[Int(rawValue)] : "unknown_\(rawValue)"
        }

        public var description: String { name }
    }

    /// The status libsrtp returned.
    public let code: Code
    /// The call that failed, e.g. `srtp_unprotect`.
    public let operation: String
    /// Extra detail for failures detected before calling libsrtp.
    public let detail: String?

    /// Creates an error; normally only this module does.
    public init(code: Code, operation: String, detail: String? = nil) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    /// libsrtp's name for ``code``, e.g. `auth_fail`.
    public var name: String { code.name }

    public var description: String {
        "SRTPError(\(operation): \(code.name) (\(code.rawValue))\(detail.map { ", \($0)" } ?? ""))"
    }
}
