/// A `c=` line (RFC 8866 §5.7).
public struct SDPConnection: Hashable, Sendable {
    /// Network type, `IN`.
    public var networkType: String
    /// Address type, `IP4` or `IP6`.
    public var addressType: String
    /// The connection address (WebRTC uses `0.0.0.0` and puts real ones in candidates).
    public var address: String

    /// Creates a connection line.
    public init(networkType: String = "IN", addressType: String = "IP4", address: String = "0.0.0.0") {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3 else { throw .malformed("SDP c= needs 3 fields, got \(parts.count)") }
        self.init(networkType: String(parts[0]), addressType: String(parts[1]), address: String(parts[2]))
    }

    var text: String { "\(networkType) \(addressType) \(address)" }
}
