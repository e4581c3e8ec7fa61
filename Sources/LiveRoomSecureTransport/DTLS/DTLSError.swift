/// A failure of certificate generation or of a DTLS handshake or session.
///
/// Wraps what OpenSSL reported: the `SSL_get_error` result, the first packed code of
/// OpenSSL's error queue and its text, and any TLS alert exchanged with the peer.
public struct DTLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, independent of OpenSSL's wording.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case certificateGeneration, contextSetup, fingerprintMismatch, handshakeFailed,
                alertReceived, timedOut, noSRTPProfile, keyExport, protocolError
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Creating the key, certificate or `SSL_CTX` failed.
        public static let certificateGeneration = Code(.certificateGeneration)
        /// Creating or configuring the per-connection `SSL` object failed.
        public static let contextSetup = Code(.contextSetup)
        /// The peer's certificate does not match the fingerprint from signaling.
        public static let fingerprintMismatch = Code(.fingerprintMismatch)
        /// The handshake failed locally (bad message, no shared cipher, …).
        public static let handshakeFailed = Code(.handshakeFailed)
        /// The peer sent a fatal alert.
        public static let alertReceived = Code(.alertReceived)
        /// The peer stopped answering: OpenSSL gave up retransmitting.
        public static let timedOut = Code(.timedOut)
        /// The handshake completed without a `use_srtp` profile we support.
        public static let noSRTPProfile = Code(.noSRTPProfile)
        /// Exporting the SRTP keying material failed.
        public static let keyExport = Code(.keyExport)
        /// A fatal error after the handshake completed.
        public static let protocolError = Code(.protocolError)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// The `SSL_get_error` result (`SSL_ERROR_SSL` = 1, `SSL_ERROR_SYSCALL` = 5, …), or 0.
    public var sslErrorCode: Int32
    /// The first packed code from OpenSSL's error queue (`ERR_get_error`), or 0.
    public var openSSLErrorCode: UInt
    /// TLS alert description (RFC 5246 §7.2) received from the peer, if any.
    public var receivedAlert: UInt8?
    /// TLS alert description we sent to the peer, if any (e.g. 42 bad_certificate).
    public var sentAlert: UInt8?
    /// Human-readable detail, including OpenSSL's error strings.
    public var message: String

    /// Creates an error; normally only this module does.
    public init(
        code: Code, sslErrorCode: Int32 = 0, openSSLErrorCode: UInt = 0,
        receivedAlert: UInt8? = nil, sentAlert: UInt8? = nil, message: String
    ) {
        self.code = code
        self.sslErrorCode = sslErrorCode
        self.openSSLErrorCode = openSSLErrorCode
        self.receivedAlert = receivedAlert
        self.sentAlert = sentAlert
        self.message = message
    }

    public var description: String {
        var text = "DTLSError(\(code)"
        if sslErrorCode != 0 { text += ", ssl error \(sslErrorCode)" }
        if let receivedAlert { text += ", received alert \(receivedAlert)" }
        if let sentAlert { text += ", sent alert \(sentAlert)" }
        return text + "): \(message)"
    }
}
