import Foundation
import LiveRoomAuth
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomMedia
import LiveRoomMixer
import LiveRoomPublishing
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Logging

/// The publish media stream tasks of a hub: the pure registry and one state machine per
/// task, with the runner that carries out each machine's actions and the media port tap
/// that feeds it.
struct PublishTaskBook {
    var registry: PublishTaskRegistry
    var machines: [String: PublishTaskStateMachine] = [:]
    var runners: [String: PublishTaskRunner] = [:]
    var taps: [String: SFURouter.TapID] = [:]
    /// The session that started a client task: it hears the task's callbacks.
    var owners: [String: SessionID] = [:]
    /// The robot user of a mixStreamToRoom task: its session in the room core and its key on the media port.
    var robots: [String: (session: SessionID, key: SFURouter.PublisherKey)] = [:]
    /// The anchors each runner was last told about.
    var anchors: [String: [MixAnchor]] = [:]
    var nextTap: SFURouter.TapID = 1
    let configuration: PublishTaskStateMachine.Configuration

    init(configuration: PublishTaskStateMachine.Configuration, maxTasksPerRoom: Int) {
        self.configuration = configuration
        registry = PublishTaskRegistry(taskIdPrefix: String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 36) + "-", maxTasksPerRoom: maxTasksPerRoom)
    }
}

extension RoomHub {
    // MARK: Client API

    /// `startPublishMediaStream`, `updatePublishMediaStream`, `stopPublishMediaStream` from a connection.
    func handlePublishTaskRequest(_ request: PublishTaskRequest, from session: SessionID) {
        switch request {
        case .startPublishMediaStream(let target, let encoderParam, let mixingConfig):
            do throws(LiveRoomError) {
                let caller = try taskCaller(session)
                let config = try PublishTaskConfig.parseClient(target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, caller: caller)
                let taskId = try startTask(config, roomId: caller.roomId, owner: .user(caller), session: session)
                send(.onStartPublishMediaStream(taskId: taskId, code: 0, message: "ok"), to: session)
            } catch {
                send(.onStartPublishMediaStream(taskId: "", code: error.code, message: error.message), to: session)
            }
        case .updatePublishMediaStream(let taskId, let target, let encoderParam, let mixingConfig):
            do throws(LiveRoomError) {
                let caller = try taskCaller(session)
                guard let record = tasks.registry.task(taskId) else {
                    throw LiveRoomError(ErrorCode.taskNotFound, "no publish media stream task \"\(taskId)\" (it may have stopped)")
                }
                let config = try PublishTaskConfig.parseClientUpdate(
                    target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, caller: caller, current: record.config)
                try updateTask(taskId, config: config, by: .user(caller), sequenceNumber: nil)
                send(.onUpdatePublishMediaStream(taskId: taskId, code: 0, message: "ok"), to: session)
            } catch {
                send(.onUpdatePublishMediaStream(taskId: taskId, code: error.code, message: error.message), to: session)
            }
        case .stopPublishMediaStream(let taskId):
            do throws(LiveRoomError) {
                let caller = try taskCaller(session)
                for record in try tasks.registry.stop(taskId: taskId, by: caller) {
                    stopTask(record.taskId)
                }
                send(.onStopPublishMediaStream(taskId: taskId, code: 0, message: "ok"), to: session)
            } catch {
                send(.onStopPublishMediaStream(taskId: taskId, code: error.code, message: error.message), to: session)
            }
        }
    }

    /// The anchor calling a task API.
    private func taskCaller(_ session: SessionID) throws(LiveRoomError) -> MixUser {
        guard let (roomId, userId) = machine.membership(of: session) else {
            throw LiveRoomError(ErrorCode.notInRoom, "enter a room before starting or changing a publish media stream task")
        }
        guard machine.role(of: session) == .anchor else {
            throw LiveRoomError(ErrorCode.anchorOnly, "only anchors may start, update or stop publish media stream tasks")
        }
        return MixUser(userId: userId, roomId: roomId)
    }

    // MARK: Admin API

    /// `StartPublishCdnStream`: the room must exist.
    func startAdminTask(_ config: PublishTaskConfig, roomId: String) throws(LiveRoomError) -> String {
        guard machine.describe(roomId) != nil else {
            throw LiveRoomError(ErrorCode.roomNotFound, "room \"\(roomId)\" does not exist; a task publishes an existing room")
        }
        return try startTask(config, roomId: roomId, owner: .admin, session: nil)
    }

    /// `UpdatePublishCdnStream`.
    func updateAdminTask(_ request: AdminPublishCdnStreamRequest) throws(LiveRoomError) {
        guard let record = tasks.registry.task(request.taskId) else {
            throw LiveRoomError(ErrorCode.taskNotFound, "no publish media stream task \"\(request.taskId)\" (it may have stopped)")
        }
        try updateTask(request.taskId, config: try request.applied(to: record.config), by: .admin, sequenceNumber: request.sequenceNumber)
    }

    /// `StopPublishCdnStream`.
    func stopAdminTask(_ taskId: String) throws(LiveRoomError) {
        try tasks.registry.remove(taskId, by: PublishTaskOwner.admin)
        stopTask(taskId)
    }

    // MARK: Running tasks

    private func startTask(_ config: PublishTaskConfig, roomId: String, owner: PublishTaskOwner, session: SessionID?) throws(LiveRoomError) -> String {
        guard let media else { throw LiveRoomError(ErrorCode.badSessionDescription, "the media port is not running") }
        let taskId = try tasks.registry.add(config, roomId: roomId, owner: owner).taskId
        let tap = tasks.nextTap
        tasks.nextTap += 1
        let logger = self.logger
        let robot = config.target.mode == .mixStreamToRoom ? config.target.mixStreamIdentity?.resolved(in: roomId) : nil
        let robotKey = robot.map { SFURouter.PublisherKey(roomId: $0.roomId, userId: $0.userId) }
        let onEvent: @Sendable (PublishTaskRunner.Event) -> Void = { [weak self] event in
            Task { await self?.runnerReported(event, taskId: taskId) }
        }
        let runner: PublishTaskRunner
        do {
            if let robot, machine.describe(robot.roomId)?.users.contains(where: { $0.userId == robot.userId }) == true {
                throw LiveRoomError(
                    ErrorCode.conflictingTask, "\(robot.userId) is already in room \(robot.roomId); mixStreamIdentity needs a user id of its own")
            }
            runner = try PublishTaskRunner(
                taskId: taskId, roomId: roomId, config: config,
                onEvent: onEvent,
                requestKeyframe: { user in media.requestKeyframe(for: tap, of: SFURouter.PublisherKey(roomId: user.roomId, userId: user.userId)) },
                roomOutput: robotKey.map(Self.roomOutput(media)),
                log: { logger.info("\($0)", metadata: [LogKey.task: "\(taskId)"]) })
        } catch let error as LiveRoomError {
            tasks.registry.taskEnded(taskId)
            throw error
        } catch {
            tasks.registry.taskEnded(taskId)
            throw LiveRoomError(ErrorCode.invalidVideoEncoding, "the task's encoders cannot start: \(error)")
        }
        if let robot, let robotKey {
            do {
                try enterRobot(robot, key: robotKey, runner: runner, hasVideo: config.hasVideo, taskId: taskId)
            } catch {
                runner.stop()
                tasks.registry.taskEnded(taskId)
                throw error
            }
        }
        tasks.runners[taskId] = runner
        tasks.taps[taskId] = tap
        tasks.owners[taskId] = session
        var stateMachine = PublishTaskStateMachine(config: config, configuration: tasks.configuration)
        let anchors = mixAnchors(in: roomId)
        let actions = stateMachine.start(presentUserCount: Self.inputUsers(config, anchors, roomId: roomId).count, now: .now)
        tasks.machines[taskId] = stateMachine
        logger.info("Publish task started", metadata: [LogKey.task: "\(taskId)", LogKey.room: "\(roomId)", LogKey.mode: "\(config.target.mode.name)"])
        feed(taskId, anchors: anchors, force: true)
        carryOut(actions, taskId: taskId)
        return taskId
    }

    private func updateTask(_ taskId: String, config: PublishTaskConfig, by owner: PublishTaskOwner, sequenceNumber: Int?) throws(LiveRoomError) {
        try tasks.registry.checkUpdate(taskId: taskId, config: config, by: owner, sequenceNumber: sequenceNumber)
        guard var stateMachine = tasks.machines[taskId] else {
            throw LiveRoomError(ErrorCode.taskNotFound, "no publish media stream task \"\(taskId)\" (it may have stopped)")
        }
        let actions = try stateMachine.update(config, now: .now)
        tasks.machines[taskId] = stateMachine
        try tasks.registry.update(taskId: taskId, config: config, by: owner, sequenceNumber: sequenceNumber)
        carryOut(actions, taskId: taskId)
        if let record = tasks.registry.task(taskId) { feed(taskId, anchors: mixAnchors(in: record.roomId), force: true) }
    }

    /// Hands a runner's room output to the media port as the robot's local publisher.
    private static func roomOutput(_ media: MediaService) -> (SFURouter.PublisherKey) -> PublishTaskRunner.RoomOutput {
        { key in
            { packets in
                media.sendLocal(packets.map { (packet: $0.packet, kind: $0.kind == .audio ? MediaKind.audio : MediaKind.video) }, of: key)
            }
        }
    }

    /// The robot user of a mixStreamToRoom task enters the room as an anchor and publishes
    /// the mix: everyone is told as for any anchor, and subscribes to it the same way.
    private func enterRobot(_ robot: MixUser, key: SFURouter.PublisherKey, runner: PublishTaskRunner, hasVideo: Bool, taskId: String) throws(LiveRoomError) {
        let session = newSession()
        let configuration = machine.configuration
        let sig = UserSig.make(
            sdkAppId: configuration.sdkAppId, secretKey: configuration.secretKey, identifier: robot.userId,
            time: Int64(Date().timeIntervalSince1970), expire: 86_400 * 365
        ).encoded()
        let params = EnterRoomParams(sdkAppId: configuration.sdkAppId, userId: robot.userId, userSig: sig, strRoomId: robot.roomId, role: .anchor)
        let actions = machine.handle(.enterRoom(params), from: session, at: .now())
        for case .send(session, .onEnterRoom(let result, let message), _) in actions where result < 0 {
            throw LiveRoomError(result, "the mix's user \(robot.userId) cannot enter room \(robot.roomId): \(message ?? "refused")")
        }
        media?.publishLocal(key, codecs: hasVideo ? [.h264, .opus] : [.opus]) { runner.requestOutputKeyframe() }
        tasks.robots[taskId] = (session, key)
        execute(actions + machine.publishStarted(session, audio: true, video: hasVideo))
    }

    /// Stops a task the registry has already let go of.
    private func stopTask(_ taskId: String) {
        withMachine(taskId) { $0.stop() }
    }

    /// The room was dismissed: its tasks stop.
    func roomTasksDismissed(_ roomId: String) {
        for record in tasks.registry.roomDismissed(roomId) {
            withMachine(record.taskId) { $0.roomDismissed() }
        }
    }

    /// Runs one event of a task's state machine and carries out its actions.
    private func withMachine(_ taskId: String, _ event: (inout PublishTaskStateMachine) -> [PublishTaskStateMachine.Action]) {
        guard var stateMachine = tasks.machines[taskId] else { return }
        let actions = event(&stateMachine)
        tasks.machines[taskId] = stateMachine
        carryOut(actions, taskId: taskId)
    }

    private func runnerReported(_ event: PublishTaskRunner.Event, taskId: String) {
        switch event {
        case .rtmpConnected(let url):
            withMachine(taskId) { $0.rtmpConnected(url: url) }
        case .rtmpFailed(let url, let message):
            logger.warning("RTMP connection failed", metadata: [LogKey.task: "\(taskId)", LogKey.url: "\(url)", LogKey.error: "\(message)"])
            withMachine(taskId) { $0.rtmpFailed(url: url, message: message, now: .now) }
        }
    }

    private func timerFired(_ taskId: String) {
        withMachine(taskId) { $0.timerFired(now: .now) }
    }

    private func carryOut(_ actions: [PublishTaskStateMachine.Action], taskId: String) {
        guard let runner = tasks.runners[taskId] else { return }
        for action in actions {
            switch action {
            case .startOutput:
                break  // the runner started with the task
            case .connect(let url):
                runner.connect(url: url)
            case .disconnect(let url):
                runner.disconnect(url: url)
            case .reportState(let url, let state):
                report(state, url: url, taskId: taskId)
            case .scheduleRetry(_, let at), .scheduleIdleStop(let at):
                Task { [weak self] in
                    try? await Task.sleep(until: at, clock: .continuous)
                    await self?.timerFired(taskId)
                }
            case .applyConfig(let config):
                runner.apply(config)
            case .stopOutput(let reason):
                endTask(taskId, reason: reason)
            }
        }
    }

    private func report(_ state: CdnStreamState, url: String, taskId: String) {
        let (status, code, message): (Int, Int, String) =
            switch state {
            case .stopped: (0, 0, "stopped")
            case .connecting: (1, 0, "connecting")
            case .pushing: (2, 0, "pushing")
            case .reconnecting(let attempt): (3, 0, "reconnecting, attempt \(attempt) of \(tasks.configuration.retryCount)")
            case .failed(let message): (4, ErrorCode.cdnPushFailed, message)
            }
        logger.info("CDN stream state", metadata: [LogKey.task: "\(taskId)", LogKey.url: "\(url)", LogKey.state: "\(message)"])
        if let session = tasks.owners[taskId] {
            send(.onCdnStreamStateChanged(taskId: taskId, cdnUrl: url, status: status, code: code, message: message), to: session)
        }
    }

    private func endTask(_ taskId: String, reason: PublishTaskStopReason) {
        tasks.runners.removeValue(forKey: taskId)?.stop()
        if let tap = tasks.taps.removeValue(forKey: taskId) { media?.setTap(tap, publishers: [], sink: { _, _, _ in }) }
        tasks.machines[taskId] = nil
        tasks.owners[taskId] = nil
        tasks.anchors[taskId] = nil
        tasks.registry.taskEnded(taskId)
        if let robot = tasks.robots.removeValue(forKey: taskId) {
            media?.stopLocal(robot.key)
            execute(machine.handle(.exitRoom, from: robot.session, at: .now()))
        }
        logger.info("Publish task ended", metadata: [LogKey.task: "\(taskId)", LogKey.reason: "\(reason)"])
    }

    /// Stops every task (server shutdown).
    func stopAllTasks() {
        for taskId in Array(tasks.runners.keys) {
            tasks.registry.taskEnded(taskId)
            stopTask(taskId)
        }
    }

    // MARK: Inputs

    /// After the rooms changed: tells each runner about anchors who came, left or muted, and
    /// each state machine how many inputs are present.
    func refreshPublishTasks() {
        for record in tasks.registry.tasks {
            feed(record.taskId, anchors: mixAnchors(in: record.roomId), force: false)
        }
    }

    /// The publishing anchors of a room as the layout sees them.
    private func mixAnchors(in roomId: String) -> [MixAnchor] {
        machine.publisherStates(in: roomId).map {
            MixAnchor(user: MixUser(userId: $0.userId, roomId: roomId), hasVideo: $0.video, hasAudio: $0.audio && !$0.audioMuted, videoMuted: $0.videoMuted)
        }
    }

    /// The users whose media a task takes: the relayed user, or the publishing anchors of a mix (at most 16, robot excluded).
    private static func inputUsers(_ config: PublishTaskConfig, _ anchors: [MixAnchor], roomId: String) -> [MixUser] {
        guard config.target.mode.isMixing else {
            let source = config.relaySource?.resolved(in: roomId)
            return anchors.map(\.user).filter { $0 == source }
        }
        let robot = config.target.mixStreamIdentity?.resolved(in: roomId)
        return Array(anchors.map(\.user).filter { $0 != robot }.prefix(StreamMixingConfig.maxInputs))
    }

    /// Gives a runner its anchors and taps their media (when changed, or when `force`d).
    private func feed(_ taskId: String, anchors: [MixAnchor], force: Bool) {
        guard let runner = tasks.runners[taskId], let tap = tasks.taps[taskId], let config = tasks.machines[taskId]?.config,
            let roomId = tasks.registry.task(taskId)?.roomId
        else { return }
        guard force || tasks.anchors[taskId] != anchors else { return }
        tasks.anchors[taskId] = anchors
        runner.setAnchors(anchors)
        let inputs = Self.inputUsers(config, anchors, roomId: roomId)
        let keys = Set(inputs.map { SFURouter.PublisherKey(roomId: $0.roomId, userId: $0.userId) })
        media?.setTap(tap, publishers: keys) { key, codec, packet in
            let videoCodec: VideoCodec?
            if codec.kind == .video {
                guard let known = VideoCodec(rawValue: codec.name) else { return }
                videoCodec = known
            } else {
                videoCodec = nil
            }
            runner.receive(from: MixUser(userId: key.userId, roomId: key.roomId), videoCodec: videoCodec, packet: packet)
        }
        withMachine(taskId) { $0.inputsChanged(presentUserCount: inputs.count, now: .now) }
    }
}
