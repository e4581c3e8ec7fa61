import Foundation
import LiveRoomCluster
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomSFU
import LiveRoomTaskRunner
import LiveRoomWire

extension TaskHostMessage {
    /// A runner's event as a message to the task's home.
    static func event(_ event: PublishTaskRunner.Event, taskId: String, from node: String) -> TaskHostMessage {
        var message = TaskHostMessage(kind: .event, node: node, taskId: taskId)
        switch event {
        case .rtmpConnected(let url): (message.event, message.url) = ("rtmpConnected", url)
        case .rtmpFailed(let url, let text): (message.event, message.url, message.message) = ("rtmpFailed", url, text)
        case .rtmpRefused(let url): (message.event, message.url) = ("rtmpRefused", url)
        case .imageUnavailable(let url, let error): (message.event, message.url, message.message, message.code) = ("imageUnavailable", url, error.message, error.code)
        case .encoding(let pixels): (message.event, message.url, message.code) = ("encoding", "", pixels)
        }
        return message
    }

    /// The runner's event an `event` message carries.
    var runnerEvent: PublishTaskRunner.Event? {
        guard let url else { return nil }
        switch event {
        case "rtmpConnected": return .rtmpConnected(url: url)
        case "rtmpFailed": return .rtmpFailed(url: url, message: String((message ?? "").prefix(1024)))
        case "rtmpRefused": return .rtmpRefused(url: url)
        case "imageUnavailable": return .imageUnavailable(url: url, error: LiveRoomError(code ?? ErrorCode.imageUnavailable, String((message ?? "").prefix(1024))))
        case "encoding": return .encoding(pixelsPerSecond: min(max(0, code ?? 0), 1 << 40))
        default: return nil
        }
    }
}

/// A runner this node (T) runs for a task of a room on another node (H).
struct HostedTask {
    var home: String
    var runner: PublishTaskRunner
    var tap: SFURouter.TapID
    var cost: Int
}

extension RoomTasks {
    // MARK: On the room's home (H)

    /// Whether `actions` refuse a start for want of encoding budget.
    static func isBudgetRefusal(_ actions: [PublishTasksStateMachine.Action]) -> Bool {
        guard actions.count == 1, case .answer(_, .start, _, let error?) = actions[0] else { return false }
        return error.code == ErrorCode.encodingBudgetExceeded
    }

    /// Starts on their hosts the runners of tasks just started for other nodes: each host
    /// checks its own encoding budget; the task runs, or is refused with the host's reason.
    func startHostedRunners() async {
        let pending = runners.pendingHostedStarts
        runners.pendingHostedStarts = []
        for (taskId, host) in pending {
            guard let record = tasks.task(taskId), let node = nodes.known(host) else {
                perform(tasks.runnerFailed(taskId, error: LiveRoomError(ErrorCode.encodingBudgetExceeded, "no other node can run the task now")))
                continue
            }
            runners.hostedElsewhere[taskId] = host
            let start = TaskHostMessage(kind: .start, node: nodes.nodeId, taskId: taskId, roomId: record.roomId, config: record.config)
            let answer = await nodes.ask(node, .task(start))
            let code = answer.flatMap { try? JSONValue.parse($0.body) }?["ErrorCode"]?.intValue
            if answer?.status == 200, code == 0 {
                guard tasks.task(taskId) != nil, runners.hostedElsewhere[taskId] == host else {
                    // The task ended while its host started the runner (a stop sent meanwhile may
                    // have come first): stop it there again.
                    nodes.tell(host, .task(TaskHostMessage(kind: .stop, node: nodes.nodeId, taskId: taskId)))
                    continue
                }
                logger.info("Publish task runs on another node", metadata: [LogKey.task: "\(taskId)", LogKey.node: "\(host)"])
                perform(tasks.runnerStarted(taskId, now: .now))
            } else {
                runners.hostedElsewhere[taskId] = nil
                let reason = answer.flatMap { try? JSONValue.parse($0.body) }?["ErrorMessage"]?.stringValue ?? "node \(host) did not answer"
                perform(tasks.runnerFailed(taskId, error: LiveRoomError(code ?? ErrorCode.encodingBudgetExceeded, "node \(host): \(reason)")))
            }
        }
    }

    /// Sends the host of a task running elsewhere what its runner is to do, in order.
    func tellHost(of taskId: String, _ kind: TaskHostMessage.Kind, url: String? = nil, config: PublishTaskConfig? = nil, anchors: [MixAnchor]? = nil) {
        guard let host = runners.hostedElsewhere[taskId] else { return }
        var message = TaskHostMessage(kind: kind, node: nodes.nodeId, taskId: taskId, config: config, anchors: anchors)
        message.url = url
        nodes.tell(host, .task(message))
    }

    /// Tells a task's host its inputs and where each is mirrored from: this node for its own
    /// rooms' anchors, a linked room's home for a PK anchor.
    func sendInputs(_ publishers: [MixUser], of taskId: String) {
        guard let host = runners.hostedElsewhere[taskId] else { return }
        var inputs: [TaskHostMessage.Input] = []
        for user in publishers {
            if let node = services.seats.home(ofLinked: user.roomId), node != nodes.nodeId {
                guard let media = nodes.known(node)?.mediaAddresses.first else { continue }
                inputs.append(.init(roomKey: user.roomId, userId: user.userId, node: node, media: media))
            } else if let own = nodes.ownMediaAddress {
                inputs.append(.init(roomKey: user.roomId, userId: user.userId, node: nodes.nodeId, media: own))
            }
        }
        var message = TaskHostMessage(kind: .inputs, node: nodes.nodeId, taskId: taskId)
        message.inputs = inputs
        nodes.tell(host, .task(message))
    }

    /// The hosts of tasks running elsewhere that died: those tasks end (their owners hear why).
    func taskHostsAlive(_ alive: Set<String>) {
        for (taskId, host) in runners.hostedElsewhere where !alive.contains(host) {
            logger.warning("The node running a publish task died; the task ends", metadata: [LogKey.task: "\(taskId)", LogKey.node: "\(host)"])
            runners.hostedElsewhere[taskId] = nil
            if let owner = tasks.task(taskId)?.session {
                send(.error(LiveRoomError(ErrorCode.homeNodeUnreachable, "task \(taskId) ran on node \(host), which died; start it again"), requestType: "startPublishMediaStream"), to: owner)
            }
            perform(tasks.stopFromAdmin(taskId: taskId))
        }
        for (taskId, hosted) in runners.hostedHere where !alive.contains(hosted.home) { endHostedTask(taskId) }
    }

    // MARK: On the node running the runner (T)

    /// A `task` node message (``NodeMessage``, its relay token checked): its answer.
    func taskHostMessage(_ message: TaskHostMessage) async -> JSONValue {
        func refuse(_ code: Int, _ text: String) -> JSONValue { ["ErrorCode": .number(Double(code)), "ErrorMessage": .string(text)] }
        let ok: JSONValue = ["ErrorCode": 0, "ErrorMessage": ""]
        if message.kind == .event {
            // H: only from the node running the task.
            guard runners.hostedElsewhere[message.taskId] == message.node, let event = message.runnerEvent else {
                return refuse(ErrorCode.invalidParameter, "no task of this node runs on node \(message.node)")
            }
            runnerReported(event, taskId: message.taskId)
            return ok
        }
        if message.kind == .start {
            guard let home = await nodes.liveNode(message.node), let config = message.config, let roomId = message.roomId else {
                return refuse(ErrorCode.invalidParameter, "a task is started by a live node of the cluster, with its room and config")
            }
            if runners.hostedHere[message.taskId] != nil { return ok }
            guard config.target.mode.publishesToCdn else { return refuse(ErrorCode.invalidParameter, "only tasks that publish to CDNs run on another node") }
            guard encodingHere + config.encodingCost <= tasks.configuration.encodingBudget else {
                return refuse(ErrorCode.encodingBudgetExceeded, "this node has no encoding budget left for the task either")
            }
            guard let media else { return refuse(ErrorCode.badSessionDescription, "the media port is not running") }
            let tap = runners.nextHostedTap
            runners.nextHostedTap += 1
            let (taskId, node) = (message.taskId, nodes.nodeId)
            let onEvent: @Sendable (PublishTaskRunner.Event) -> Void = { [weak self] event in
                Task { await self?.hostedTaskReported(event, taskId: taskId, from: node) }
            }
            do {
                let runner = try makeRunner(taskId: taskId, roomId: roomId, config: config, tap: tap, robot: nil, media: media, onEvent: onEvent)
                runners.hostedHere[taskId] = HostedTask(home: home.nodeId, runner: runner, tap: tap, cost: config.encodingCost)
                logger.info("Publish task of another node started here", metadata: [LogKey.task: "\(taskId)", LogKey.node: "\(home.nodeId)"])
                return ok
            } catch let error as LiveRoomError {
                return refuse(error.code, error.message)
            } catch {
                return refuse(ErrorCode.invalidVideoEncoding, "the task's encoders cannot start: \(error)")
            }
        }
        guard let hosted = runners.hostedHere[message.taskId], hosted.home == message.node else {
            return refuse(ErrorCode.invalidParameter, "no task of node \(message.node) runs here")
        }
        switch message.kind {
        case .connect: if let url = message.url { hosted.runner.connect(url: url) }
        case .disconnect: if let url = message.url { hosted.runner.disconnect(url: url) }
        case .apply: if let config = message.config { hosted.runner.apply(config) }
        case .anchors: if let anchors = message.anchors { hosted.runner.setAnchors(anchors) }
        case .inputs:
            let inputs = message.inputs ?? []
            var mirrored: [SFURouter.PublisherKey: TransportAddress] = [:]
            for input in inputs where input.node != nodes.nodeId {
                if let address = NodeMediaRelay.address(input.media) { mirrored[SFURouter.PublisherKey(roomId: input.roomKey, userId: input.userId)] = address }
            }
            setTap(hosted.tap, publishers: inputs.map { MixUser(userId: $0.userId, roomId: $0.roomKey) }, runner: hosted.runner)
            media?.mirror(for: hosted.tap, publishers: mirrored)
        case .stop: endHostedTask(message.taskId)
        case .start, .event: break
        }
        return ok
    }

    /// A hosted runner's event, for the task's home.
    private func hostedTaskReported(_ event: PublishTaskRunner.Event, taskId: String, from node: String) {
        guard let hosted = runners.hostedHere[taskId] else { return }
        // This node's budget counts what the runner it hosts really encodes, as the home does.
        if case .encoding(let pixels) = event { runners.hostedHere[taskId]?.cost = pixels }
        nodes.tell(hosted.home, .task(TaskHostMessage.event(event, taskId: taskId, from: node)))
    }

    /// Stops a hosted runner: its tap, its mirrors, its encoders and connections.
    func endHostedTask(_ taskId: String) {
        guard let hosted = runners.hostedHere.removeValue(forKey: taskId) else { return }
        media?.setTap(hosted.tap, publishers: [], sink: { _, _, _ in })
        media?.mirror(for: hosted.tap, publishers: [:])
        hosted.runner.stop()
        logger.info("Publish task of another node stopped here", metadata: [LogKey.task: "\(taskId)", LogKey.node: "\(hosted.home)"])
    }
}
