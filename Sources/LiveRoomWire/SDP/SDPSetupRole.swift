/// The DTLS role negotiated by `a=setup` (RFC 4145, RFC 8842).
public enum SDPSetupRole: String, Hashable, Sendable, CaseIterable {
    case actpass
    case active
    case passive
    case holdconn
}
