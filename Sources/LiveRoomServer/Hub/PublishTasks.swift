import Foundation
import LiveRoomAuth
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomTaskRunner
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWebhooks
import LiveRoomWire

/// Publish media stream tasks: requests, room changes, runner reports and timers go to
/// ``PublishTasksStateMachine``, whose actions are carried out with runner threads, media port
/// taps, robot sessions and `Task.sleep` timers.
extension RoomTasks {
    // MARK: Requests

    /// `startPublishMediaStream`, `updatePublishMediaStream`, `stopPublishMediaStream` from a connection.
    func handle(_ request: PublishTaskRequest, from session: SessionID) async {
        let client = await taskClient(session)
        switch request {
        case .startPublishMediaStream(let target, let encoderParam, let mixingConfig):
            let anchors = await mixAnchors(in: client.user?.roomId)
            let actions = tasks.startFromClient(target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, from: client, anchors: anchors)
            guard nodes.mayHostTasks, Self.isBudgetRefusal(actions) else { return await performInOrder(actions) }
            // Cluster mode: over this node's encoding budget, another node may run it.
            Task {
                guard let host = await self.nodes.taskHost() else { return await self.performInOrder(actions) }
                let client = await self.taskClient(session)
                let anchors = await self.mixAnchors(in: client.user?.roomId)
                await self.performInOrder(
                    self.tasks.startFromClient(
                        target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, from: client, anchors: anchors, hostedOn: host.nodeId))
                await self.startHostedRunners()
            }
        case .updatePublishMediaStream(let taskId, let target, let encoderParam, let mixingConfig):
            await performInOrder(tasks.updateFromClient(taskId: taskId, target: target, encoderParam: encoderParam, mixingConfig: mixingConfig, from: client, now: .now))
        case .stopPublishMediaStream(let taskId):
            await performInOrder(tasks.stopFromClient(taskId: taskId, from: client))
        }
    }

    /// A session as the task API sees it.
    func taskClient(_ session: SessionID) async -> PublishTasksStateMachine.Client {
        let user = services.seats.seat(of: session).map { MixUser(userId: $0.userId, roomId: $0.roomId) }
        let role = await services.seats.room(of: session)?.read { $0.role(of: session) }
        return .init(session: session, user: user, isAnchor: role == .anchor)
    }

    /// `StartPublishCdnStream`: the room must exist. In cluster mode a task over this node's
    /// encoding budget runs on another node when one takes it.
    func startAdminTask(_ config: PublishTaskConfig, roomId: String) async throws(LiveRoomError) -> String {
        // Nil when the room does not exist; read again after waiting for another node.
        let seats = services.seats
        func anchors() async -> [MixAnchor]? { await seats.room(roomId)?.read { $0.describe(roomId) == nil ? nil : $0.mixAnchors(in: roomId) } ?? nil }
        let reply = AdminReply()
        let actions = tasks.startFromAdmin(config, roomId: roomId, anchors: await anchors(), reply: reply)
        guard nodes.mayHostTasks, Self.isBudgetRefusal(actions), let host = await nodes.taskHost() else {
            await performInOrder(actions)
            return try reply.result()
        }
        let hosted = AdminReply()
        await performInOrder(tasks.startFromAdmin(config, roomId: roomId, anchors: await anchors(), hostedOn: host.nodeId, reply: hosted))
        await startHostedRunners()
        return try hosted.result()
    }

    /// `UpdatePublishCdnStream`.
    func updateAdminTask(_ request: AdminPublishCdnStreamRequest) throws(LiveRoomError) {
        let reply = AdminReply()
        perform(tasks.updateFromAdmin(request, now: .now, reply: reply))
        _ = try reply.result()
    }

    /// `StopPublishCdnStream`.
    func stopAdminTask(_ taskId: String) throws(LiveRoomError) {
        let reply = AdminReply()
        perform(tasks.stopFromAdmin(taskId: taskId, reply: reply))
        _ = try reply.result()
    }

    // MARK: Reports

    /// Room `roomId` said its publishers may have changed: the task machine hears them if the
    /// room has tasks.
    func publishersChanged(in roomId: String, anchors: [MixAnchor]) {
        guard tasks.roomIds.contains(roomId) else { return }
        perform(tasks.anchorsChanged(in: roomId, anchors: anchors, now: .now))
    }

    /// Room `roomId` was dismissed (or moved to another node): its tasks end.
    func roomDismissed(_ roomId: String) {
        perform(tasks.roomDismissed(roomId))
    }

    /// The server stops: every task ends.
    func shutdown() {
        perform(tasks.shutdown())
    }

    /// The tasks whose runners run on this node.
    var runningHere: Int { runners.local.count + runners.hostedHere.count }

    /// The pixels a second this node's runners encode, as the budget counts them: its own
    /// tasks' and those it hosts for other nodes.
    var encodingHere: Int { tasks.encodingUsed + runners.hostedHere.values.reduce(0) { $0 + $1.cost } }

    /// The publishing anchors of a room as the layout sees them (none without a room).
    func mixAnchors(in roomId: String?) async -> [MixAnchor] {
        guard let roomId else { return [] }
        return await services.seats.room(roomId)?.read { $0.mixAnchors(in: roomId) } ?? []
    }

    func runnerReported(_ event: PublishTaskRunner.Event, taskId: String) {
        switch event {
        case .rtmpConnected(let url):
            perform(tasks.rtmpConnected(taskId, url: url))
        case .rtmpFailed(let url, let message):
            logger.warning("RTMP connection failed", metadata: [LogKey.task: "\(taskId)", LogKey.url: "\(url)", LogKey.error: "\(message)"])
            perform(tasks.rtmpFailed(taskId, url: url, message: message, now: .now))
        case .imageUnavailable(let url, let error):
            logger.warning("Image unavailable", metadata: [LogKey.task: "\(taskId)", LogKey.url: "\(url)", LogKey.error: "\(error.message)"])
            if let owner = tasks.task(taskId)?.session {
                send(.error(LiveRoomError(error.code, "task \(taskId): \(error.message)"), requestType: "startPublishMediaStream"), to: owner)
            }
        case .rtmpRefused(let url):
            logger.warning("RTMP destination refused by the egress policy", metadata: [LogKey.task: "\(taskId)", LogKey.url: "\(url)"])
            perform(tasks.rtmpRefused(taskId, url: url))
        case .encoding(let pixels):
            logger.info("Publish task encodes", metadata: [LogKey.task: "\(taskId)", "liveroom.pixelsPerSecond": "\(pixels)"])
            perform(tasks.encodingMeasured(taskId, pixelsPerSecond: pixels))
        }
    }

    private func timerFired(_ taskId: String) {
        perform(tasks.timerFired(taskId, now: .now))
    }

    // MARK: Actions

    /// ``perform(_:)``, then waits for the robots' entries it started, so that the answers to a
    /// connection's or an admin's requests come in the order of the requests.
    func performInOrder(_ actions: [PublishTasksStateMachine.Action]) async {
        for entry in perform(actions) { await entry.value }
    }

    /// Carries out the task machine's actions, and those they lead to. A room task's robot
    /// enters its room's actor meanwhile: the entries under way are returned, for a caller that
    /// answers in order to wait for (``performInOrder(_:)``).
    @discardableResult
    func perform(_ actions: [PublishTasksStateMachine.Action]) -> [Task<Void, Never>] {
        var entries: [Task<Void, Never>] = []
        for action in actions {
            switch action {
            case .startRunner(let taskId, let roomId, let config, let tap, let robot):
                entries += perform(startRunner(taskId: taskId, roomId: roomId, config: config, tap: tap, robot: robot))
            case .stopRunner(let taskId, let reason):
                runners.local.removeValue(forKey: taskId)?.stop()
                tellHost(of: taskId, .stop)
                runners.hostedElsewhere[taskId] = nil
                if let reason { logger.info("Publish task ended", metadata: [LogKey.task: "\(taskId)", LogKey.reason: "\(reason)"]) }
            case .connect(let taskId, let url):
                runners.local[taskId]?.connect(url: url)
                tellHost(of: taskId, .connect, url: url)
            case .disconnect(let taskId, let url):
                runners.local[taskId]?.disconnect(url: url)
                tellHost(of: taskId, .disconnect, url: url)
            case .applyConfig(let taskId, let config):
                runners.local[taskId]?.apply(config)
                tellHost(of: taskId, .apply, config: config)
            case .setAnchors(let taskId, let anchors):
                runners.local[taskId]?.setAnchors(anchors)
                tellHost(of: taskId, .anchors, anchors: anchors)
            case .setTap(let tap, let taskId, let publishers):
                if runners.hostedElsewhere[taskId] != nil {
                    sendInputs(publishers, of: taskId)
                } else {
                    setTap(tap, publishers: publishers, runner: runners.local[taskId])
                }
            case .enterRobot(let taskId, let robot, let hasVideo):
                entries.append(Task { await self.performInOrder(await self.enterRobot(robot, hasVideo: hasVideo, taskId: taskId)) })
            case .leaveRobot(_, let robot, let session):
                media?.stopLocal(SFURouter.PublisherKey(roomId: robot.roomId, userId: robot.userId))
                Task { await self.services.seats.room(robot.roomId)?.update { $0.handle(.exitRoom, from: session, at: .now()) } }
            case .reportState(let taskId, let url, let state, let owner):
                let (status, code, message) = state.report(retryCount: tasks.configuration.task.retryCount)
                logger.info("CDN stream state", metadata: [LogKey.task: "\(taskId)", LogKey.url: "\(url)", LogKey.state: "\(message)"])
                if let owner {
                    send(.onCdnStreamStateChanged(taskId: taskId, cdnUrl: url, status: status, code: code, message: message), to: owner)
                }
                if let webhooks, let roomId = tasks.task(taskId)?.roomId {
                    webhooks.enqueue([
                        WebhookEvents.cdnStreamStateChanged(
                            roomKey: roomId, taskId: taskId, url: url, status: status, code: code, message: message, at: EventTime.now().unixMillis)
                    ])
                }
            case .scheduleTimer(let taskId, let at):
                Task { [weak self] in
                    try? await Task.sleep(until: at, clock: .continuous)
                    await self?.timerFired(taskId)
                }
            case .answer(.admin(let reply), _, let taskId, let error):
                reply.fulfil(taskId: taskId, error: error)
            case .answer(.client(let session), let request, let taskId, let error):
                var (code, message) = (error?.code ?? 0, error?.message ?? "ok")
                // A config the mix runs differently than written (shared zOrders, rects past the canvas) says so.
                if error == nil, request != .stop, let config = tasks.task(taskId)?.config, let mix = config.mixingConfig, let canvas = config.encoderParam?.canvas {
                    let warnings = mix.warnings(canvas: canvas)
                    if !warnings.isEmpty { message = "ok; warning: " + warnings.joined(separator: "; ") }
                }
                let event: ServerEvent =
                    switch request {
                    case .start: .onStartPublishMediaStream(taskId: taskId, code: code, message: message)
                    case .update: .onUpdatePublishMediaStream(taskId: taskId, code: code, message: message)
                    case .stop: .onStopPublishMediaStream(taskId: taskId, code: code, message: message)
                    }
                send(event, to: session)
            }
        }
        return entries
    }

    /// Starts a task's runner; a room task's runner publishes as its robot.
    private func startRunner(taskId: String, roomId: String, config: PublishTaskConfig, tap: SFURouter.TapID, robot: MixUser?)
        -> [PublishTasksStateMachine.Action]
    {
        if let host = tasks.task(taskId)?.host {
            // Cluster mode: another node runs it (TaskHosting.swift), started once this call returns.
            guard robot == nil else {
                return tasks.runnerFailed(
                    taskId, error: LiveRoomError(ErrorCode.encodingBudgetExceeded, "a mix published into the room runs on the room's own node, which has no encoding budget left"))
            }
            runners.pendingHostedStarts.append((taskId, host))
            return []
        }
        guard let media else {
            return tasks.runnerFailed(taskId, error: LiveRoomError(ErrorCode.badSessionDescription, "the media port is not running"))
        }
        let onEvent: @Sendable (PublishTaskRunner.Event) -> Void = { [weak self] event in
            Task { await self?.runnerReported(event, taskId: taskId) }
        }
        do {
            let runner = try makeRunner(taskId: taskId, roomId: roomId, config: config, tap: tap, robot: robot, media: media, onEvent: onEvent)
            runners.local[taskId] = runner
            logger.info("Publish task started", metadata: [LogKey.task: "\(taskId)", LogKey.room: "\(roomId)", LogKey.mode: "\(config.target.mode.name)"])
            return tasks.runnerStarted(taskId, now: .now)
        } catch let error as LiveRoomError {
            return tasks.runnerFailed(taskId, error: error)
        } catch {
            return tasks.runnerFailed(taskId, error: LiveRoomError(ErrorCode.invalidVideoEncoding, "the task's encoders cannot start: \(error)"))
        }
    }

    /// A task's runner, fed by `tap` (a robot's mix published into its room as a local publisher).
    func makeRunner(
        taskId: String, roomId: String, config: PublishTaskConfig, tap: SFURouter.TapID, robot: MixUser?, media: any MediaPort,
        onEvent: @escaping @Sendable (PublishTaskRunner.Event) -> Void
    ) throws -> PublishTaskRunner {
        let logger = self.logger
        return try PublishTaskRunner(
            taskId: taskId, roomId: roomId, config: config, onEvent: onEvent,
            requestKeyframe: { user in media.requestKeyframe(for: tap, of: SFURouter.PublisherKey(roomId: user.roomId, userId: user.userId)) },
            roomOutput: robot.map { robot in
                let key = SFURouter.PublisherKey(roomId: robot.roomId, userId: robot.userId)
                return { packets in media.sendLocal(packets.map { (packet: $0.packet, kind: $0.kind == .audio ? MediaKind.audio : MediaKind.video) }, of: key) }
            },
            egress: egress, images: ImageLoader(directory: imageDirectory, egress: egress), log: { logger.info("\($0)", metadata: [LogKey.task: "\(taskId)"]) })
    }

    /// The robot user of a mixStreamToRoom task enters the room as an anchor and publishes
    /// the mix: everyone is told as for any anchor, and subscribes to it the same way.
    private func enterRobot(_ robot: MixUser, hasVideo: Bool, taskId: String) async -> [PublishTasksStateMachine.Action] {
        guard let hub else { return [] }
        if await services.seats.room(robot.roomId)?.read({ $0.session(of: robot.userId, in: robot.roomId) != nil }) == true {
            return tasks.robotRefused(taskId, .userPresent)
        }
        let session = await hub.newSession()
        let now = Int64(Date().timeIntervalSince1970)
        let sig = UserSig.make(
            sdkAppId: configuration.sdkAppId, secretKey: configuration.secretKey, identifier: robot.userId, time: now, expire: 86_400 * 365
        ).encoded()
        // The robot may enter its room and send there, never create it.
        let room = RoomID(key: robot.roomId)
        let key = configuration.requirePrivateMapKey
            ? PrivateMapKey.make(
                sdkAppId: configuration.sdkAppId, secretKey: configuration.secretKey, userId: robot.userId, room: room.privateMapKeyRoom,
                privileges: [.enterRoom, .sendAudio, .sendVideo], time: now, expire: 86_400 * 365) : ""
        let params = EnterRoomParams(
            sdkAppId: configuration.sdkAppId, userId: robot.userId, userSig: sig, room: room, role: .anchor, privateMapKey: key)
        switch await hub.enter(params, from: session) {
        case .refused(let error):
            return tasks.robotRefused(taskId, .refused(error))
        case .entered:
            let runner = runners.local[taskId]
            media?.publishLocal(SFURouter.PublisherKey(roomId: robot.roomId, userId: robot.userId), codecs: hasVideo ? [.h264, .opus] : [.opus]) {
                runner?.requestOutputKeyframe()
            }
            await services.seats.room(robot.roomId)?.update { $0.publishStarted(session, audio: true, video: hasVideo) }
            return tasks.robotEntered(taskId, session: session, now: .now)
        }
    }

    /// Points a task's tap at its inputs; their packets go to its runner.
    func setTap(_ tap: SFURouter.TapID, publishers: [MixUser], runner: PublishTaskRunner?) {
        let keys = Set(publishers.map { SFURouter.PublisherKey(roomId: $0.roomId, userId: $0.userId) })
        // PK anchors of rooms on other nodes come from this node's mirrors of them.
        var remote: [SFURouter.PublisherKey: TransportAddress] = [:]
        for key in keys {
            if case .success(let home)? = nodes.mediaAddress(ofHome: services.seats.home(ofLinked: key.roomId)) { remote[key] = home }
        }
        media?.mirror(for: tap, publishers: runner == nil ? [:] : remote)
        guard let runner, !keys.isEmpty else {
            media?.setTap(tap, publishers: [], sink: { _, _, _ in })
            return
        }
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
    }
}

extension RoomsStateMachine {
    /// The publishing anchors of a room as the layout sees them: its own, then the PK anchors
    /// of the rooms it is linked with (as far as its forward modes let them through).
    func mixAnchors(in roomId: String) -> [MixAnchor] {
        let own = publisherStates(in: roomId).map { (roomId: roomId, state: $0) }
        return (own + pkPublisherStates(in: roomId)).map { room, state in
            MixAnchor(
                user: MixUser(userId: state.userId, roomId: room), hasVideo: state.video, hasAudio: state.audio && !state.audioMuted,
                videoMuted: state.videoMuted)
        }
    }
}

