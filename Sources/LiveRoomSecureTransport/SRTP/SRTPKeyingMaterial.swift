/// SRTP master keys and salts exported from a completed DTLS handshake (RFC 5764 §4.2).
///
/// The exporter output (label `EXTRACTOR-dtls_srtp`, no context) is
/// `client_write_key | server_write_key | client_write_salt | server_write_salt`.
/// The client protects what it sends with the client write key and salt, the server with
/// the server's; ``role`` says which side we are, so ``localKey`` protects what we send
/// and ``remoteKey`` unprotects what we receive.
public struct SRTPKeyingMaterial: Sendable, Hashable, CustomStringConvertible {
    /// The DTLS exporter label for SRTP keys.
    public static let exporterLabel = "EXTRACTOR-dtls_srtp"

    /// The negotiated protection profile.
    public let profile: SRTPProtectionProfile
    /// The side of the handshake we played.
    public let role: DTLSRole
    /// The DTLS client's SRTP master key.
    public let clientWriteKey: [UInt8]
    /// The DTLS server's SRTP master key.
    public let serverWriteKey: [UInt8]
    /// The DTLS client's SRTP master salt.
    public let clientWriteSalt: [UInt8]
    /// The DTLS server's SRTP master salt.
    public let serverWriteSalt: [UInt8]

    /// How many bytes to export for `profile`: two keys and two salts.
    public static func exporterLength(for profile: SRTPProtectionProfile) -> Int {
        2 * (profile.keyLength + profile.saltLength)
    }

    /// Splits exporter output; `nil` unless it is exactly ``exporterLength(for:)`` bytes.
    public init?(profile: SRTPProtectionProfile, role: DTLSRole, exportedKeyingMaterial bytes: [UInt8]) {
        let keyLength = profile.keyLength
        let saltLength = profile.saltLength
        guard bytes.count == Self.exporterLength(for: profile) else { return nil }
        self.profile = profile
        self.role = role
        clientWriteKey = Array(bytes[0..<keyLength])
        serverWriteKey = Array(bytes[keyLength..<2 * keyLength])
        clientWriteSalt = Array(bytes[2 * keyLength..<2 * keyLength + saltLength])
        serverWriteSalt = Array(bytes[2 * keyLength + saltLength..<2 * keyLength + 2 * saltLength])
    }

    /// Our master key: protects what we send.
    public var localKey: [UInt8] { role == .client ? clientWriteKey : serverWriteKey }
    /// Our master salt.
    public var localSalt: [UInt8] { role == .client ? clientWriteSalt : serverWriteSalt }
    /// The peer's master key: unprotects what we receive.
    public var remoteKey: [UInt8] { role == .client ? serverWriteKey : clientWriteKey }
    /// The peer's master salt.
    public var remoteSalt: [UInt8] { role == .client ? serverWriteSalt : clientWriteSalt }

    /// Keys stay out of logs.
    public var description: String { "SRTPKeyingMaterial(\(profile), role: \(role), keys redacted)" }
}
