/// An error to report to a client: a code from ``ErrorCode`` and a readable message.
public struct LiveRoomError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var message: String
    /// The full path of the request field the error is about (`SdkAppId`,
    /// `mixingConfig.videoLayoutList[2].rect`), when ``JSONFields`` found it; `nil` otherwise.
    public var field: String?

    public init(_ code: Int, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(code): \(message)" }
}
