import LiveRoomProtocol

/// The book of running publish media stream tasks: ids, rooms, owners, and the rules that
/// span tasks. Pure; the server keeps one and a ``PublishTaskStateMachine`` per task.
///
/// - Two tasks may not publish with the same mode to the same URL (or, into a room, as the
///   same robot user), whichever API started them.
/// - A client may update and stop only the tasks it started; an empty task id stops all of them.
/// - `UpdatePublishCdnStream`'s `SequenceNumber` must grow with every update of a task.
public struct PublishTaskRegistry: Sendable {
    private var records: [String: PublishTaskRecord] = [:]
    private var order: [String] = []
    private var nextNumber = 1
    private let taskIdPrefix: String
    /// The most tasks one room may run at once: each one takes a thread and encoders.
    public let maxTasksPerRoom: Int

    /// - Parameters:
    ///   - taskIdPrefix: put before the task counter (`<prefix>1`, `<prefix>2`…); a random
    ///     prefix per server run keeps ids unique across restarts.
    ///   - maxTasksPerRoom: the most tasks one room may run at once.
    public init(taskIdPrefix: String = "task-", maxTasksPerRoom: Int = 10) {
        self.taskIdPrefix = taskIdPrefix
        self.maxTasksPerRoom = maxTasksPerRoom
    }

    /// Every task, oldest first.
    public var tasks: [PublishTaskRecord] { order.compactMap { records[$0] } }

    public func task(_ taskId: String) -> PublishTaskRecord? { records[taskId] }

    public func tasks(inRoom roomId: String) -> [PublishTaskRecord] { tasks.filter { $0.roomId == roomId } }

    public func tasks(ownedBy user: MixUser) -> [PublishTaskRecord] { tasks.filter { $0.owner == .user(user) } }

    /// Registers a new, validated task and gives it an id.
    public mutating func add(_ config: PublishTaskConfig, roomId: String, owner: PublishTaskOwner) throws(LiveRoomError) -> PublishTaskRecord {
        guard tasks(inRoom: roomId).count < maxTasksPerRoom else {
            throw LiveRoomError(
                ErrorCode.tooManyTasks, "room \"\(roomId)\" already runs \(maxTasksPerRoom) publish media stream tasks; stop one first")
        }
        try checkConflicts(config, roomId: roomId, ignoring: nil)
        var taskId = "\(taskIdPrefix)\(nextNumber)"
        while records[taskId] != nil {
            nextNumber += 1
            taskId = "\(taskIdPrefix)\(nextNumber)"
        }
        nextNumber += 1
        let record = PublishTaskRecord(taskId: taskId, roomId: roomId, owner: owner, config: config)
        records[taskId] = record
        order.append(taskId)
        return record
    }

    /// Checks an update without applying it: the task exists, `owner` may change it, the
    /// sequence number grows, and the new destinations are free. Returns the current record.
    @discardableResult
    public func checkUpdate(
        taskId: String, config: PublishTaskConfig, by owner: PublishTaskOwner, sequenceNumber: Int? = nil
    ) throws(LiveRoomError) -> PublishTaskRecord {
        let record = try ownedTask(taskId, by: owner)
        if let sequenceNumber, let last = record.sequenceNumber, sequenceNumber <= last {
            throw LiveRoomError(
                ErrorCode.staleSequenceNumber,
                "SequenceNumber \(sequenceNumber) of task \(taskId) is not above the last one (\(last)); each update must use a larger number")
        }
        try checkConflicts(config, roomId: record.roomId, ignoring: taskId)
        return record
    }

    /// Records an update (after ``checkUpdate(taskId:config:by:sequenceNumber:)`` and the
    /// task's state machine have accepted it).
    @discardableResult
    public mutating func update(
        taskId: String, config: PublishTaskConfig, by owner: PublishTaskOwner, sequenceNumber: Int? = nil
    ) throws(LiveRoomError) -> PublishTaskRecord {
        var record = try checkUpdate(taskId: taskId, config: config, by: owner, sequenceNumber: sequenceNumber)
        record.config = config
        if let sequenceNumber { record.sequenceNumber = sequenceNumber }
        records[taskId] = record
        return record
    }

    /// Removes one task (`StopPublishCdnStream`, or a client's `stopPublishMediaStream(taskId)`).
    @discardableResult
    public mutating func remove(_ taskId: String, by owner: PublishTaskOwner) throws(LiveRoomError) -> PublishTaskRecord {
        let record = try ownedTask(taskId, by: owner)
        forget(taskId)
        return record
    }

    /// A client's `stopPublishMediaStream(taskId)`: that task, or with an empty id every task the user started.
    public mutating func stop(taskId: String, by user: MixUser) throws(LiveRoomError) -> [PublishTaskRecord] {
        if taskId.isEmpty {
            let owned = tasks(ownedBy: user)
            owned.forEach { forget($0.taskId) }
            return owned
        }
        return [try remove(taskId, by: .user(user))]
    }

    /// Removes a task that ended by itself (idle, failed); unknown ids are ignored.
    @discardableResult
    public mutating func taskEnded(_ taskId: String) -> PublishTaskRecord? {
        let record = records[taskId]
        forget(taskId)
        return record
    }

    /// The room was dismissed: every task of the room is removed and returned, to be stopped.
    public mutating func roomDismissed(_ roomId: String) -> [PublishTaskRecord] {
        let inRoom = tasks(inRoom: roomId)
        inRoom.forEach { forget($0.taskId) }
        return inRoom
    }

    private func ownedTask(_ taskId: String, by owner: PublishTaskOwner) throws(LiveRoomError) -> PublishTaskRecord {
        guard !taskId.isEmpty else {
            throw LiveRoomError(ErrorCode.missingParameter, "taskId is empty")
        }
        guard let record = records[taskId] else {
            throw LiveRoomError(ErrorCode.taskNotFound, "no publish media stream task \"\(taskId)\" (it may have stopped)")
        }
        if case .user(let user) = owner, record.owner != owner {
            throw LiveRoomError(ErrorCode.notTaskOwner, "task \"\(taskId)\" was not started by \(user.userId)")
        }
        return record
    }

    private func checkConflicts(_ config: PublishTaskConfig, roomId: String, ignoring: String?) throws(LiveRoomError) {
        let claims = PublishTaskRecord.claims(of: config, roomId: roomId)
        for record in tasks where record.taskId != ignoring {
            if let clash = record.claims.intersection(claims).first {
                throw LiveRoomError(
                    ErrorCode.conflictingTask,
                    "task \(record.taskId) already publishes \(clash); one destination takes one task per mode")
            }
        }
    }

    private mutating func forget(_ taskId: String) {
        records[taskId] = nil
        order.removeAll { $0 == taskId }
    }
}
