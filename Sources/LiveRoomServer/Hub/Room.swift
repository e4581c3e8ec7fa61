import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomWebhooks

/// One live room of this node: a rooms machine of its own that holds this room only, run one
/// event at a time on a lane of its own (``RoomLane``), apart from every other room and beside
/// the lane where its connections' frames are handled. Another room is reached by message
/// (``PKPeerCommand``), on this node as on another.
///
/// The room carries out what concerns it alone (its members' messages, its records and seats,
/// its webhooks), hands its media commands to ``MediaSessions``, and hands the hub what spans
/// the node (``RoomWork``): catalogue commands, battles, messages for other rooms, and its
/// publishers when they change.
actor Room {
    let key: String
    /// Runs the actor's jobs on a lane of their own.
    let executor = RoomActorExecutor()
    nonisolated var lane: RoomLane { executor.lane }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var machine: RoomsStateMachine
    private weak var hub: RoomHub?
    private let services: HubServices
    /// Nobody is in the room any more (it emptied, was dismissed, or its first enter was
    /// refused): an enter that still reaches it goes to a new actor instead.
    private(set) var closed = false
    /// The publishers (as a mix sees them) and linked rooms' nodes the hub last heard of.
    private var told = RoomPublishers(anchors: [], homes: [:])

    init(key: String, hub: RoomHub, services: HubServices) {
        self.key = key
        var configuration = services.settings.rooms
        configuration.roomsOnOtherNodes = true
        machine = RoomsStateMachine(configuration: configuration)
        self.hub = hub
        self.services = services
    }

    /// Reads the room's machine.
    func read<T: Sendable>(_ body: @Sendable (RoomsStateMachine) -> T) -> T {
        body(machine)
    }

    /// Changes the room's machine and carries out what it returns.
    func update<T: Sendable>(_ body: @Sendable (inout RoomsStateMachine) throws(LiveRoomError) -> (T, [RoomsStateMachine.Action])) async throws(LiveRoomError) -> T {
        let (value, actions) = try body(&machine)
        await execute(actions)
        return value
    }

    /// Changes the room's machine and carries out what it returns.
    func update(_ body: @Sendable (inout RoomsStateMachine) -> [RoomsStateMachine.Action]) async {
        await execute(body(&machine))
    }

    /// A request of a member (enterRoom goes through the hub, which knows every room).
    func receive(_ request: RoomRequest, from session: SessionID, elapsedMs: Int) async {
        await execute(machine.handle(request, from: session, elapsedMs: elapsedMs, at: .now()))
    }

    /// `session` enters the room; nil when the room closed meanwhile.
    func enter(_ params: EnterRoomParams, from session: SessionID, elapsedMs: Int) async -> RoomsStateMachine.EnterOutcome? {
        guard !closed else { return nil }
        let outcome = machine.enter(params, from: session, elapsedMs: elapsedMs, at: .now())
        if case .entered(let actions) = outcome { await execute(actions) }
        return outcome
    }

    /// Closes the room if nobody is in it; whether it is closed.
    func closeIfEmpty() -> Bool {
        if machine.roomIds.isEmpty { closed = true }
        return closed
    }

    /// A publish was negotiated: the publisher hears the answer, then the room that it
    /// publishes, unless it left or stopped being an anchor meanwhile (false).
    func published(session: SessionID, userId: String, answer: String, audio: Bool, video: Bool) async -> Bool {
        guard let membership = machine.membership(of: session), membership == (key, userId) else { return false }
        services.outboxes.send(.onPublishAnswer(sdp: answer), to: [session])
        await execute(machine.publishStarted(session, audio: audio, video: video))
        return true
    }

    /// Sends `event` to everyone in the room (encoded once).
    func broadcast(_ event: ServerEvent) {
        services.outboxes.send(event, to: machine.sessions(in: key))
    }

    /// Sends `event` to the room's anchors.
    func tellAnchors(_ event: ServerEvent) {
        services.outboxes.send(event, to: machine.anchorSessions(in: key))
    }

    /// Carries out the machine's actions: messages to the members, records, seats and webhooks
    /// here, in order; the media commands to the media sessions and the rest to the hub, each
    /// in one piece, which this room waits for (so that each takes the room's work in the
    /// order the room made it).
    func execute(_ actions: [RoomsStateMachine.Action]) async {
        var records: [RoomRecord] = []
        var media: [(command: MediaCommand, home: String?)] = []
        var work = RoomWork()
        // A room's broadcast is one event to many sessions in a row: encoded once.
        var encoded: (event: ServerEvent, text: String)?
        for action in actions {
            switch action {
            case .send(let session, let event, let priority):
                if encoded?.event != event { encoded = (event, event.json.jsonText) }
                services.outboxes[session]?.push(encoded!.text, priority: priority)
            case .record(let record):
                records.append(record)
                // The first anchor in a room whose shop has no owner becomes it.
                if case .userEntered(let roomId, let userId, .anchor, _) = record { services.shops.claim(roomId, by: userId) }
            case .media(let command):
                media.append((command, home: mediaHome(of: command)))
            case .catalogue(let command):
                work.catalogue.append(command)
            case .battle(let command):
                work.battles.append(command)
            case .pkPeer(let command):
                work.peers.append(command)
            }
        }
        services.recorder.record(records)
        services.seats.apply(machine.takeSeatChanges())
        if let webhooks = services.webhooks, !records.isEmpty {
            webhooks.enqueue(WebhookEvents.events(from: records, now: EventTime.now().unixMillis))
        }
        if records.contains(where: { if case .roomDissolved = $0 { true } else { false } }) {
            closed = true
            work.closed = true
        }
        if machine.roomsWithPublisherNews(in: actions).contains(key) {
            let now = RoomPublishers(anchors: machine.mixAnchors(in: key), homes: machine.linkedHomes(of: key))
            if now != told {
                told = now
                work.publishers = now
            }
        }
        if !media.isEmpty { await services.media.carryOut(media) }
        guard !work.isEmpty, let hub else { return }
        await hub.carryOut(work, from: self)
    }

    /// The node a subscription's publisher lives on when it is a PK anchor of another room
    /// (this node's id when that room is here too).
    private func mediaHome(of command: MediaCommand) -> String? {
        guard case .subscribe(_, let roomId, _, _, _) = command, roomId != key else { return nil }
        return machine.remoteNode(ofRoom: roomId)
    }
}

/// What a room hands the hub after an event, in the order the room made it.
struct RoomWork: Sendable {
    var catalogue: [CatalogueCommand] = []
    var battles: [PKBattleCommand] = []
    var peers: [PKPeerCommand] = []
    /// The room's publishers as a mix sees them, and the node of each linked room, when they changed.
    var publishers: RoomPublishers?
    /// The room emptied or was dismissed.
    var closed = false

    var isEmpty: Bool {
        catalogue.isEmpty && battles.isEmpty && peers.isEmpty && publishers == nil && !closed
    }
}

/// A room's publishers as a mix sees them (its own anchors, then the PK anchors it sees), and
/// the node of each room it is linked with.
struct RoomPublishers: Sendable, Hashable {
    var anchors: [MixAnchor]
    var homes: [String: String]
}

extension RoomsStateMachine {
    /// The node of each room `roomId` is linked with (none for a room of this machine).
    func linkedHomes(of roomId: String) -> [String: String] {
        var homes: [String: String] = [:]
        for end in pkAnchors(in: roomId) {
            if let node = remoteNode(ofRoom: end.roomId) { homes[end.roomId] = node }
        }
        return homes
    }
}
