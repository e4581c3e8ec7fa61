import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomWebhooks
import Logging
import NIOCore
import NIOPosix

/// Owns the room state machine and the open connections, and carries out the machine's
/// actions: messages go to connection outboxes, records to the history recorder.
///
/// The hub runs on a thread of its own (``executorLoop``), not in the shared pool of Swift
/// tasks: a burst of work there (a flash sale's thousands of purchases and answers) does not
/// queue ahead of every room's requests.
actor RoomHub {
    /// One thread for the hubs of the process (a server has one; tests make several), named
    /// `liveroom-hub` so that tools such as `top -H` and shop-bench can tell it apart.
    static let executorLoop: any EventLoop = {
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()
        loop.execute { Thread.current.name = "liveroom-hub" }
        return loop
    }()
    nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executorLoop.executor.asUnownedSerialExecutor() }

    var machine: RoomsStateMachine
    /// Publish media stream tasks (PublishTasks.swift carries out their actions).
    var tasks: PublishTasksStateMachine
    /// What the hub was given to work with, fixed at start.
    let services: HubServices
    let logger: Logger
    private(set) var media: (any MediaPort)?
    /// The signaling connections' outboxes and the next session id.
    var connections: Connections
    /// WHEP sessions that are not a signaling session's own (RoomHub+HTTPSessions.swift, RemotePlayback.swift).
    var httpSessions = HTTPSessions()
    /// The runners of publish tasks: here, and in cluster mode on other nodes (TaskHosting.swift).
    var taskRunners = TaskRunners()
    /// The other nodes (cluster mode), or none.
    private(set) var nodes: any OtherNodes = SingleNode()

    /// `tasksConfiguration`'s task id prefix is replaced by a random one per server run, so
    /// task ids stay unique across restarts; in cluster mode it begins with `nodeId` and `~`,
    /// so that an admin call naming the task reaches the node running it through any node.
    /// (HubState.swift has the initialiser that makes the services from their settings.)
    init(
        services: HubServices, configuration: RoomsStateMachine.Configuration, tasksConfiguration: PublishTasksStateMachine.Configuration,
        connections: Connections, nodeId: String?, logger: Logger
    ) {
        self.services = services
        self.connections = connections
        self.machine = RoomsStateMachine(configuration: configuration)
        var tasksConfiguration = tasksConfiguration
        tasksConfiguration.taskIdPrefix = (nodeId.map { ClusterForwarding.taskIdPrefix(node: $0) } ?? "") + String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 36) + "-"
        self.tasks = PublishTasksStateMachine(configuration: tasksConfiguration)
        self.logger = logger
    }

    // What the hub was given, by name.
    var recorder: RoomRecorder { services.recorder }
    var webhooks: WebhookService? { services.webhooks }
    var catalogue: (any ShopStore)? { services.catalogue }
    nonisolated var shops: RoomShops { services.shops }
    nonisolated var seats: Seats { services.seats }
    var imageDirectory: String? { services.imageDirectory }
    nonisolated var replays: ReplayRecorder { services.replays }
    nonisolated var battles: PKBattles { services.battles }

    var sdkAppId: UInt64 { machine.configuration.sdkAppId }

    /// Joins the other nodes of a cluster: rooms that empty here are released for their next
    /// enter, PK links, tasks and WHEP sessions may span nodes.
    func attach(_ nodes: any OtherNodes) {
        self.nodes = nodes
    }

    /// The keys of the rooms held here now.
    func roomKeys() -> [String] {
        Array(machine.roomIds)
    }

    /// Connects the media port; until then media requests get an error and no replay is recorded.
    func attach(_ media: any MediaPort) async {
        self.media = media
        await replays.attach(media) { [weak self] product, roomId in await self?.productChanged(product, in: roomId) }
    }

    /// A new session id (a connection, a WHIP/WHEP client, a task's robot user).
    func newSession() -> SessionID {
        defer { connections.nextSession += 1 }
        return connections.nextSession
    }

    /// Registers a new signaling connection.
    func connect() -> (SessionID, ConnectionOutbox) {
        let session = newSession()
        let outbox = ConnectionOutbox(maxBytes: connections.maxOutboxBytes)
        connections.outboxes[session] = outbox
        return (session, outbox)
    }

    /// Whether the connection is in a room now.
    func isInRoom(_ session: SessionID) -> Bool {
        machine.membership(of: session) != nil
    }

    /// The connection closed: leave its room, drop its outbox.
    func disconnect(_ session: SessionID) {
        execute(machine.disconnected(session, at: .now()))
        connections.outboxes.removeValue(forKey: session)?.close()
        connections.relayed.remove(session)
        connections.relayRequests = connections.relayRequests.filter { $0.value.session != session }
    }

    /// The connection dropped without exitRoom (a network change, a dead link): its user keeps
    /// the seat and its media for the reconnect grace, as TRTC's SDKs reconnect and resume; the
    /// room hears nothing unless the grace runs out. A re-entry by the same user in that time
    /// takes the seat over as any newer session does.
    func connectionLost(_ session: SessionID) {
        connections.outboxes[session]?.close()
        guard connections.reconnectGrace > .zero, let (roomId, userId) = machine.membership(of: session) else { return disconnect(session) }
        logger.info("Signaling connection lost; seat kept for a reconnect", metadata: [LogKey.session: "\(session)", LogKey.room: "\(roomId)", LogKey.user: "\(userId)"])
        let grace = connections.reconnectGrace
        Task { [weak self] in
            try? await Task.sleep(for: grace)
            await self?.disconnect(session)
        }
    }

    /// One request from a connection (parsed there, off the hub).
    func receive(_ request: SignalingRequest, from session: SessionID, connectedAt: ContinuousClock.Instant) {
        switch request {
        case .room(let request):
            let now = EventTime.now()
            let elapsedMs = Int((now.monotonic - connectedAt).ticks(rate: 1000))
            let wasIn = machine.membership(of: session) != nil
            execute(machine.handle(request, from: session, elapsedMs: elapsedMs, at: now))
            // A newcomer gets the room's current pop-up right after onEnterRoom.
            if case .enterRoom = request, !wasIn, let (roomId, _) = machine.membership(of: session) { sendPopUp(to: session, roomId: roomId) }
        case .publishTask(let request):
            handlePublishTaskRequest(request, from: session)
        }
    }

    /// Tells a connection about an error that is not a request's (e.g. a binary frame).
    func send(_ event: ServerEvent, to session: SessionID) {
        connections.outboxes[session]?.push(event.json.jsonText, priority: .normal)
    }

    /// Sends one event to many sessions, encoded once.
    func send(_ event: ServerEvent, to sessions: [SessionID]) {
        guard !sessions.isEmpty else { return }
        let text = event.json.jsonText
        for session in sessions { connections.outboxes[session]?.push(text, priority: .normal) }
    }

    // MARK: Admin

    func dismissRoom(_ roomId: String) throws(LiveRoomError) {
        execute(try machine.dismissRoom(roomId, at: .now()))
        perform(tasks.roomDismissed(roomId))
    }

    func removeUsers(_ userIds: [String], from roomId: String) throws(LiveRoomError) -> [String] {
        let (actions, notFound) = try machine.removeUsers(userIds, from: roomId, at: .now())
        execute(actions)
        return notFound
    }

    func sendGroupMessage(_ data: String, to roomId: String, priority: MessagePriority) throws(LiveRoomError) {
        execute(try machine.sendGroupMessage(data, to: roomId, priority: priority))
    }

    func describe(_ roomId: String) -> RoomSnapshot? {
        machine.describe(roomId)
    }

    /// Counts for `GET /metrics`.
    func metricsSnapshot() -> ServerMetrics.Rooms {
        let population = machine.population
        return ServerMetrics.Rooms(
            rooms: machine.roomIds.count, users: population.users, publishers: population.publishers,
            signalingConnections: connections.outboxes.count, publishTasks: taskRunners.local.count + taskRunners.hostedHere.count)
    }

    /// The room lives on another node (it was opened here while the cluster database could not
    /// be reached): each connection in it is told -7024 and closed, so that its client
    /// reconnects and reaches the room's home; WHIP/WHEP sessions and the room's tasks end.
    func moveOut(_ roomId: String) {
        logger.warning("Room lives on another node; its connections here are closed", metadata: [LogKey.room: "\(roomId)"])
        perform(tasks.roomDismissed(roomId))
        for session in machine.sessions(in: roomId) {
            if let outbox = connections.outboxes[session] {
                send(.error(LiveRoomError(ErrorCode.roomMovedToAnotherNode, "the room lives on another node; reconnect to reach it")), to: session)
                outbox.hangUp(reason: "the room lives on another node")
            } else {
                leaveForHTTP(session)
            }
        }
    }

    /// Tells every connection the server is going away: each user in a room gets onExitRoom(2).
    func shutdown() {
        perform(tasks.shutdown())
        for roomId in machine.roomIds {
            _ = try? dismissRoom(roomId)
        }
        for outbox in connections.outboxes.values { outbox.close() }
    }

    func execute(_ actions: [RoomsStateMachine.Action]) {
        var records: [RoomRecord] = []
        // A room's broadcast is one event to many sessions in a row: encoded once.
        var encoded: (event: ServerEvent, text: String)?
        for action in actions {
            switch action {
            case .send(let session, let event, let priority):
                if encoded?.event != event { encoded = (event, event.json.jsonText) }
                connections.outboxes[session]?.push(encoded!.text, priority: priority)
            case .record(let record):
                records.append(record)
            case .media(let command):
                carryOut(command)
            case .catalogue(let command):
                carryOut(command)
            case .battle(let command):
                Task { await battles.start(command, for: self) }
            case .pkPeer(let command):
                carryOut(command)
            }
        }
        recorder.record(records)
        seats.apply(machine.takeSeatChanges())
        for case .roomDissolved(let roomId, _, _) in records {
            shops.remove(roomId)
            nodes.roomEmptied(roomId)
        }
        if let webhooks, !records.isEmpty {
            webhooks.enqueue(WebhookEvents.events(from: records, now: EventTime.now().unixMillis))
        }
        publishersChanged(in: machine.roomsWithPublisherNews(in: actions))
    }
}

extension EventTime {
    static func now() -> EventTime {
        EventTime(monotonic: .now, unixMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
    }
}
