internal import CSRTP

/// One direction of SRTP/SRTCP for a peer connection: a libsrtp2 session (`srtp_t`), and for
/// outgoing RTP under AEAD_AES_128_GCM an OpenSSL one (``GCMRTPSealer``) that libsrtp's
/// output is checked against.
///
/// An ``Direction/outbound`` session protects what we send with our own master key; an
/// ``Direction/inbound`` session unprotects what the peer sends with the peer's key. Each
/// accepts any SSRC (`ssrc_any_outbound` / `ssrc_any_inbound`); libsrtp keeps per-SSRC
/// state internally. Outbound sessions allow re-protecting a sequence number
/// (`allow_repeat_tx`, for NACK retransmissions); inbound sessions reject replays within
/// a window of ``replayWindowSize`` packets.
///
/// Not thread safe: confine each session to one thread or event loop.
///
/// ## Buffers
/// All methods work in place. Protecting appends a trailer, so the buffer must have room
/// for ``maximumTrailerLength`` bytes after the packet (the exact amount appended is
/// ``SRTPProtectionProfile/rtpTrailerLength`` or ``SRTPProtectionProfile/rtcpTrailerLength``).
/// - The `inout [UInt8]` variants grow and shrink the array; they allocate only if its
///   capacity is below `count + maximumTrailerLength`, so reuse one array with reserved
///   capacity per packet to stay allocation-free.
/// - The raw-buffer variants take the whole buffer and the packet's length in it, and
///   return the new length.
public final class SRTPSession {
    /// Which way packets go through this session.
    public enum Direction: Sendable, Hashable {
        /// Protect what we send, with ``SRTPKeyingMaterial/localKey``.
        case outbound
        /// Unprotect what we receive, with ``SRTPKeyingMaterial/remoteKey``.
        case inbound
    }

    /// Spare bytes a buffer needs after the packet for `protect…` (libsrtp's
    /// `SRTP_MAX_TRAILER_LEN`: largest tag plus largest MKI).
    public static let maximumTrailerLength = Int(liveroom_srtp_max_trailer_len())

    /// The protection profile.
    public let profile: SRTPProtectionProfile
    /// Which way this session works.
    public let direction: Direction
    /// The SRTP replay window, in packets (SRTCP uses libsrtp's fixed 128-packet window).
    public let replayWindowSize: Int

    private let session: OpaquePointer
    /// Outgoing RTP under AEAD_AES_128_GCM goes through OpenSSL with a kept context instead of
    /// libsrtp (``GCMRTPSealer``); nil: libsrtp protects everything.
    private let rtpSealer: GCMRTPSealer?

    /// Whether outgoing RTP goes through OpenSSL (``GCMRTPSealer``) rather than libsrtp.
    public var sealsRTPWithOpenSSL: Bool { rtpSealer != nil }

    /// Who protects an outbound session's RTP.
    public enum Engine: Sendable {
        /// OpenSSL (``GCMRTPSealer``) for AEAD_AES_128_GCM RTP, libsrtp for the rest.
        case automatic
        /// libsrtp for everything (to compare against).
        case libsrtp
    }

    /// Creates the session for one direction of a DTLS-SRTP association.
    ///
    /// - Parameters:
    ///   - keyingMaterial: from ``DTLSTransport/Output/connected(_:)``.
    ///   - direction: outbound uses our key, inbound the peer's.
    ///   - replayWindowSize: 64 to 32767 packets.
    public convenience init(
        keyingMaterial: SRTPKeyingMaterial, direction: Direction, replayWindowSize: Int = 1024, engine: Engine = .automatic
    ) throws(SRTPError) {
        let outbound = direction == .outbound
        try self.init(
            profile: keyingMaterial.profile,
            masterKey: outbound ? keyingMaterial.localKey : keyingMaterial.remoteKey,
            masterSalt: outbound ? keyingMaterial.localSalt : keyingMaterial.remoteSalt,
            direction: direction, replayWindowSize: replayWindowSize, engine: engine)
    }

    /// Creates a session from an explicit master key and salt.
    public init(
        profile: SRTPProtectionProfile, masterKey: [UInt8], masterSalt: [UInt8],
        direction: Direction, replayWindowSize: Int = 1024, engine: Engine = .automatic
    ) throws(SRTPError) {
        try SRTPLibrary.ensureInitialized()
        guard masterKey.count == profile.keyLength, masterSalt.count == profile.saltLength else {
            throw SRTPError(code: .badParam, operation: "srtp_create", detail: "wrong master key or salt length")
        }
        guard (64..<0x8000).contains(replayWindowSize) else {
            throw SRTPError(code: .badParam, operation: "srtp_create", detail: "replay window must be 64...32767")
        }
        var policy = srtp_policy_t()
        switch profile {
        case .aes128CMHMACSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)  // AES_CM_128_HMAC_SHA1_80
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = direction == .outbound ? ssrc_any_outbound : ssrc_any_inbound
        policy.window_size = UInt(replayWindowSize)
        policy.allow_repeat_tx = direction == .outbound ? 1 : 0

        var keyAndSalt = masterKey + masterSalt  // libsrtp's layout: key then salt
        defer { for index in keyAndSalt.indices { keyAndSalt[index] = 0 } }
        var created: OpaquePointer? = nil
        let status = keyAndSalt.withUnsafeMutableBufferPointer { key in
            policy.key = key.baseAddress
            return srtp_create(&created, &policy)  // derives session keys; keeps no pointer to `key`
        }
        guard status == srtp_err_status_ok, let created else {
            throw SRTPError(code: SRTPError.Code(rawValue: status.rawValue), operation: "srtp_create")
        }
        self.profile = profile
        self.direction = direction
        self.replayWindowSize = replayWindowSize
        session = created
        rtpSealer =
            engine == .automatic && direction == .outbound && profile == .aeadAES128GCM
            ? GCMRTPSealer(masterKey: masterKey, masterSalt: masterSalt) : nil
    }

    deinit {
        srtp_dealloc(session)
    }

    // MARK: - Arrays

    /// Encrypts and authenticates the RTP packet in `packet`, appending the tag.
    public func protectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        try transform(&packet, .protectRTP)
    }

    /// Verifies and decrypts the SRTP packet in `packet`, removing the tag.
    /// On failure `packet` is unchanged in length (its contents may not be).
    public func unprotectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        try transform(&packet, .unprotectRTP)
    }

    /// Encrypts and authenticates the RTCP (compound) packet, appending index and tag.
    public func protectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        try transform(&packet, .protectRTCP)
    }

    /// Verifies and decrypts the SRTCP packet, removing index and tag.
    public func unprotectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        try transform(&packet, .unprotectRTCP)
    }

    // MARK: - Raw buffers

    /// Protects the RTP packet occupying the first `length` bytes of `buffer`.
    /// - Returns: the SRTP packet's length; `buffer.count` must be at least
    ///   `length + maximumTrailerLength`.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(buffer, length: length, .protectRTP)
    }

    /// Unprotects the SRTP packet occupying the first `length` bytes of `buffer`.
    /// - Returns: the RTP packet's length.
    public func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(buffer, length: length, .unprotectRTP)
    }

    /// Protects the RTCP packet occupying the first `length` bytes of `buffer`.
    /// - Returns: the SRTCP packet's length; `buffer.count` must be at least
    ///   `length + maximumTrailerLength`.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(buffer, length: length, .protectRTCP)
    }

    /// Unprotects the SRTCP packet occupying the first `length` bytes of `buffer`.
    /// - Returns: the RTCP packet's length.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try transform(buffer, length: length, .unprotectRTCP)
    }

    // MARK: - Implementation

    private enum Operation {
        case protectRTP, unprotectRTP, protectRTCP, unprotectRTCP

        var name: String {
            switch self {
            case .protectRTP: "srtp_protect"
            case .unprotectRTP: "srtp_unprotect"
            case .protectRTCP: "srtp_protect_rtcp"
            case .unprotectRTCP: "srtp_unprotect_rtcp"
            }
        }

        var appendsTrailer: Bool { self == .protectRTP || self == .protectRTCP }

        /// RTP fixed header (RFC 3550 §5.1) or RTCP header plus sender SSRC.
        var minimumLength: Int { self == .protectRTP || self == .unprotectRTP ? 12 : 8 }
    }

    private func transform(_ packet: inout [UInt8], _ operation: Operation) throws(SRTPError) {
        let length = packet.count
        let spare = operation.appendsTrailer ? Self.maximumTrailerLength : 0
        if spare > 0 { packet.append(contentsOf: repeatElement(0, count: spare)) }
        let result = packet.withUnsafeMutableBytes { buffer in
            Result { () throws(SRTPError) -> Int in try transform(buffer, length: length, operation) }
        }
        switch result {
        case .success(let newLength):
            packet.removeLast(packet.count - newLength)
        case .failure(let error):
            packet.removeLast(spare)
            throw error
        }
    }

    private func transform(
        _ buffer: UnsafeMutableRawBufferPointer, length: Int, _ operation: Operation
    ) throws(SRTPError) -> Int {
        let spare = operation.appendsTrailer ? Self.maximumTrailerLength : 0
        guard length >= operation.minimumLength, length <= buffer.count - spare,
            length <= Int(Int32.max) - spare, let base = buffer.baseAddress
        else {
            throw SRTPError(
                code: .badParam, operation: operation.name,
                detail: "packet length \(length) in a \(buffer.count)-byte buffer")
        }
        if operation == .protectRTP, let rtpSealer {
            guard let sealed = rtpSealer.seal(buffer, length: length) else {
                throw SRTPError(code: .badParam, operation: "AES-GCM seal", detail: "malformed RTP header or OpenSSL failure")
            }
            return sealed
        }
        var newLength = Int32(length)
        let status: srtp_err_status_t
        switch operation {
        case .protectRTP: status = srtp_protect(session, base, &newLength)
        case .unprotectRTP: status = srtp_unprotect(session, base, &newLength)
        case .protectRTCP: status = srtp_protect_rtcp(session, base, &newLength)
        case .unprotectRTCP: status = srtp_unprotect_rtcp(session, base, &newLength)
        }
        guard status == srtp_err_status_ok else {
            throw SRTPError(code: SRTPError.Code(rawValue: status.rawValue), operation: operation.name)
        }
        return Int(newLength)
    }
}
