/// The `o=` line (RFC 8866 §5.2).
public struct SDPOrigin: Hashable, Sendable {
    /// The user name, `-` when there is none.
    public var username: String
    /// The session id, numeric text (kept as text: some stacks exceed 64 bits).
    public var sessionID: String
    /// The session version, numeric text; increment on every new offer.
    public var sessionVersion: String
    /// Network type, `IN`.
    public var networkType: String
    /// Address type, `IP4` or `IP6`.
    public var addressType: String
    /// The unicast address or host name.
    public var address: String

    /// Creates an origin.
    public init(username: String = "-", sessionID: String, sessionVersion: String, networkType: String = "IN",
                addressType: String = "IP4", address: String = "127.0.0.1") {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 6 else { throw .malformed("SDP o= needs 6 fields, got \(parts.count)") }
        guard parts[1].allSatisfy(\.isWholeNumber), parts[2].allSatisfy(\.isWholeNumber) else {
            throw .malformed("SDP o= session id and version must be numeric")
        }
        self.init(username: String(parts[0]), sessionID: String(parts[1]), sessionVersion: String(parts[2]),
                  networkType: String(parts[3]), addressType: String(parts[4]), address: String(parts[5]))
    }

    var text: String { "\(username) \(sessionID) \(sessionVersion) \(networkType) \(addressType) \(address)" }
}
