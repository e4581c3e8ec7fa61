/// Which side of the DTLS handshake this endpoint plays.
///
/// In SDP terms (RFC 5763 §5, RFC 8842): `a=setup:active` is the DTLS client,
/// `a=setup:passive` is the DTLS server. An ICE-lite server is normally passive.
public enum DTLSRole: Sendable, Hashable {
    /// Sends the ClientHello (`a=setup:active`).
    case client
    /// Waits for the ClientHello (`a=setup:passive`).
    case server
}
