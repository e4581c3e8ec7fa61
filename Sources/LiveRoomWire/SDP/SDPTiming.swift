/// A `t=` line (RFC 8866 §5.9); WebRTC always uses `t=0 0`.
public struct SDPTiming: Hashable, Sendable {
    /// Start time (NTP seconds), 0 for unbounded.
    public var start: UInt64
    /// Stop time (NTP seconds), 0 for unbounded.
    public var stop: UInt64

    /// Creates a timing line.
    public init(start: UInt64 = 0, stop: UInt64 = 0) {
        self.start = start
        self.stop = stop
    }

    init(parsing value: Substring) throws(WireError) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, let start = UInt64(parts[0]), let stop = UInt64(parts[1]) else {
            throw .malformed("SDP t= line \"\(value)\" is not two numbers")
        }
        self.init(start: start, stop: stop)
    }

    var text: String { "\(start) \(stop)" }
}
