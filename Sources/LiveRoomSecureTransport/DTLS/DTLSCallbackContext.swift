/// Per-connection state that OpenSSL's C callbacks read and write.
///
/// An `SSL` carries an unretained pointer to it in ex_data; ``SSLConnection`` keeps it
/// alive for as long as the `SSL` exists. Only touched from inside OpenSSL calls made by
/// the owning ``DTLSTransport``, so it shares that transport's confinement.
final class DTLSCallbackContext {
    /// The fingerprint the peer's certificate must have (from SDP).
    let expectedFingerprint: DTLSFingerprint
    /// First retransmission timeout, in microseconds.
    let initialTimeoutMicroseconds: UInt32

    /// Set once the peer's certificate matched ``expectedFingerprint``.
    var peerVerified = false
    /// The fingerprint the peer actually presented, when it did not match.
    var mismatchedFingerprint: DTLSFingerprint?
    /// The last alert description received from the peer, and whether it was fatal.
    var receivedAlert: (description: UInt8, fatal: Bool)?
    /// The last alert description we sent.
    var sentAlert: UInt8?

    init(expectedFingerprint: DTLSFingerprint, initialTimeout: Duration) {
        self.expectedFingerprint = expectedFingerprint
        let micros = initialTimeout.components.seconds * 1_000_000 + initialTimeout.components.attoseconds / 1_000_000_000_000
        self.initialTimeoutMicroseconds = UInt32(clamping: max(micros, 1_000))
    }

    /// RFC 6347 §4.2.4.1: double the timer on each retransmission, up to 60 s.
    func nextTimeoutMicroseconds(current: UInt32) -> UInt32 {
        current == 0 ? initialTimeoutMicroseconds : min(current &* 2, 60_000_000)
    }

    /// Checks the peer's certificate against the expected fingerprint.
    func verify(peer certificate: X509Certificate) -> Bool {
        guard let actual = certificate.fingerprint(expectedFingerprint.algorithm) else { return false }
        if actual == expectedFingerprint {
            peerVerified = true
            return true
        }
        mismatchedFingerprint = actual
        return false
    }
}
