/// A `b=` line (RFC 8866 §5.8), e.g. `AS:2000` or `TIAS:2000000`.
public struct SDPBandwidth: Hashable, Sendable {
    /// The modifier (`AS`, `CT`, `TIAS`, …).
    public var type: String
    /// The value (kbit/s for AS and CT, bit/s for TIAS).
    public var value: UInt64

    /// Creates a bandwidth line.
    public init(type: String, value: UInt64) {
        self.type = type
        self.value = value
    }

    init(parsing text: Substring) throws(WireError) {
        guard let colon = text.firstIndex(of: ":"), let value = UInt64(text[text.index(after: colon)...]),
              colon != text.startIndex else {
            throw .malformed("SDP b= line \"\(text)\" is not <type>:<number>")
        }
        self.init(type: String(text[..<colon]), value: value)
    }

    var text: String { "\(type):\(value)" }
}
