/// Media direction attributes (RFC 8866 §6.7).
public enum SDPDirection: String, Hashable, Sendable, CaseIterable {
    case sendrecv
    case sendonly
    case recvonly
    case inactive

    /// The direction seen from the other side (sendonly ↔ recvonly).
    public var reversed: SDPDirection {
        switch self {
        case .sendonly: return .recvonly
        case .recvonly: return .sendonly
        case .sendrecv, .inactive: return self
        }
    }
}
