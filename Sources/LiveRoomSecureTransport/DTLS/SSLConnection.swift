internal import COpenSSL

/// One OpenSSL `SSL` object and the two memory BIOs it owns: datagrams are written into
/// the read BIO, records OpenSSL produces are taken from the write BIO.
///
/// A thin wrapper: it reports what OpenSSL did and leaves the decisions to ``DTLSTransport``.
final class SSLConnection {
    /// The outcome of a step of the handshake or of reading records.
    enum Step {
        /// Nothing more to do until the next datagram or timeout.
        case wantsMore
        /// The handshake completed.
        case handshakeFinished
        /// The peer sent close_notify.
        case closedByPeer
        /// A fatal error: `SSL_get_error` result and OpenSSL's queued error.
        case failed(sslError: Int32, openSSLError: UInt, message: String)
    }

    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    /// Retained for the `SSL`'s lifetime: its ex_data points at it unretained.
    private let callbackContext: DTLSCallbackContext
    /// Receives (and discards) application data.
    private var scratch = [UInt8](repeating: 0, count: 2048)

    init(
        context: DTLSContext, role: DTLSRole, mtu: Int, srtpProfiles: [SRTPProtectionProfile],
        callbackContext: DTLSCallbackContext
    ) throws(DTLSError) {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.handle) else {
            throw OpenSSLErrorQueue.error(.contextSetup, "SSL_new failed")
        }
        guard let readBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OpenSSLErrorQueue.error(.contextSetup, "BIO_new failed")
        }
        guard let writeBIO = BIO_new(BIO_s_mem()) else {
            BIO_free(readBIO)
            SSL_free(ssl)
            throw OpenSSLErrorQueue.error(.contextSetup, "BIO_new failed")
        }
        _ = liveroom_BIO_set_mem_eof_return(readBIO, -1)  // empty means "retry", not EOF
        SSL_set_bio(ssl, readBIO, writeBIO)  // the SSL owns both BIOs from here on
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        self.callbackContext = callbackContext

        let profiles = srtpProfiles.map(\.openSSLName).joined(separator: ":")
        guard SSL_set_ex_data(ssl, DTLSContext.callbackContextIndex, Unmanaged.passUnretained(callbackContext).toOpaque()) == 1,
            liveroom_SSL_set_mtu(ssl, mtu) == mtu,
            !profiles.isEmpty, SSL_set_tlsext_use_srtp(ssl, profiles) == 0
        else {
            throw OpenSSLErrorQueue.error(.contextSetup, "configuring SSL failed")
        }
        DTLS_set_timer_cb(ssl) { ssl, current in
            DTLSContext.callbackContext(of: ssl)?.nextTimeoutMicroseconds(current: current) ?? 1_000_000
        }
        switch role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
    }

    deinit {
        SSL_free(ssl)
    }

    /// Hands one received datagram to OpenSSL.
    func feed(_ datagram: UnsafeRawBufferPointer) {
        guard let base = datagram.baseAddress, !datagram.isEmpty else { return }
        _ = BIO_write(readBIO, base, Int32(clamping: datagram.count))
    }

    /// Runs the handshake as far as the input allows.
    func doHandshake() -> Step {
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        return result == 1 ? .handshakeFinished : classify(result)
    }

    /// Processes buffered records after the handshake: alerts, retransmitted handshake
    /// flights (to which OpenSSL answers), and application data (discarded).
    func readRecords() -> Step {
        while true {
            OpenSSLErrorQueue.clear()
            let result = scratch.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if result <= 0 { return classify(result) }
        }
    }

    /// Sends close_notify (queued in the write BIO).
    func shutdown() {
        OpenSSLErrorQueue.clear()
        _ = SSL_shutdown(ssl)
        OpenSSLErrorQueue.clear()
    }

    /// Retransmits the last flight if OpenSSL's timer expired.
    /// - Returns: `nil` normally, a failure if OpenSSL gave up.
    func handleTimeout() -> Step? {
        OpenSSLErrorQueue.clear()
        guard liveroom_DTLSv1_handle_timeout(ssl) < 0 else { return nil }
        let (code, message) = OpenSSLErrorQueue.drain()
        return .failed(sslError: SSL_ERROR_SSL, openSSLError: code, message: message.isEmpty ? "DTLSv1_handle_timeout failed" : message)
    }

    /// Time left on OpenSSL's retransmission timer, if one is running (`DTLSv1_get_timeout`).
    var timeUntilRetransmission: Duration? {
        var remaining = timeval()
        guard liveroom_DTLSv1_get_timeout(ssl, &remaining) == 1 else { return nil }
        return .seconds(Int64(remaining.tv_sec)) + .microseconds(Int64(remaining.tv_usec))
    }

    /// Everything OpenSSL wrote since the last call: concatenated DTLS records.
    func takeWrittenRecords() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(writeBIO))
        guard pending > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
            count = Int(max(0, BIO_read(writeBIO, buffer.baseAddress, Int32(pending))))
        }
    }

    /// The certificate the peer presented.
    var peerCertificate: X509Certificate? {
        SSL_get1_peer_certificate(ssl).map { X509Certificate(owning: $0) }
    }

    /// The negotiated `use_srtp` profile's IANA identifier.
    var selectedSRTPProfileID: UInt16? {
        SSL_get_selected_srtp_profile(ssl).map { UInt16(truncatingIfNeeded: $0.pointee.id) }
    }

    /// The AEAD overhead of the negotiated cipher, the shortest valid encrypted record
    /// fragment: 16 for ChaCha20-Poly1305, 24 (8-byte explicit nonce + tag) for AES-GCM
    /// and whenever the cipher is not known yet.
    var minimumProtectedFragmentLength: Int {
        guard let cipher = SSL_get_current_cipher(ssl) else { return 24 }
        return SSL_CIPHER_get_cipher_nid(cipher) == NID_chacha20_poly1305 ? 16 : 24
    }

    /// The negotiated protocol version (`DTLS1_2_VERSION` = 0xFEFD).
    var protocolVersion: Int32 { SSL_version(ssl) }

    /// RFC 5705 keying material export, without context.
    func exportKeyingMaterial(label: String, length: Int) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: length)
        OpenSSLErrorQueue.clear()
        let ok = SSL_export_keying_material(ssl, &output, length, label, label.utf8.count, nil, 0, 0)
        return ok == 1 ? output : nil
    }

    private func classify(_ result: Int32) -> Step {
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantsMore
        case SSL_ERROR_ZERO_RETURN:
            return .closedByPeer
        default:
            let (code, message) = OpenSSLErrorQueue.drain()
            return .failed(sslError: error, openSSLError: code, message: message.isEmpty ? "SSL error \(error)" : message)
        }
    }
}
