import LiveRoomProtocol
import Synchronization

/// Where the answer to one admin call goes (`StartPublishCdnStream` and the like). The task
/// machine carries it in its actions, as postgres-nio's state machines carry a promise; whoever
/// carries out the actions fulfils it, and the call reads it once they are done. Each call has
/// its own, so calls that overlap (the hub awaits other nodes meanwhile) never see each other's.
public final class AdminReply: Sendable, Hashable {
    private let answer = Mutex<(taskId: String, error: LiveRoomError?)?>(nil)

    public init() {}

    /// The first answer counts.
    public func fulfil(taskId: String, error: LiveRoomError?) {
        answer.withLock { answer in
            if answer == nil { answer = (taskId, error) }
        }
    }

    /// The task id answered, or the error; "" when nothing answered.
    public func result() throws(LiveRoomError) -> String {
        guard let answer = answer.withLock({ $0 }) else { return "" }
        if let error = answer.error { throw error }
        return answer.taskId
    }

    public static func == (a: AdminReply, b: AdminReply) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
