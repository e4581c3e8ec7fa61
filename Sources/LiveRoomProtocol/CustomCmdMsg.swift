/// A custom message as `sendCustomCmdMsg` sends it.
public struct CustomCmdMsg: Sendable, Hashable {
    public var cmdID: Int
    public var data: String
    public var reliable: Bool
    public var ordered: Bool

    public init(cmdID: Int, data: String, reliable: Bool = true, ordered: Bool = true) {
        self.cmdID = cmdID
        self.data = data
        self.reliable = reliable
        self.ordered = ordered
    }
}
