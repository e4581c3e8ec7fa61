/// A frame, packet or argument that does not fit what a LiveRoomMedia type expects
/// (wrong plane size, wrong sample count, stream added after recording started).
public struct MediaFormatError: Error, Sendable, CustomStringConvertible {
    /// What was wrong, in words.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
