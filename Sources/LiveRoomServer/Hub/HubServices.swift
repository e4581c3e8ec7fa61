import LiveRoomCommerce
import LiveRoomCore
import LiveRoomPublishTasks
import LiveRoomTaskRunner
import Logging

/// What a hub is made from: the settings of its rooms, their publish tasks, shops and
/// connections (the server's, and the tests' with the defaults here).
struct HubSettings: Sendable {
    var rooms: RoomsStateMachine.Configuration
    var tasks = PublishTasksStateMachine.Configuration()
    /// Where publish tasks may connect.
    var egress = EgressResolver(policy: EgressPolicy())
    /// The operator's image directory, the only place tasks may name image files in.
    var imageDirectory: String?
    /// The most bytes of messages that may wait for one connection.
    var maxOutboxBytes = 4 << 20
    /// How long a dropped signaling connection's user keeps its seat.
    var reconnectGrace: Duration = .zero
    /// How long an unpaid order holds its stock.
    var orderReservation: Duration = .seconds(900)
    /// Most purchases waiting for the store in one room, and in all.
    var maxWaitingPurchasesPerRoom = 4_000
    var maxWaitingPurchases = 16_000
    /// Where replays are written; nil records none.
    var replayDirectory: String?
    var maxReplayLength: Duration = .seconds(600)
    /// The most bytes the replays of all rooms may take on disk.
    var replayDiskQuota = ReplayRecorder.defaultDiskQuota
    /// This node's id in a cluster.
    var nodeId: String?
}

/// What the hub, the rooms and the tasks work with, made at start and never changed.
struct HubServices: Sendable {
    let settings: HubSettings
    let recorder: RoomRecorder
    /// Where webhook events go; nil when no webhook URL is set.
    let webhooks: WebhookService?
    /// Who sits in which room, and the rooms' actors, for connections to read without asking the hub.
    let seats = Seats()
    /// The signaling connections' outboxes, which the hub and the rooms write to.
    let outboxes = Outboxes()
    /// The rooms' media and the WHIP/WHEP sessions (MediaSessions.swift).
    let media: MediaSessions
    /// The rooms' shops: their catalogue commands and purchases (RoomShops.swift, Catalogue.swift).
    let shops: RoomShops
    /// The replays being recorded (Replays.swift).
    let replays: ReplayRecorder
    /// The PK battles running (Battles.swift).
    let battles: PKBattles

    /// Services made from `settings`; `catalogue` keeps rooms' catalogues and orders (nil serves none).
    init(settings: HubSettings, catalogue: (any ShopStore)? = nil, recorder: RoomRecorder, webhooks: WebhookService? = nil, logger: Logger) {
        self.settings = settings
        self.recorder = recorder
        self.webhooks = webhooks
        media = MediaSessions(configuration: settings.rooms, seats: seats, outboxes: outboxes)
        replays = ReplayRecorder(
            directory: settings.replayDirectory, maxLength: settings.maxReplayLength, diskQuota: settings.replayDiskQuota, store: catalogue, logger: logger)
        shops = RoomShops(
            store: catalogue, reservation: settings.orderReservation, webhooks: webhooks, seats: seats, outboxes: outboxes, replays: replays,
            waiting: WaitingPurchases(maxPerRoom: settings.maxWaitingPurchasesPerRoom, max: settings.maxWaitingPurchases), logger: logger)
        battles = PKBattles(store: catalogue, webhooks: webhooks, logger: logger)
    }
}
