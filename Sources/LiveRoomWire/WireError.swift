/// The error every parser in `LiveRoomWire` throws for input it cannot accept.
///
/// Parsers are total: any byte string either parses or throws a `WireError`;
/// none of them traps on hostile input.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, coarsely, so callers can decide whether to drop or report.
    public enum Kind: String, Hashable, Sendable {
        /// The input ended before a complete structure could be read.
        case truncated
        /// A field holds a value the format forbids.
        case malformed
        /// The input is well formed but uses a feature this module does not implement.
        case unsupported
        /// A caller-supplied argument (not wire input) is out of range.
        case invalidArgument
    }

    /// The category of the failure.
    public var kind: Kind
    /// A readable explanation naming the protocol and the offending field.
    public var message: String

    /// Creates an error of `kind` with a readable `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "WireError.\(kind.rawValue): \(message)" }

    static func truncated(_ message: String) -> WireError { WireError(.truncated, message) }
    static func malformed(_ message: String) -> WireError { WireError(.malformed, message) }
    static func unsupported(_ message: String) -> WireError { WireError(.unsupported, message) }
    static func invalidArgument(_ message: String) -> WireError { WireError(.invalidArgument, message) }
}
