/// A self-signed ECDSA P-256 certificate and its key, as WebRTC endpoints use for DTLS-SRTP.
///
/// Create one at startup and share it among all ``DTLSTransport``s: it is immutable after
/// creation and safe to use from any thread. Its ``fingerprint`` goes into SDP as
/// `a=fingerprint:` + ``DTLSFingerprint/sdpValue``.
public final class DTLSCertificate: Sendable {
    /// The SHA-256 fingerprint of the certificate.
    public let fingerprint: DTLSFingerprint
    /// The certificate's DER encoding.
    public let derEncoded: [UInt8]

    let certificate: X509Certificate
    let privateKey: PrivateKey
    /// The `SSL_CTX` every connection using this certificate is created from.
    let context: DTLSContext

    /// Generates a fresh key and a self-signed certificate.
    ///
    /// - Parameters:
    ///   - commonName: the subject and issuer CN.
    ///   - validity: how long from now the certificate is valid (it is also backdated one
    ///     day for clock skew). Browsers do not check it, but some stacks do.
    /// - Throws: ``DTLSError`` with code ``DTLSError/Code/certificateGeneration``.
    public init(commonName: String = "LiveRoom", validity: Duration = .seconds(30 * 86_400)) throws(DTLSError) {
        privateKey = try PrivateKey.generateP256()
        certificate = try X509Certificate.selfSigned(
            privateKey: privateKey, commonName: commonName, validitySeconds: Int(validity.components.seconds))
        guard let fingerprint = certificate.fingerprint(.sha256) else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "X509_digest failed")
        }
        self.fingerprint = fingerprint
        derEncoded = certificate.derEncoded
        context = try DTLSContext(certificate: certificate, privateKey: privateKey)
    }

    /// The fingerprint of any DER-encoded certificate, e.g. one a peer presented.
    public static func fingerprint(
        ofCertificateDER der: [UInt8], algorithm: DTLSFingerprint.Algorithm = .sha256
    ) -> DTLSFingerprint {
        DTLSFingerprint.of(certificateDER: der, algorithm: algorithm)
    }
}
