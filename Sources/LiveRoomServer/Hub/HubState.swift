import LiveRoomCommerce
import LiveRoomCore
import LiveRoomPublishTasks
import LiveRoomTaskRunner
import Logging

// The hub's state in parts, each kept by the file that works with it.

/// What the hub is given at start and never changes.
struct HubServices: Sendable {
    let recorder: RoomRecorder
    /// Where webhook events go; nil when no webhook URL is set.
    let webhooks: WebhookService?
    /// Rooms' catalogues and orders; nil serves none.
    let catalogue: (any ShopStore)?
    /// The rooms' shops: purchases and what the rooms hear of their catalogues (RoomShops.swift).
    let shops: RoomShops
    /// Who sits in which room, and the rooms' actors, for connections to read without asking the hub.
    let seats = Seats()
    /// The signaling connections' outboxes, which the hub and the rooms write to.
    let outboxes = Outboxes()
    /// Where publish tasks may connect.
    let egress: EgressResolver
    /// The operator's image directory, the only place tasks may name image files in.
    let imageDirectory: String?
    /// The replays being recorded (Replays.swift).
    let replays: ReplayRecorder
    /// The PK battles running (Battles.swift).
    let battles: PKBattles
}

extension RoomHub {
    /// A hub whose services are made from their settings (the server's, and the tests' with
    /// the defaults here).
    init(
        configuration: RoomsStateMachine.Configuration, tasksConfiguration: PublishTasksStateMachine.Configuration = .init(),
        egress: EgressResolver = EgressResolver(policy: EgressPolicy()), imageDirectory: String? = nil, maxOutboxBytes: Int = 4 << 20,
        reconnectGrace: Duration = .zero, catalogue: (any ShopStore)? = nil, orderReservation: Duration = .seconds(900),
        replayDirectory: String? = nil, maxReplayLength: Duration = .seconds(600), recorder: RoomRecorder, webhooks: WebhookService? = nil,
        nodeId: String? = nil, logger: Logger
    ) {
        let services = HubServices(
            recorder: recorder, webhooks: webhooks, catalogue: catalogue,
            shops: RoomShops(store: catalogue, reservation: orderReservation, webhooks: webhooks), egress: egress, imageDirectory: imageDirectory,
            replays: ReplayRecorder(directory: replayDirectory, maxLength: maxReplayLength, store: catalogue, logger: logger),
            battles: PKBattles(store: catalogue, webhooks: webhooks, logger: logger))
        self.init(
            services: services, configuration: configuration, tasksConfiguration: tasksConfiguration,
            connections: Connections(maxOutboxBytes: maxOutboxBytes, reconnectGrace: reconnectGrace), nodeId: nodeId, logger: logger)
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
    /// Connections another node relays here (cluster mode): that node makes their
    /// subscriptions (RoomHub+Media.swift).
    var relayed: Set<SessionID> = []
    /// Subscriptions asked of a relaying node and not yet answered, by request id.
    var relayRequests: [Int: (session: SessionID, publisherId: String, restart: Bool)] = [:]
    var nextRelayRequest = 1
}

/// WHEP sessions that are not simply a session of their own in the room.
struct HTTPSessions {
    /// WHEP sessions attached to signaling sessions, by resource id (RoomHub+HTTPSessions.swift).
    var attached: [SessionID: RoomHub.AttachedPlayback] = [:]
    /// Cluster mode, on a room's home: WHEP sessions here whose media another node makes.
    var mediaNodes: [SessionID: RemotePlayback.MediaNode] = [:]
    /// Cluster mode, on the node a WHEP client reached: its peer connections whose session
    /// (the seat in the room) is on the room's home, by owner.
    var remote: [UInt64: RemotePlayback] = [:]
}
