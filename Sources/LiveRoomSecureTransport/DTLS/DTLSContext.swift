internal import COpenSSL

/// An OpenSSL `SSL_CTX` configured for WebRTC's DTLS-SRTP: DTLS 1.2 only, our certificate
/// and key, mutual certificate authentication by fingerprint, `use_srtp` offered.
///
/// Configured once in `init` and never changed afterwards; OpenSSL allows concurrent
/// `SSL_new` on a configured context, so one context serves many connections on many threads.
final class DTLSContext: @unchecked Sendable {
    let handle: OpaquePointer

    /// The ex_data slot in each `SSL` that points at its ``DTLSCallbackContext``.
    static let callbackContextIndex: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)

    /// `use_srtp` profiles in order of preference (RFC 7714 GCM first, then RFC 5764's default).
    static let srtpProfiles = SRTPProtectionProfile.allCases

    /// ECDHE-ECDSA with AEAD ciphers only: what browsers and GStreamer offer for WebRTC,
    /// and a fixed, small per-record overhead (see `DTLSDatagramFilter`).
    static let cipherList = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"

    init(certificate: X509Certificate, privateKey: PrivateKey) throws(DTLSError) {
        OpenSSLErrorQueue.clear()
        guard let context = SSL_CTX_new(DTLS_method()) else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "SSL_CTX_new failed")
        }
        let profiles = Self.srtpProfiles.map(\.openSSLName).joined(separator: ":")
        guard SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(DTLS1_2_VERSION), nil) == 1,
            SSL_CTX_ctrl(context, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(DTLS1_2_VERSION), nil) == 1,
            SSL_CTX_set_cipher_list(context, Self.cipherList) == 1,
            SSL_CTX_use_certificate(context, certificate.handle) == 1,
            SSL_CTX_use_PrivateKey(context, privateKey.handle) == 1,
            SSL_CTX_check_private_key(context) == 1,
            SSL_CTX_set_tlsext_use_srtp(context, profiles) == 0  // 0 is success (sic)
        else {
            SSL_CTX_free(context)
            throw OpenSSLErrorQueue.error(.certificateGeneration, "configuring SSL_CTX failed")
        }
        _ = liveroom_SSL_CTX_set_read_ahead(context, 1)
        // Both sides must present a certificate; self-signed certificates are authenticated by
        // the fingerprint from signaling (RFC 5763 §5), which `verifyPeer` checks in place of
        // chain verification. Rejecting there makes OpenSSL send bad_certificate and fail.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        SSL_CTX_set_cert_verify_callback(context, { store, _ in DTLSContext.verifyPeer(store) }, nil)
        SSL_CTX_set_info_callback(context, { ssl, event, value in DTLSContext.observe(ssl, event: event, value: value) })
        handle = context
    }

    deinit {
        SSL_CTX_free(handle)
    }

    static func callbackContext(of ssl: OpaquePointer?) -> DTLSCallbackContext? {
        guard let ssl, let raw = SSL_get_ex_data(ssl, callbackContextIndex) else { return nil }
        return Unmanaged<DTLSCallbackContext>.fromOpaque(raw).takeUnretainedValue()
    }

    /// `SSL_CTX_set_cert_verify_callback`: accept exactly the certificate whose fingerprint
    /// signaling announced.
    private static func verifyPeer(_ store: OpaquePointer?) -> Int32 {
        guard let store,
            let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let context = callbackContext(of: OpaquePointer(ssl)),
            let leaf = X509_STORE_CTX_get0_cert(store)
        else { return 0 }
        if context.verify(peer: X509Certificate(retaining: leaf)) {
            X509_STORE_CTX_set_error(store, X509_V_OK)
            return 1
        }
        X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
        return 0
    }

    /// `SSL_CTX_set_info_callback`: remember alerts so errors can name them.
    private static func observe(_ ssl: OpaquePointer?, event: Int32, value: Int32) {
        guard event & SSL_CB_ALERT != 0, let context = callbackContext(of: ssl) else { return }
        let description = UInt8(truncatingIfNeeded: value)
        if event & SSL_CB_READ != 0 {
            context.receivedAlert = (description, (value >> 8) == SSL3_AL_FATAL)
        } else {
            context.sentAlert = description
        }
    }
}
