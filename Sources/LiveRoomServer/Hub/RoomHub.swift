import Foundation
import LiveRoomCore
import LiveRoomProtocol
import Logging
import NIOCore
import NIOPosix

/// The directory of this node's rooms (``Room``, one actor each) and what spans them: it admits
/// enters under the server's limits, routes what concerns a room to its actor, carries messages
/// between rooms (PKPeers.swift), hands the shops a room's catalogue commands and the battles its
/// battle commands, and tells the rooms' publish tasks (``RoomTasks``, beside it) their
/// publishers. A room hands its media commands to ``MediaSessions`` itself.
///
/// The hub runs on a thread of its own (``executorLoop``), not in the shared pool of Swift
/// tasks; the rooms run on their lanes, so a busy room delays neither the hub nor another room.
actor RoomHub {
    /// One thread for the hubs of the process (a server has one; tests make several), named
    /// `liveroom-hub` so that tools such as `top -H` and shop-bench can tell it apart.
    static let executorLoop: any EventLoop = {
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()
        loop.execute { Thread.current.name = "liveroom-hub" }
        return loop
    }()
    nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executorLoop.executor.asUnownedSerialExecutor() }

    /// The rooms here.
    var rooms: LocalRooms
    /// The rooms' publish media stream tasks.
    let tasks: RoomTasks
    /// What the hub, the rooms and the tasks work with, fixed at start.
    let services: HubServices
    let logger: Logger
    /// The signaling connections' next session id and settings.
    var connections: Connections
    /// The other nodes (cluster mode), or none.
    private(set) var nodes: any OtherNodes = SingleNode()

    init(services: HubServices, logger: Logger) {
        self.services = services
        connections = Connections(maxOutboxBytes: services.settings.maxOutboxBytes, reconnectGrace: services.settings.reconnectGrace)
        rooms = LocalRooms(template: RoomsStateMachine(configuration: services.settings.rooms))
        tasks = RoomTasks(services: services, logger: logger)
        self.logger = logger
    }

    // What the hub was given, by name.
    nonisolated var mediaSessions: MediaSessions { services.media }
    nonisolated var shops: RoomShops { services.shops }
    nonisolated var seats: Seats { services.seats }
    nonisolated var outboxes: Outboxes { services.outboxes }
    nonisolated var battles: PKBattles { services.battles }


    /// Joins the other nodes of a cluster: rooms that empty here are released for their next
    /// enter, PK links, tasks and WHEP sessions may span nodes.
    func attach(_ nodes: any OtherNodes) async {
        self.nodes = nodes
        await mediaSessions.attach(nodes)
        await tasks.attach(nodes)
    }

    /// The keys of the rooms held here now.
    func roomKeys() -> [String] {
        Array(rooms.byKey.keys)
    }

    /// The actor of room `key`, if it is here.
    func room(_ key: String) -> Room? {
        rooms.byKey[key]
    }

    /// Connects the media port; until then media requests get an error and no replay is recorded.
    func attach(_ media: any MediaPort) async {
        await mediaSessions.attach(media, hub: self)
        await tasks.attach(self, media: media)
        await services.replays.attach(media) { [shops] product, roomId in shops.productChanged(product, in: roomId) }
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
        outboxes.add(outbox, for: session)
        return (session, outbox)
    }

    /// Whether the connection is in a room now.
    nonisolated func isInRoom(_ session: SessionID) -> Bool {
        seats.seat(of: session) != nil
    }

    /// The connection closed: leave its room, drop its outbox.
    func disconnect(_ session: SessionID) async {
        let room = seats.room(of: session)
        await room?.update { $0.disconnected(session, at: .now()) }
        await mediaSessions.disconnected(session, inRoom: room != nil)
        outboxes.remove(session)?.close()
    }

    /// The connection dropped without exitRoom (a network change, a dead link): its user keeps
    /// the seat and its media for the reconnect grace, as TRTC's SDKs reconnect and resume; the
    /// room hears nothing unless the grace runs out. A re-entry by the same user in that time
    /// takes the seat over as any newer session does.
    func connectionLost(_ session: SessionID) async {
        outboxes[session]?.close()
        guard connections.reconnectGrace > .zero, let (roomId, userId) = seats.seat(of: session) else { return await disconnect(session) }
        logger.info("Signaling connection lost; seat kept for a reconnect", metadata: [LogKey.session: "\(session)", LogKey.room: "\(roomId)", LogKey.user: "\(userId)"])
        let grace = connections.reconnectGrace
        Task { [weak self] in
            try? await Task.sleep(for: grace)
            await self?.disconnect(session)
        }
    }

    /// One request from a connection that is not in a room, or enters one (a member's other
    /// requests go to its room's actor directly; publish task requests come here).
    func receive(_ request: SignalingRequest, from session: SessionID, connectedAt: ContinuousClock.Instant) async {
        switch request {
        case .room(.enterRoom(let params)):
            let elapsedMs = Int((ContinuousClock.now - connectedAt).ticks(rate: 1000))
            switch await enter(params, from: session, elapsedMs: elapsedMs) {
            case .refused(let error):
                send(.onEnterRoom(result: error.code, errMsg: error.message), to: session)
                send(.error(error, requestType: "enterRoom"), to: session)
            case .entered:
                // A newcomer gets the room's current pop-up right after onEnterRoom.
                shops.sendPopUp(to: session, roomId: params.room.key)
            }
        case .room(let request):
            if let room = seats.room(of: session) {
                await room.receive(request, from: session, elapsedMs: Int((ContinuousClock.now - connectedAt).ticks(rate: 1000)))
            } else if case .exitRoom = request {
                send(.onExitRoom(reason: 0), to: session)
            } else {
                send(.error(LiveRoomError(ErrorCode.notInRoom, "enter a room first"), requestType: request.type), to: session)
            }
        case .publishTask(let request):
            await tasks.handle(request, from: session)
        }
    }

    /// `session` enters a room (a signaling connection, a WHIP/WHEP client, a task's robot
    /// user) under the server's limits: a connection in one room at a time, a user in at most
    /// `maxRoomsPerUser` rooms, at most `maxRooms` rooms. The room checks the rest.
    func enter(_ params: EnterRoomParams, from session: SessionID, elapsedMs: Int = 0) async -> RoomsStateMachine.EnterOutcome {
        let key = params.room.key
        do throws(LiveRoomError) {
            if let current = seats.seat(of: session) { throw RoomsStateMachine.alreadyIn(current.roomId) }
            try rooms.template.validate(params, now: EventTime.now().unixSeconds)
        } catch {
            return .refused(error)
        }
        // A room that closes while the enter reaches it is made anew (at most twice).
        for _ in 0..<3 {
            // The user's rooms, with those it is entering now; entering one of them again keeps the count.
            let userRooms = seats.rooms(of: params.userId).union(rooms.entering.rooms(of: params.userId))
            do throws(LiveRoomError) {
                try rooms.template.checkServerLimits(
                    userId: params.userId, inRooms: userRooms.contains(key) ? nil : userRooms.count, newRoom: rooms.byKey[key] == nil,
                    rooms: rooms.byKey.count)
            } catch {
                return .refused(error)
            }
            let room = rooms.byKey[key] ?? open(key)
            rooms.entering.count(params.userId, in: key, by: 1)
            let outcome = await room.enter(params, from: session, elapsedMs: elapsedMs)
            rooms.entering.count(params.userId, in: key, by: -1)
            guard let outcome else {
                closed(room)
                continue
            }
            if case .refused = outcome, await room.closeIfEmpty() { closed(room) }
            return outcome
        }
        return .refused(LiveRoomError(ErrorCode.enterRoomRefused, "\(params.room) closed while you entered; enter again"))
    }

    /// A new room's actor.
    private func open(_ key: String) -> Room {
        let room = Room(key: key, hub: self, services: services)
        rooms.byKey[key] = room
        seats.add(room)
        return room
    }

    /// Room `room` closed: the next enter of its key makes a new one. A room that `emptied`
    /// (its last member left, or it was dismissed) also gives up its shop's state and, in a
    /// cluster, its home, unless a new room of its key is already open here.
    func closed(_ room: Room, emptied: Bool = false) {
        if rooms.byKey[room.key] === room {
            rooms.byKey[room.key] = nil
            seats.release(room)
        }
        guard emptied, rooms.byKey[room.key] == nil else { return }
        shops.remove(room.key)
        nodes.roomEmptied(room.key)
    }

    /// Tells a connection about an error that is not a request's (e.g. a binary frame).
    func send(_ event: ServerEvent, to session: SessionID) {
        outboxes.send(event, to: [session])
    }

    // MARK: Admin

    /// The room named by an admin call, or -100013 when it is not here.
    private func existing(_ roomId: String) throws(LiveRoomError) -> Room {
        guard let room = rooms.byKey[roomId] else { throw RoomsStateMachine.noSuchRoom(roomId) }
        return room
    }

    func dismissRoom(_ roomId: String) async throws(LiveRoomError) {
        try await existing(roomId).update { machine throws(LiveRoomError) in ((), try machine.dismissRoom(roomId, at: .now())) }
        await tasks.roomDismissed(roomId)
    }

    func removeUsers(_ userIds: [String], from roomId: String) async throws(LiveRoomError) -> [String] {
        try await existing(roomId).update { machine throws(LiveRoomError) in
            let (actions, notFound) = try machine.removeUsers(userIds, from: roomId, at: .now())
            return (notFound, actions)
        }
    }

    /// The admin API's SetPKAllowList for an open room.
    func setPKAllowList(_ allowed: [RoomID], in roomId: String) async throws(LiveRoomError) {
        try await existing(roomId).update { machine in machine.setPKAllowList(allowed, in: roomId) }
    }

    func sendGroupMessage(_ data: String, to roomId: String, priority: MessagePriority) async throws(LiveRoomError) {
        try await existing(roomId).update { machine throws(LiveRoomError) in ((), try machine.sendGroupMessage(data, to: roomId, priority: priority)) }
    }

    func describe(_ roomId: String) async -> RoomSnapshot? {
        await rooms.byKey[roomId]?.read { $0.describe(roomId) }
    }

    /// Counts for `GET /metrics`.
    func metricsSnapshot() async -> ServerMetrics.Rooms {
        var users = 0, publishers = 0, open = 0
        for room in rooms.byKey.values {
            let population = await room.read { ($0.population, $0.roomIds.count) }
            users += population.0.users
            publishers += population.0.publishers
            open += population.1
        }
        return ServerMetrics.Rooms(
            rooms: open, users: users, publishers: publishers, signalingConnections: outboxes.count,
            publishTasks: await tasks.runningHere, encodingPixelsPerSecond: await tasks.encodingHere)
    }

    /// The room lives on another node (it was opened here while the cluster database could not
    /// be reached): each connection in it is told -7024 and closed, so that its client
    /// reconnects and reaches the room's home; WHIP/WHEP sessions and the room's tasks end.
    func moveOut(_ roomId: String) async {
        logger.warning("Room lives on another node; its connections here are closed", metadata: [LogKey.room: "\(roomId)"])
        await tasks.roomDismissed(roomId)
        for session in await rooms.byKey[roomId]?.read({ $0.sessions(in: roomId) }) ?? [] {
            if let outbox = outboxes[session] {
                send(.error(LiveRoomError(ErrorCode.roomMovedToAnotherNode, "the room lives on another node; reconnect to reach it")), to: session)
                outbox.hangUp(reason: "the room lives on another node")
            } else {
                await mediaSessions.leaveForHTTP(session)
            }
        }
    }

    /// Tells every connection the server is going away: each user in a room gets onExitRoom(2).
    func shutdown() async {
        await tasks.shutdown()
        for roomId in rooms.byKey.keys.sorted() {
            try? await dismissRoom(roomId)
        }
        for outbox in outboxes.all { outbox.close() }
    }

    /// What a room handed over after an event: carried out in the order it came.
    func carryOut(_ work: RoomWork, from room: Room) async {
        for command in work.catalogue { shops.carryOut(command) }
        for command in work.battles { Task { await battles.start(command, for: self) } }
        if let publishers = work.publishers {
            seats.setLinkedHomes(of: room.key, publishers.homes)
            await tasks.publishersChanged(in: room.key, anchors: publishers.anchors)
        }
        if work.closed { closed(room, emptied: true) }
        for command in work.peers { await carryOut(command, from: room) }
    }
}

/// The rooms of this node, by key, and what their directory keeps.
struct LocalRooms {
    /// The rooms' settings; its machine holds no room (it checks enters before they reach a room).
    let template: RoomsStateMachine
    var byKey: [String: Room] = [:]
    /// Enters on their way to a room, by user and room (counted among the user's rooms meanwhile).
    var entering = UserRooms()
}

/// The signaling connections.
struct Connections {
    var nextSession: SessionID = 1
    /// The most bytes of messages that may wait for one connection.
    let maxOutboxBytes: Int
    /// How long a dropped signaling connection's user keeps its seat.
    let reconnectGrace: Duration
}

extension EventTime {
    static func now() -> EventTime {
        EventTime(monotonic: .now, unixMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
    }
}
