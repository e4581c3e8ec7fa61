/// The DTLS 1.2 side of one WebRTC peer connection: runs the DTLS-SRTP handshake
/// (RFC 5763/5764) over datagrams handed in and out, with no sockets.
///
/// Feed every datagram that demultiplexes as DTLS to ``receive(datagram:now:)``, call
/// ``handleTimeout(now:)`` when ``nextTimeout`` passes, and execute the returned
/// ``Output``s in order. After ``Output/connected(_:)``, build ``SRTPSession``s from the
/// keying material.
///
/// ## Threading
/// A `DTLSTransport` is not `Sendable`: confine it to one thread or event loop, like the
/// channel handler that owns it. It wraps one OpenSSL `SSL` object, which is not thread safe.
///
/// ## Time
/// `now` positions ``nextTimeout`` on the caller's clock. OpenSSL's retransmission timer
/// itself runs on the wall clock, so ``handleTimeout(now:)`` retransmits only once that
/// much real time has also passed; with a live `ContinuousClock` the two agree.
///
/// ## Invalid input
/// Datagrams are never trusted:
/// - before ``start(now:)``, a client ignores datagrams; a server treats the first one as
///   the start of the handshake (it is passive);
/// - datagrams shorter than a record header or whose first byte is outside 20...63
///   (RFC 7983) are ignored, and so are datagrams that are not a sequence of well-framed
///   DTLS records (see `DTLSDatagramFilter`: unknown content type or version, lengths that
///   do not add up, malformed plaintext ChangeCipherSpec/alert/handshake framing, encrypted
///   records shorter than the cipher's overhead), because OpenSSL treats some of those as fatal;
/// - records OpenSSL cannot authenticate are silently dropped by OpenSSL, as
///   RFC 6347 §4.1.2.7 asks; so are plaintext records once the handshake has finished;
/// - a well-framed plaintext record with invalid contents during the handshake (a bad
///   handshake message, or a plaintext fatal alert, which DTLS 1.2 cannot authenticate)
///   makes OpenSSL abort: the transport sends any alert and reports ``Output/failed(_:)``;
/// - after ``Output/failed(_:)`` or ``Output/closed``, or after ``close()``, all input is ignored.
public final class DTLSTransport {
    /// Where the transport is in its life.
    public enum State: Sendable, Hashable {
        case idle, handshaking, connected, closed, failed
    }

    /// The side we play.
    public let role: DTLSRole
    /// The fingerprint the peer's certificate must have, from its SDP.
    public let expectedRemoteFingerprint: DTLSFingerprint
    /// The tunables in effect.
    public let configuration: Configuration
    /// Where the transport is in its life.
    public private(set) var state: State = .idle
    /// When to call ``handleTimeout(now:)`` next, or `nil` if no retransmission timer runs.
    /// Updated by every call that takes `now`.
    public private(set) var nextTimeout: ContinuousClock.Instant?
    /// The keying material, once connected.
    public private(set) var keyingMaterial: SRTPKeyingMaterial?

    /// The DER encoding of the certificate the peer presented, once it has sent one.
    public var remoteCertificateDER: [UInt8]? {
        connection.peerCertificate?.derEncoded
    }

    private let connection: SSLConnection
    private let callbackContext: DTLSCallbackContext
    private let packer: DTLSDatagramPacker

    /// Creates a transport for one peer connection.
    ///
    /// - Parameters:
    ///   - certificate: our certificate, shared by all connections.
    ///   - role: ``DTLSRole/client`` for `a=setup:active`, ``DTLSRole/server`` for passive.
    ///   - remoteFingerprint: the peer's `a=fingerprint:` from SDP.
    ///   - configuration: MTU, retransmission timer, SRTP profiles.
    /// - Throws: ``DTLSError`` with code ``DTLSError/Code/contextSetup``.
    public init(
        certificate: DTLSCertificate, role: DTLSRole, remoteFingerprint: DTLSFingerprint,
        configuration: Configuration = Configuration()
    ) throws(DTLSError) {
        self.role = role
        self.expectedRemoteFingerprint = remoteFingerprint
        self.configuration = configuration
        callbackContext = DTLSCallbackContext(
            expectedFingerprint: remoteFingerprint, initialTimeout: configuration.initialRetransmissionTimeout)
        connection = try SSLConnection(
            context: certificate.context, role: role, mtu: configuration.mtu,
            srtpProfiles: configuration.srtpProfiles, callbackContext: callbackContext)
        packer = DTLSDatagramPacker(mtu: configuration.mtu)
    }

    /// Starts the handshake. A client returns its ClientHello; a server returns nothing
    /// and waits. Calls after the first do nothing.
    public func start(now: ContinuousClock.Instant) -> [Output] {
        guard state == .idle else { return [] }
        state = .handshaking
        var outputs: [Output] = []
        advanceHandshake(into: &outputs)
        updateTimer(now: now)
        return outputs
    }

    /// Processes one received datagram. See "Invalid input" above for what is ignored.
    public func receive(datagram: UnsafeRawBufferPointer, now: ContinuousClock.Instant) -> [Output] {
        switch state {
        case .idle:
            guard role == .server else { return [] }
        case .handshaking, .connected:
            break
        case .closed, .failed:
            return []
        }
        let filter = DTLSDatagramFilter(minimumProtectedFragmentLength: connection.minimumProtectedFragmentLength)
        guard filter.accepts(datagram) else { return [] }
        if state == .idle { state = .handshaking }
        connection.feed(datagram)
        var outputs: [Output] = []
        if state == .handshaking { advanceHandshake(into: &outputs) }
        // Also right after finishing: the same datagram may carry more records.
        if state == .connected { readRecords(into: &outputs) }
        updateTimer(now: now)
        return outputs
    }

    /// Processes one received datagram. See "Invalid input" above for what is ignored.
    public func receive(datagram: [UInt8], now: ContinuousClock.Instant) -> [Output] {
        datagram.withUnsafeBytes { receive(datagram: $0, now: now) }
    }

    /// Retransmits the last flight if its timer has expired; fails the transport when
    /// OpenSSL gives up. Harmless to call early or when no timer runs.
    public func handleTimeout(now: ContinuousClock.Instant) -> [Output] {
        guard state == .handshaking || state == .connected else { return [] }
        var outputs: [Output] = []
        let failure = connection.handleTimeout()
        appendDatagrams(to: &outputs)
        if case .failed(let sslError, let openSSLError, let message) = failure {
            fail(
                code: .timedOut, sslError: sslError, openSSLError: openSSLError, message: message, into: &outputs)
        }
        updateTimer(now: now)
        return outputs
    }

    /// Sends close_notify and stops the transport. Returns the datagrams to send: nothing
    /// if the transport never started, already failed or closed, and nothing during the
    /// handshake (OpenSSL cannot send close_notify before it completes; the peer times out).
    /// Emits no ``Output/closed``: that reports the peer closing.
    public func close() -> [Output] {
        defer { nextTimeout = nil }
        switch state {
        case .idle:
            state = .closed
            return []
        case .handshaking, .connected:
            state = .closed
            connection.shutdown()
            var outputs: [Output] = []
            appendDatagrams(to: &outputs)
            return outputs
        case .closed, .failed:
            return []
        }
    }

    // MARK: - Implementation

    private func advanceHandshake(into outputs: inout [Output]) {
        let step = connection.doHandshake()
        appendDatagrams(to: &outputs)
        switch step {
        case .wantsMore:
            break
        case .handshakeFinished:
            completeHandshake(into: &outputs)
        case .closedByPeer:
            peerClosed(into: &outputs)
        case .failed(let sslError, let openSSLError, let message):
            fail(code: .handshakeFailed, sslError: sslError, openSSLError: openSSLError, message: message, into: &outputs)
        }
    }

    private func readRecords(into outputs: inout [Output]) {
        let step = connection.readRecords()
        appendDatagrams(to: &outputs)  // e.g. our final flight again, for a peer that lost it
        switch step {
        case .wantsMore, .handshakeFinished:
            break
        case .closedByPeer:
            peerClosed(into: &outputs)
        case .failed(let sslError, let openSSLError, let message):
            fail(code: .protocolError, sslError: sslError, openSSLError: openSSLError, message: message, into: &outputs)
        }
    }

    private func completeHandshake(into outputs: inout [Output]) {
        // The verify callback already rejected a wrong certificate during the handshake;
        // checking again here guards against a handshake that skipped it.
        guard callbackContext.peerVerified,
            let peer = connection.peerCertificate,
            peer.fingerprint(expectedRemoteFingerprint.algorithm) == expectedRemoteFingerprint
        else {
            connection.shutdown()
            appendDatagrams(to: &outputs)
            fail(code: .fingerprintMismatch, message: "peer certificate was not verified against the expected fingerprint", into: &outputs)
            return
        }
        guard let profileID = connection.selectedSRTPProfileID, let profile = SRTPProtectionProfile(id: profileID) else {
            connection.shutdown()
            appendDatagrams(to: &outputs)
            fail(code: .noSRTPProfile, message: "the peer negotiated no supported use_srtp profile", into: &outputs)
            return
        }
        guard
            let exported = connection.exportKeyingMaterial(
                label: SRTPKeyingMaterial.exporterLabel, length: SRTPKeyingMaterial.exporterLength(for: profile)),
            let material = SRTPKeyingMaterial(profile: profile, role: role, exportedKeyingMaterial: exported)
        else {
            let (code, message) = OpenSSLErrorQueue.drain()
            connection.shutdown()
            appendDatagrams(to: &outputs)
            fail(code: .keyExport, openSSLError: code, message: "SSL_export_keying_material failed: \(message)", into: &outputs)
            return
        }
        state = .connected
        keyingMaterial = material
        outputs.append(.connected(material))
    }

    private func peerClosed(into outputs: inout [Output]) {
        connection.shutdown()  // answer with our own close_notify
        appendDatagrams(to: &outputs)
        state = .closed
        outputs.append(.closed)
    }

    private func fail(
        code: DTLSError.Code, sslError: Int32 = 0, openSSLError: UInt = 0, message: String,
        into outputs: inout [Output]
    ) {
        var code = code
        var message = message
        if let actual = callbackContext.mismatchedFingerprint {
            code = .fingerprintMismatch
            message = "peer certificate fingerprint \(actual) does not match expected \(expectedRemoteFingerprint) (\(message))"
        } else if let alert = callbackContext.receivedAlert, alert.fatal {
            code = .alertReceived
        }
        state = .failed
        outputs.append(
            .failed(
                DTLSError(
                    code: code, sslErrorCode: sslError, openSSLErrorCode: openSSLError,
                    receivedAlert: callbackContext.receivedAlert?.description, sentAlert: callbackContext.sentAlert,
                    message: message)))
    }

    private func appendDatagrams(to outputs: inout [Output]) {
        let records = connection.takeWrittenRecords()
        guard !records.isEmpty else { return }
        for datagram in packer.datagrams(from: records) {
            outputs.append(.send(datagram))
        }
    }

    private func updateTimer(now: ContinuousClock.Instant) {
        guard state == .handshaking || state == .connected, let remaining = connection.timeUntilRetransmission else {
            nextTimeout = nil
            return
        }
        nextTimeout = now + remaining
    }
}
