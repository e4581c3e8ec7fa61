/// Everything the server knows about one publish media stream task, in one place: who
/// started it, its connections and config, the media port tap that feeds it, its robot
/// user, and the anchors its runner was last given.
public struct PublishTaskRecord: Sendable {
    /// How far the task has come.
    public enum Phase: Sendable, Hashable {
        /// The runner is being started.
        case startingRunner
        /// The runner is up; the robot user of a mixStreamToRoom task is entering the room.
        case enteringRobot
        /// Inputs are fed, connections open: the task runs.
        case running
    }

    public let taskId: String
    /// The room the task mixes or relays from.
    public let roomId: String
    public let owner: PublishTaskOwner
    /// The session that started a client task: it hears the task's callbacks.
    public let session: PublishTasksStateMachine.Session?
    /// The last `UpdatePublishCdnStream` `SequenceNumber` accepted, if any.
    public internal(set) var sequenceNumber: Int?
    /// The task's connections, retries and idle time, with its current config.
    public internal(set) var machine: PublishTaskStateMachine
    /// The media port tap that feeds the runner.
    public let tap: PublishTasksStateMachine.TapID
    /// The user a mixStreamToRoom task publishes as, and its session once it is in the room.
    public let robot: MixUser?
    public internal(set) var robotSession: PublishTasksStateMachine.Session?
    public internal(set) var phase: Phase = .startingRunner
    /// The anchors the runner was last given (nil before the task runs).
    public internal(set) var anchors: [MixAnchor]?
    /// Cluster mode: the node whose runner encodes the task, when not this server (its
    /// encoding does not count against this server's budget).
    public internal(set) var host: String?
    /// The admin call that started the task, which hears when it runs or could not start.
    var adminReply: AdminReply?

    /// The pixels a second the runner reported it encodes (a relay's, known at its first frame).
    public internal(set) var measuredCost: Int?

    /// The task's current config.
    public var config: PublishTaskConfig { machine.config }

    /// What the task counts against the encoding budget: what its runner reported, or the
    /// config's estimate until it has (``PublishTaskConfig/encodingCost``).
    public var encodingCost: Int { measuredCost ?? config.encodingCost }

    /// Who hears the answers to the task's start.
    var caller: PublishTasksStateMachine.Caller { session.map { .client($0) } ?? .admin(adminReply ?? AdminReply()) }

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
