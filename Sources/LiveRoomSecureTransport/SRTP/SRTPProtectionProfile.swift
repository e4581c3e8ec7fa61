/// The SRTP protection profiles LiveRoom negotiates in DTLS `use_srtp` (RFC 5764 §4.1.2),
/// listed in order of preference.
public enum SRTPProtectionProfile: Sendable, Hashable, CaseIterable {
    /// `SRTP_AEAD_AES_128_GCM` (0x0007, RFC 7714): AES-128-GCM, 16-byte tag. Preferred.
    case aeadAES128GCM
    /// `SRTP_AES128_CM_SHA1_80` (0x0001, RFC 5764): AES-128 counter mode with a
    /// 10-byte HMAC-SHA1 tag. Every WebRTC stack supports it.
    case aes128CMHMACSHA1_80

    /// The profile's IANA identifier.
    public var id: UInt16 {
        switch self {
        case .aeadAES128GCM: 0x0007
        case .aes128CMHMACSHA1_80: 0x0001
        }
    }

    /// The profile with IANA identifier `id`, if LiveRoom supports it.
    public init?(id: UInt16) {
        guard let profile = Self.allCases.first(where: { $0.id == id }) else { return nil }
        self = profile
    }

    /// The name OpenSSL uses in `SSL_CTX_set_tlsext_use_srtp`.
    public var openSSLName: String {
        switch self {
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aes128CMHMACSHA1_80: "SRTP_AES128_CM_SHA1_80"
        }
    }

    /// Master key length in bytes.
    public var keyLength: Int { 16 }

    /// Master salt length in bytes (RFC 5764 §4.1.2; RFC 7714 §12).
    public var saltLength: Int {
        switch self {
        case .aeadAES128GCM: 12
        case .aes128CMHMACSHA1_80: 14
        }
    }

    /// Bytes SRTP appends to an RTP packet (the authentication tag).
    public var rtpTrailerLength: Int {
        switch self {
        case .aeadAES128GCM: 16
        case .aes128CMHMACSHA1_80: 10
        }
    }

    /// Bytes SRTCP appends to an RTCP packet (E flag + SRTCP index, then the tag).
    public var rtcpTrailerLength: Int { 4 + rtpTrailerLength }
}
