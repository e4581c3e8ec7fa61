import LiveRoomProtocol

/// Every publish media stream task of a server, as one pure state machine: one
/// ``PublishTaskRecord`` per task, the rules that span tasks, and which anchors feed which
/// runner. Each event returns the ``Action``s for the server to carry out (start and stop
/// runners, open and close RTMP connections, set the media port's taps, enter and leave
/// robot users, report states, answer callers, schedule timers). Time is passed in.
///
/// - A task starts in steps: its runner starts (``runnerStarted(_:now:)`` or
///   ``runnerFailed(_:error:)``), a mixStreamToRoom task's robot user enters the room
///   (``robotEntered(_:session:now:)`` or ``robotRefused(_:_:)``), then it runs and its
///   caller hears the answer.
/// - Two tasks may not publish with the same mode to the same URL (or, into a room, as the
///   same robot user), whichever API started them; a room runs at most
///   ``Configuration/maxTasksPerRoom`` tasks.
/// - A client may update and stop only the tasks it started; an empty task id stops all of
///   them. `UpdatePublishCdnStream`'s `SequenceNumber` must grow with every update of a task.
/// - A task takes the media of its relayed user, or of the publishing anchors of its room (at
///   most 16, its own robot excluded); each ``PublishTaskStateMachine`` hears how many are present.
public struct PublishTasksStateMachine: Sendable {
    /// Names a media port tap (the SFU's tap id).
    public typealias TapID = UInt64
    /// Names a signaling session (the room core's session id).
    public typealias Session = UInt64

    public struct Configuration: Sendable, Hashable {
        /// Retry and idle settings of every task.
        public var task: PublishTaskStateMachine.Configuration
        /// The most tasks one room may run at once: each one takes a thread and encoders.
        public var maxTasksPerRoom: Int
        /// The most tasks one user (an anchor, by user id) may have started and running at once.
        public var maxTasksPerUser: Int
        /// The most tasks the server runs at once.
        public var maxTasks: Int
        /// The most pixels a second every task together may encode (``PublishTaskConfig/encodingCost``).
        public var encodingBudget: Int
        /// Where CDN URLs may point: literal addresses are checked at start and on updates
        /// (host names when the runner connects).
        public var egress: EgressPolicy
        /// Put before the task counter (`<prefix>1`, `<prefix>2`…); a random prefix per
        /// server run keeps ids unique across restarts.
        public var taskIdPrefix: String

        public init(
            task: PublishTaskStateMachine.Configuration = .init(), maxTasksPerRoom: Int = 10, maxTasksPerUser: Int = 4, maxTasks: Int = 20,
            encodingBudget: Int = defaultEncodingBudget, egress: EgressPolicy = EgressPolicy(), taskIdPrefix: String = "task-"
        ) {
            self.egress = egress
            self.task = task
            self.maxTasksPerRoom = maxTasksPerRoom
            self.maxTasksPerUser = maxTasksPerUser
            self.maxTasks = maxTasks
            self.encodingBudget = encodingBudget
            self.taskIdPrefix = taskIdPrefix
        }
    }

    /// Who made a request, and so hears its answer.
    public enum Caller: Sendable, Hashable {
        /// A signaling session (`startPublishMediaStream` and the like).
        case client(Session)
        /// The admin REST API (`StartPublishCdnStream` and the like): the answer goes to the call's reply.
        case admin(AdminReply)
    }

    /// The default encoding budget: four times 1920x1080 at 30 fps, about 249 million pixels a
    /// second as the runners count them (encoded, and decoded weighted). From `mix-bench`
    /// (docs/performance.md), a task runner takes a core per 150–210 million of them (540x960@15
    /// mixes of 4, 9 and 16 inputs), so the budget keeps tasks to about 1.3 cores of a 2-core
    /// machine and leaves the rest to the SFU and signaling.
    public static let defaultEncodingBudget = 4 * 1920 * 1080 * 30

    /// A signaling session calling the client API, as the room core sees it.
    public struct Client: Sendable, Hashable {
        public var session: Session
        /// The caller's room and user id, if it is in a room.
        public var user: MixUser?
        /// Whether it is an anchor there.
        public var isAnchor: Bool

        public init(session: Session, user: MixUser?, isAnchor: Bool) {
            self.session = session
            self.user = user
            self.isAnchor = isAnchor
        }
    }

    /// The request an answer is for.
    public enum Request: Sendable, Hashable {
        case start, update, stop
    }

    /// Why a task's robot user did not get into its room.
    public enum RobotRefusal: Sendable, Hashable {
        /// A user with its id is in the room already.
        case userPresent
        /// The room core refused the enter.
        case refused(LiveRoomError)
    }

    /// What the server does.
    public enum Action: Sendable, Hashable {
        /// Start the task's runner, with `tap` for its inputs' keyframe requests and the
        /// robot user it publishes as (mixStreamToRoom); report back with
        /// ``PublishTasksStateMachine/runnerStarted(_:now:)`` or ``PublishTasksStateMachine/runnerFailed(_:error:)``.
        case startRunner(taskId: String, roomId: String, config: PublishTaskConfig, tap: TapID, robot: MixUser?)
        /// Stop the runner; the task is over (`reason` is nil when it never ran).
        case stopRunner(taskId: String, reason: PublishTaskStopReason?)
        /// Open an RTMP connection; the runner reports back with `rtmpConnected` or `rtmpFailed`.
        case connect(taskId: String, url: String)
        /// Close an RTMP connection.
        case disconnect(taskId: String, url: String)
        /// Reconfigure the running pipeline on the same connections.
        case applyConfig(taskId: String, PublishTaskConfig)
        /// Give the runner the publishing anchors of its room, in join order.
        case setAnchors(taskId: String, [MixAnchor])
        /// Tap these publishers' media for the task's runner (none removes the tap).
        case setTap(TapID, taskId: String, publishers: [MixUser])
        /// The robot user enters its room as an anchor and publishes the runner's mix; report
        /// back with ``PublishTasksStateMachine/robotEntered(_:session:now:)`` or ``PublishTasksStateMachine/robotRefused(_:_:)``.
        case enterRobot(taskId: String, MixUser, hasVideo: Bool)
        /// The robot user stops publishing and leaves its room.
        case leaveRobot(taskId: String, MixUser, session: Session)
        /// A CDN URL's new state, for the logs and for the session that started the task, if any (`onCdnStreamStateChanged`).
        case reportState(taskId: String, url: String, CdnStreamState, owner: Session?)
        /// Call ``PublishTasksStateMachine/timerFired(_:now:)`` at `at`.
        case scheduleTimer(taskId: String, at: ContinuousClock.Instant)
        /// Answer a request: `error` is nil when it was done. A refused start has an empty task id.
        case answer(Caller, Request, taskId: String, error: LiveRoomError?)
    }

    public let configuration: Configuration
    private var records: [String: PublishTaskRecord] = [:]
    private var order: [String] = []
    private var nextNumber = 1
    private var nextTap: TapID = 1
    /// The publishing anchors of each room that has tasks, as last reported.
    private var rooms: [String: [MixAnchor]] = [:]

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Every task, oldest first.
    public var tasks: [PublishTaskRecord] { order.compactMap { records[$0] } }

    public func task(_ taskId: String) -> PublishTaskRecord? { records[taskId] }

    public func tasks(inRoom roomId: String) -> [PublishTaskRecord] { tasks.filter { $0.roomId == roomId } }

    public func tasks(ownedBy user: MixUser) -> [PublishTaskRecord] { tasks.filter { $0.owner == .user(user) } }

    /// The rooms that have tasks: the server reports their anchors with ``anchorsChanged(in:anchors:now:)``.
    public var roomIds: [String] { Array(rooms.keys).sorted() }

    // MARK: Requests

    /// `startPublishMediaStream` from a session; `anchors` are the publishing anchors of the caller's room.
    /// `hostedOn` (cluster mode) names another node whose runner encodes it: this server's
    /// encoding budget is not checked (that node checks its own when it starts the runner).
    public mutating func startFromClient(
        target: JSONValue, encoderParam: JSONValue?, mixingConfig: JSONValue?, from client: Client, anchors: [MixAnchor], hostedOn: String? = nil
    ) -> [Action] {
        do throws(LiveRoomError) {
            let user = try Self.anchor(client)
            let config = try PublishTaskConfig.parseClient(target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, caller: user)
            return try add(config, roomId: user.roomId, owner: .user(user), session: client.session, anchors: anchors, host: hostedOn)
        } catch {
            return [.answer(.client(client.session), .start, taskId: "", error: error)]
        }
    }

    /// `StartPublishCdnStream`; `anchors` are nil when the room does not exist.
    public mutating func startFromAdmin(
        _ config: PublishTaskConfig, roomId: String, anchors: [MixAnchor]?, hostedOn: String? = nil, reply: AdminReply = AdminReply()
    ) -> [Action] {
        do throws(LiveRoomError) {
            guard let anchors else {
                throw LiveRoomError(ErrorCode.roomNotFound, "\(RoomID(key: roomId)) does not exist; a task publishes an existing room")
            }
            return try add(config, roomId: roomId, owner: .admin, session: nil, reply: reply, anchors: anchors, host: hostedOn)
        } catch {
            return [.answer(.admin(reply), .start, taskId: "", error: error)]
        }
    }

    /// `updatePublishMediaStream` from a session.
    public mutating func updateFromClient(
        taskId: String, target: JSONValue?, encoderParam: JSONValue?, mixingConfig: JSONValue?, from client: Client, now: ContinuousClock.Instant
    ) -> [Action] {
        do throws(LiveRoomError) {
            let user = try Self.anchor(client)
            guard let record = records[taskId] else { throw Self.noSuchTask(taskId) }
            let config = try PublishTaskConfig.parseClientUpdate(
                target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, caller: user, current: record.config)
            return try update(taskId, config: config, by: .user(user), sequenceNumber: nil, now: now)
                + [.answer(.client(client.session), .update, taskId: taskId, error: nil)]
        } catch {
            return [.answer(.client(client.session), .update, taskId: taskId, error: error)]
        }
    }

    /// `UpdatePublishCdnStream`.
    public mutating func updateFromAdmin(_ request: AdminPublishCdnStreamRequest, now: ContinuousClock.Instant, reply: AdminReply = AdminReply()) -> [Action] {
        do throws(LiveRoomError) {
            guard let record = records[request.taskId] else { throw Self.noSuchTask(request.taskId) }
            let config = try request.applied(to: record.config)
            return try update(request.taskId, config: config, by: .admin, sequenceNumber: request.sequenceNumber, now: now)
                + [.answer(.admin(reply), .update, taskId: request.taskId, error: nil)]
        } catch {
            return [.answer(.admin(reply), .update, taskId: request.taskId, error: error)]
        }
    }

    /// `stopPublishMediaStream` from a session: that task, or with an empty id every task the caller started.
    public mutating func stopFromClient(taskId: String, from client: Client) -> [Action] {
        do throws(LiveRoomError) {
            let user = try Self.anchor(client)
            let stopping = taskId.isEmpty ? tasks(ownedBy: user).map(\.taskId) : [try ownedTask(taskId, by: .user(user)).taskId]
            return stopping.flatMap { end($0) { $0.stop() } } + [.answer(.client(client.session), .stop, taskId: taskId, error: nil)]
        } catch {
            return [.answer(.client(client.session), .stop, taskId: taskId, error: error)]
        }
    }

    /// `StopPublishCdnStream`: the admin API may stop any task.
    public mutating func stopFromAdmin(taskId: String, reply: AdminReply = AdminReply()) -> [Action] {
        do throws(LiveRoomError) {
            _ = try ownedTask(taskId, by: .admin)
            return end(taskId) { $0.stop() } + [.answer(.admin(reply), .stop, taskId: taskId, error: nil)]
        } catch {
            return [.answer(.admin(reply), .stop, taskId: taskId, error: error)]
        }
    }

    // MARK: Starting

    /// The runner of a starting task is up: a room task's robot enters next, any other task runs.
    public mutating func runnerStarted(_ taskId: String, now: ContinuousClock.Instant) -> [Action] {
        guard var record = records[taskId], record.phase == .startingRunner else { return [] }
        guard let robot = record.robot else { return run(taskId, now: now) }
        record.phase = .enteringRobot
        records[taskId] = record
        return [.enterRobot(taskId: taskId, robot, hasVideo: record.config.hasVideo)]
    }

    /// The runner could not start (its encoders, or no media port): the task is forgotten and its caller told.
    public mutating func runnerFailed(_ taskId: String, error: LiveRoomError) -> [Action] {
        guard let record = records[taskId], record.phase == .startingRunner else { return [] }
        forget(taskId)
        return [.answer(record.caller, .start, taskId: "", error: error)]
    }

    /// The robot user is in its room as `session` and publishes: the task runs.
    public mutating func robotEntered(_ taskId: String, session: Session, now: ContinuousClock.Instant) -> [Action] {
        guard records[taskId]?.phase == .enteringRobot else { return [] }
        records[taskId]?.robotSession = session
        return run(taskId, now: now)
    }

    /// The robot user could not enter: the runner stops and the caller is told why.
    public mutating func robotRefused(_ taskId: String, _ refusal: RobotRefusal) -> [Action] {
        guard let record = records[taskId], record.phase == .enteringRobot, let robot = record.robot else { return [] }
        let error =
            switch refusal {
            case .userPresent:
                LiveRoomError(ErrorCode.conflictingTask, "\(robot.userId) is already in \(RoomID(key: robot.roomId)); mixStreamIdentity needs a user id of its own")
            case .refused(let refused):
                LiveRoomError(refused.code, "the mix's user \(robot.userId) cannot enter \(RoomID(key: robot.roomId)): \(refused.message)")
            }
        return finish(taskId, reason: nil) + [.answer(record.caller, .start, taskId: "", error: error)]
    }

    // MARK: Rooms, runners, timers

    /// The publishing anchors of a room with tasks, after any change in the rooms: each
    /// running task of the room whose anchors changed is given them, its tap follows its
    /// inputs, and its state machine hears how many are present.
    public mutating func anchorsChanged(in roomId: String, anchors: [MixAnchor], now: ContinuousClock.Instant) -> [Action] {
        guard rooms[roomId] != nil else { return [] }
        rooms[roomId] = anchors
        return tasks(inRoom: roomId).flatMap { feed($0.taskId, force: false, now: now) }
    }

    /// The room was dismissed: its tasks stop.
    public mutating func roomDismissed(_ roomId: String) -> [Action] {
        let actions = tasks(inRoom: roomId).flatMap { end($0.taskId) { $0.roomDismissed() } }
        rooms[roomId] = nil
        return actions
    }

    /// A task's runner reports what it costs (a relay at its first frame, every task when its
    /// cost moves: the pixels a second it encodes, and those it decodes weighted): the budget
    /// counts that from now on instead of the estimate. A task already running is not stopped
    /// for it; later starts are admitted against it.
    public mutating func encodingMeasured(_ taskId: String, pixelsPerSecond: Int) -> [Action] {
        records[taskId]?.measuredCost = min(max(0, pixelsPerSecond), 1 << 40)
        return []
    }

    /// An RTMP connection of a task is up.
    public mutating func rtmpConnected(_ taskId: String, url: String) -> [Action] {
        step(taskId) { $0.rtmpConnected(url: url) }
    }

    /// An RTMP connection of a task failed to open or dropped.
    public mutating func rtmpFailed(_ taskId: String, url: String, message: String, now: ContinuousClock.Instant) -> [Action] {
        step(taskId) { $0.rtmpFailed(url: url, message: message, now: now) }
    }

    /// The egress policy refused an RTMP destination of a task.
    public mutating func rtmpRefused(_ taskId: String, url: String) -> [Action] {
        step(taskId) { $0.rtmpRefused(url: url) }
    }

    /// A timer scheduled for a task fired (early or stale timers do nothing).
    public mutating func timerFired(_ taskId: String, now: ContinuousClock.Instant) -> [Action] {
        step(taskId) { $0.timerFired(now: now) }
    }

    /// The server shuts down: every task stops.
    public mutating func shutdown() -> [Action] {
        let taskIds = order
        return taskIds.flatMap { taskId in end(taskId) { $0.stop() } }
    }

    // MARK: Inside

    private mutating func add(
        _ config: PublishTaskConfig, roomId: String, owner: PublishTaskOwner, session: Session?, reply: AdminReply? = nil, anchors: [MixAnchor], host: String?
    ) throws(LiveRoomError) -> [Action] {
        guard tasks(inRoom: roomId).count < configuration.maxTasksPerRoom else {
            throw LiveRoomError(
                ErrorCode.tooManyTasks,
                "\(RoomID(key: roomId)) already runs \(configuration.maxTasksPerRoom) publish media stream tasks; stop one first")
        }
        if case .user(let user) = owner {
            let mine = records.values.filter { if case .user(let other) = $0.owner { other.userId == user.userId } else { false } }.count
            guard mine < configuration.maxTasksPerUser else {
                throw LiveRoomError(
                    ErrorCode.tooManyTasksForUser, "user \(user.userId.quoted) already runs \(mine) publish media stream tasks, the most one user may; stop one first")
            }
        }
        guard records.count < configuration.maxTasks else {
            throw LiveRoomError(ErrorCode.tooManyTasksOnServer, "the server already runs \(configuration.maxTasks) publish media stream tasks, the most it allows")
        }
        if host == nil { try checkBudget(config.encodingCost, replacing: 0) }
        try checkEgress(config)
        try Self.checkRobot(config, roomId: roomId)
        try checkConflicts(config, roomId: roomId, ignoring: nil)
        var taskId = "\(configuration.taskIdPrefix)\(nextNumber)"
        while records[taskId] != nil {
            nextNumber += 1
            taskId = "\(configuration.taskIdPrefix)\(nextNumber)"
        }
        nextNumber += 1
        let tap = nextTap
        nextTap += 1
        let robot = config.target.mode == .mixStreamToRoom ? config.target.mixStreamIdentity?.resolved(in: roomId) : nil
        records[taskId] = PublishTaskRecord(
            taskId: taskId, roomId: roomId, owner: owner, session: session,
            machine: PublishTaskStateMachine(config: config, configuration: configuration.task), tap: tap, robot: robot)
        records[taskId]?.host = host
        records[taskId]?.adminReply = reply
        order.append(taskId)
        rooms[roomId] = anchors
        return [.startRunner(taskId: taskId, roomId: roomId, config: config, tap: tap, robot: robot)]
    }

    /// The task runs: its runner gets its anchors and taps, its connections open, its caller hears it started.
    private mutating func run(_ taskId: String, now: ContinuousClock.Instant) -> [Action] {
        guard var record = records[taskId] else { return [] }
        record.phase = .running
        let inputs = Self.inputUsers(record.config, rooms[record.roomId] ?? [], roomId: record.roomId)
        let started = record.machine.start(presentUserCount: presentCount(inputs, roomId: record.roomId), now: now)
        records[taskId] = record
        return feed(taskId, force: true, now: now) + translate(started, of: taskId) + [.answer(record.caller, .start, taskId: taskId, error: nil)]
    }

    private mutating func update(
        _ taskId: String, config: PublishTaskConfig, by owner: PublishTaskOwner, sequenceNumber: Int?, now: ContinuousClock.Instant
    ) throws(LiveRoomError) -> [Action] {
        var record = try ownedTask(taskId, by: owner)
        if let sequenceNumber, let last = record.sequenceNumber, sequenceNumber <= last {
            throw LiveRoomError(
                ErrorCode.staleSequenceNumber,
                "SequenceNumber \(sequenceNumber) of task \(taskId) is not above the last one (\(last)); each update must use a larger number")
        }
        try Self.checkRobot(config, roomId: record.roomId)
        try checkConflicts(config, roomId: record.roomId, ignoring: taskId)
        // A relay that stays a relay keeps what its runner reported; a change of mode (a relay
        // becoming a mix, or back) is counted by the new config until the runner reports again.
        let keepsMeasure = config.target.mode == record.config.target.mode && !config.target.mode.isMixing
        if record.host == nil { try checkBudget(keepsMeasure ? record.encodingCost : config.encodingCost, replacing: record.encodingCost) }
        try checkEgress(config)
        let actions = try record.machine.update(config, now: now)
        if !keepsMeasure { record.measuredCost = nil }
        if let sequenceNumber { record.sequenceNumber = sequenceNumber }
        records[taskId] = record
        return translate(actions, of: taskId) + feed(taskId, force: true, now: now)
    }

    /// Refuses CDN URLs whose host is a literal address the egress policy does not allow.
    private func checkEgress(_ config: PublishTaskConfig) throws(LiveRoomError) {
        for url in config.target.cdnUrlList {
            guard let destination = DestinationURL(url.rtmpUrl), let address = IPRange.parse(destination.host) else { continue }
            guard configuration.egress.allows(host: destination.host, resolved: [address]) else {
                throw LiveRoomError(ErrorCode.egressRefused, "\(url.rtmpUrl.quoted): \(EgressPolicy.refusal)")
            }
        }
    }

    /// Refuses a task (or an update) whose encoding would take the server over its budget;
    /// `replacing` is the cost of the task's current configuration.
    private func checkBudget(_ cost: Int, replacing: Int) throws(LiveRoomError) {
        let used = encodingUsed - replacing
        guard used + cost <= configuration.encodingBudget else {
            let million = { (pixels: Int) in "\((pixels + 50_000) / 1_000_000).\((pixels + 50_000) / 100_000 % 10)" }
            throw LiveRoomError(
                ErrorCode.encodingBudgetExceeded,
                "this task costs \(million(cost)) million pixels a second (encoding, and decoding its inputs) and the server has \(million(max(0, configuration.encodingBudget - used))) million left of its \(million(configuration.encodingBudget)) million; lower the size or frame rate, or stop another task")
        }
    }

    /// The pixels a second this server's own runners encode (tasks hosted on other nodes left out).
    public var encodingUsed: Int {
        records.values.reduce(0) { $0 + ($1.host == nil ? $1.encodingCost : 0) }
    }

    /// Gives a running task's runner its anchors and taps their media (when they changed, or when `force`d).
    private mutating func feed(_ taskId: String, force: Bool, now: ContinuousClock.Instant) -> [Action] {
        guard var record = records[taskId], record.phase == .running else { return [] }
        let anchors = rooms[record.roomId] ?? []
        guard force || record.anchors != anchors else { return [] }
        record.anchors = anchors
        let inputs = Self.inputUsers(record.config, anchors, roomId: record.roomId)
        let changed = record.machine.inputsChanged(presentUserCount: presentCount(inputs, roomId: record.roomId), now: now)
        records[taskId] = record
        return [.setAnchors(taskId: taskId, anchors), .setTap(record.tap, taskId: taskId, publishers: inputs)] + translate(changed, of: taskId)
    }

    /// Runs one event of a running task's state machine.
    private mutating func step(_ taskId: String, _ event: (inout PublishTaskStateMachine) -> [PublishTaskStateMachine.Action]) -> [Action] {
        guard var record = records[taskId], record.phase == .running else { return [] }
        let actions = event(&record.machine)
        records[taskId] = record
        return translate(actions, of: taskId)
    }

    /// Stops a task through its state machine; a task that never ran just ends.
    private mutating func end(_ taskId: String, _ event: (inout PublishTaskStateMachine) -> [PublishTaskStateMachine.Action]) -> [Action] {
        guard records[taskId]?.phase == .running else { return finish(taskId, reason: nil) }
        return step(taskId, event)
    }

    /// A task's state machine actions as the server's.
    private mutating func translate(_ actions: [PublishTaskStateMachine.Action], of taskId: String) -> [Action] {
        let owner = records[taskId]?.session
        return actions.flatMap { action -> [Action] in
            switch action {
            case .startOutput: []  // the runner started with the task
            case .connect(let url): [.connect(taskId: taskId, url: url)]
            case .disconnect(let url): [.disconnect(taskId: taskId, url: url)]
            case .reportState(let url, let state): [.reportState(taskId: taskId, url: url, state, owner: owner)]
            case .scheduleRetry(_, let at), .scheduleIdleStop(let at): [.scheduleTimer(taskId: taskId, at: at)]
            case .applyConfig(let config): [.applyConfig(taskId: taskId, config)]
            case .stopOutput(let reason): finish(taskId, reason: reason)
            }
        }
    }

    /// The task is over: its runner stops, its tap goes, its robot leaves, its record is forgotten.
    private mutating func finish(_ taskId: String, reason: PublishTaskStopReason?) -> [Action] {
        guard let record = records[taskId] else { return [] }
        forget(taskId)
        var actions: [Action] = [.stopRunner(taskId: taskId, reason: reason)]
        if record.phase == .running { actions.append(.setTap(record.tap, taskId: taskId, publishers: [])) }
        if let robot = record.robot, let session = record.robotSession { actions.append(.leaveRobot(taskId: taskId, robot, session: session)) }
        return actions
    }

    private mutating func forget(_ taskId: String) {
        guard let record = records.removeValue(forKey: taskId) else { return }
        order.removeAll { $0 == taskId }
        if !order.contains(where: { records[$0]?.roomId == record.roomId }) { rooms[record.roomId] = nil }
    }

    private func ownedTask(_ taskId: String, by owner: PublishTaskOwner) throws(LiveRoomError) -> PublishTaskRecord {
        guard !taskId.isEmpty else {
            throw LiveRoomError(ErrorCode.missingParameter, "taskId is empty")
        }
        guard let record = records[taskId] else { throw Self.noSuchTask(taskId) }
        if case .user(let user) = owner, record.owner != owner {
            throw LiveRoomError(ErrorCode.notTaskOwner, "task \(taskId.quoted) was not started by \(user.userId)")
        }
        return record
    }

    /// User ids a robot may never take: the admin API's identity.
    public static let reservedUserIds: Set<String> = ["administrator"]

    /// A mixStreamToRoom task's robot publishes into the task's own room, under an id that is
    /// not reserved: a task never enters, or creates, another room.
    private static func checkRobot(_ config: PublishTaskConfig, roomId: String) throws(LiveRoomError) {
        guard config.target.mode == .mixStreamToRoom, let robot = config.target.mixStreamIdentity?.resolved(in: roomId) else { return }
        guard robot.roomId == roomId else {
            throw LiveRoomError(
                ErrorCode.invalidPublishTarget,
                "mixStreamIdentity names \(RoomID(key: robot.roomId)), not the task's \(RoomID(key: roomId)); the mix publishes into its own room")
        }
        guard !reservedUserIds.contains(robot.userId.lowercased()) else {
            throw LiveRoomError(ErrorCode.invalidPublishTarget, "mixStreamIdentity.userId \(robot.userId.quoted) is reserved")
        }
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

    private static func noSuchTask(_ taskId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.taskNotFound, "no publish media stream task \(taskId.quoted) (it may have stopped)")
    }

    /// The anchor calling a task API.
    private static func anchor(_ client: Client) throws(LiveRoomError) -> MixUser {
        guard let user = client.user else {
            throw LiveRoomError(ErrorCode.notInRoom, "enter a room before starting or changing a publish media stream task")
        }
        guard client.isAnchor else {
            throw LiveRoomError(ErrorCode.anchorOnly, "only anchors may start, update or stop publish media stream tasks")
        }
        return user
    }

    /// The users whose media a task takes: the relayed user, or the publishing anchors of a mix (at most 16, robot excluded).
    /// How many of a task's inputs keep it alive: people, and the robots of tasks that have
    /// people among their inputs (directly or through other robots). Robots whose tasks only
    /// see other robots do not count, so two room mixes in one room cannot keep each other
    /// running after everyone has left; they end by the idle timeout.
    private func presentCount(_ inputs: [MixUser], roomId: String) -> Int {
        let robots = Set(tasks(inRoom: roomId).compactMap(\.robot))
        let roomTasks = tasks(inRoom: roomId).filter { $0.phase == .running }
        var live: Set<MixUser> = []
        var grew = true
        while grew {
            grew = false
            for record in roomTasks {
                guard let robot = record.robot, !live.contains(robot) else { continue }
                let its = Self.inputUsers(record.config, rooms[roomId] ?? [], roomId: roomId)
                if its.contains(where: { !robots.contains($0) || live.contains($0) }) {
                    live.insert(robot)
                    grew = true
                }
            }
        }
        return inputs.filter { !robots.contains($0) || live.contains($0) }.count
    }

    static func inputUsers(_ config: PublishTaskConfig, _ anchors: [MixAnchor], roomId: String) -> [MixUser] {
        guard config.target.mode.isMixing else {
            let source = config.relaySource?.resolved(in: roomId)
            return anchors.map(\.user).filter { $0 == source }
        }
        let robot = config.target.mixStreamIdentity?.resolved(in: roomId)
        return Array(anchors.map(\.user).filter { $0 != robot }.prefix(StreamMixingConfig.maxInputs))
    }
}
