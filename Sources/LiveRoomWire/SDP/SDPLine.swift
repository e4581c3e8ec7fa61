/// An SDP line kept verbatim because this module does not interpret it
/// (`u=`, `e=`, `p=`, `r=`, `z=`, `k=`, and unknown types).
public struct SDPLine: Hashable, Sendable {
    /// The one-letter type.
    public var type: Character
    /// Everything after `=`.
    public var value: String

    /// Creates a line.
    public init(type: Character, value: String) {
        self.type = type
        self.value = value
    }

    var text: String { "\(type)=\(value)" }
}
