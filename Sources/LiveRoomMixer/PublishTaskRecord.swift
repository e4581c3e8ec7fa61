/// The registry's entry for one task.
public struct PublishTaskRecord: Sendable, Hashable {
    public var taskId: String
    /// The room the task mixes or relays from.
    public var roomId: String
    public var owner: PublishTaskOwner
    public var config: PublishTaskConfig
    /// The last `UpdatePublishCdnStream` `SequenceNumber` accepted, if any.
    public var sequenceNumber: Int?

    public init(taskId: String, roomId: String, owner: PublishTaskOwner, config: PublishTaskConfig, sequenceNumber: Int? = nil) {
        self.taskId = taskId
        self.roomId = roomId
        self.owner = owner
        self.config = config
        self.sequenceNumber = sequenceNumber
    }

    /// The destinations this task claims: mode with each normalized CDN URL, or mode with the
    /// robot user for a room target. Two tasks may not claim the same one.
    public var claims: Set<String> {
        Self.claims(of: config, roomId: roomId)
    }

    static func claims(of config: PublishTaskConfig, roomId: String) -> Set<String> {
        let mode = config.target.mode
        if mode.publishesToCdn {
            return Set(config.target.cdnUrlList.map { "\(mode.name) \($0.normalizedURL)" })
        }
        guard let identity = config.target.mixStreamIdentity?.resolved(in: roomId) else { return [] }
        return ["\(mode.name) \(identity.roomId)/\(identity.userId)"]
    }
}
