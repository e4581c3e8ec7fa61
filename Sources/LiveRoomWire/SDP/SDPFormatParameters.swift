/// `a=fmtp:<format> <parameters>` (RFC 8866 §6.15), parameters kept verbatim.
public struct SDPFormatParameters: Hashable, Sendable {
    /// The format (an RTP payload type in WebRTC).
    public var format: String
    /// The parameter text, e.g. `level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f`.
    public var parameters: String

    /// Creates format parameters.
    public init(format: String, parameters: String) {
        self.format = format
        self.parameters = parameters
    }

    /// Creates format parameters for an RTP payload type.
    public init(payloadType: UInt8, parameters: String) {
        self.init(format: String(payloadType), parameters: parameters)
    }

    /// The format as a payload type, if numeric.
    public var payloadType: UInt8? { UInt8(format) }

    /// The `;`-separated `key=value` pairs in order; a key without `=` has a nil value.
    public var parameterList: [(key: String, value: String?)] {
        parameters.split(separator: ";").map { item in
            let trimmed = item.drop { $0 == " " }
            if let equals = trimmed.firstIndex(of: "=") {
                return (String(trimmed[..<equals]), String(trimmed[trimmed.index(after: equals)...]))
            }
            return (String(trimmed), nil)
        }
    }

    /// The value of parameter `key` (case-insensitive key match).
    public subscript(key: String) -> String? {
        let lowered = key.lowercased()
        return parameterList.first { $0.key.lowercased() == lowered }?.value
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard let format = parts.first else { throw .malformed("SDP fmtp has no format") }
        self.init(format: String(format), parameters: parts.count > 1 ? String(parts[1]) : "")
    }

    var text: String { parameters.isEmpty ? format : "\(format) \(parameters)" }
}
