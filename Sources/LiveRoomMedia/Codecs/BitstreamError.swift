/// Bytes that are not a well-formed VP8 frame header, H.264 NAL unit or SPS.
public struct BitstreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the parser found wrong.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
