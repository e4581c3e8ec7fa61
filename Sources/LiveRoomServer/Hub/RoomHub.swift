import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomSFU
import LiveRoomTaskRunner
import LiveRoomTransport
import LiveRoomWebhooks
import LiveRoomWire
import Logging
import NIOPosix

/// Owns the room state machine and the open connections, and carries out the machine's
/// actions: messages go to connection outboxes, records to the history recorder.
///
/// The hub runs on a thread of its own (``executorLoop``), not in the shared pool of Swift
/// tasks: a burst of work there (a flash sale's thousands of purchases and answers) does not
/// queue ahead of every room's requests.
actor RoomHub {
    /// One thread for the hubs of the process (a server has one; tests make several).
    static let executorLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()
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
    /// The last catalogue command of each room, which the next one waits for (Catalogue.swift).
    var catalogueQueue = CatalogueQueue()
    /// The replay each room records now (Replays.swift).
    var replays = ReplayState()
    /// PK battles running now, and the battle each room is in (Battles.swift).
    var pkBattles = PKBattles()
    /// WHEP sessions that are not a signaling session's own (RoomHub+HTTPSessions.swift, RemotePlayback.swift).
    var httpSessions = HTTPSessions()
    /// The runners of publish tasks: here, and in cluster mode on other nodes (TaskHosting.swift).
    var taskRunners = TaskRunners()
    /// Cluster mode: this node's membership and what it knows of the others; empty on a single node.
    var node = NodeState()

    /// `tasksConfiguration`'s task id prefix is replaced by a random one per server run, so
    /// task ids stay unique across restarts; in cluster mode it begins with `nodeId` and `~`,
    /// so that an admin call naming the task reaches the node running it through any node.
    init(
        configuration: RoomsStateMachine.Configuration, tasksConfiguration: PublishTasksStateMachine.Configuration = .init(),
        egress: EgressResolver = EgressResolver(policy: EgressPolicy()), imageDirectory: String? = nil, maxOutboxBytes: Int = 4 << 20,
        reconnectGrace: Duration = .zero, catalogue: (any ShopStore)? = nil, orderReservation: Duration = .seconds(900),
        replayDirectory: String? = nil, maxReplayLength: Duration = .seconds(600), recorder: RoomRecorder, webhooks: WebhookService? = nil,
        nodeId: String? = nil, logger: Logger
    ) {
        self.services = HubServices(
            recorder: recorder, webhooks: webhooks, catalogue: catalogue,
            shops: RoomShops(store: catalogue, reservation: orderReservation, webhooks: webhooks), egress: egress, imageDirectory: imageDirectory,
            replayDirectory: replayDirectory, maxReplayLength: maxReplayLength)
        self.connections = Connections(maxOutboxBytes: maxOutboxBytes, reconnectGrace: reconnectGrace)
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
    var egress: EgressResolver { services.egress }
    var imageDirectory: String? { services.imageDirectory }
    var replayDirectory: String? { services.replayDirectory }
    var maxReplayLength: Duration { services.maxReplayLength }
    var cluster: ClusterMembership? { self.node.cluster }
    var messenger: NodeMessenger? { self.node.messenger }

    var sdkAppId: UInt64 { machine.configuration.sdkAppId }

    /// Joins the cluster: rooms that empty here are released for their next enter, PK links
    /// with rooms on other nodes go through `messenger`.
    func attach(_ cluster: ClusterMembership, messenger: NodeMessenger) {
        self.node.cluster = cluster
        self.node.messenger = messenger
    }


    func setOwnMediaAddress(_ address: String?) {
        self.node.ownMediaAddress = address
    }

    /// The keys of the rooms held here now.
    func roomKeys() -> [String] {
        Array(machine.roomIds)
    }

    /// How long a relaying node has to answer a subscription.
    static let nodeAnswerTimeout = Duration.seconds(10)

    /// The connection is relayed from another node: its subscriptions' media is served there.
    func markRelayed(_ session: SessionID) {
        self.node.relayedSessions.insert(session)
    }

    /// A frame of the relaying node on a relayed connection (``NodeMediaFrame``).
    func nodeFrame(_ text: String, from session: SessionID) {
        guard self.node.relayedSessions.contains(session), let frame = NodeMediaFrame.parse(text), frame.kind == .answer, let id = frame.id,
            let request = self.node.requests[id], request.session == session
        else { return }
        self.node.requests[id] = nil
        switch (frame.sdp, request.restart) {
        case (let sdp?, false):
            send(.onSubscribeAnswer(userId: request.publisherId, sdp: sdp), to: session)
        case (let sdp?, true):
            send(.onIceRestartAnswer(userId: request.publisherId, sdp: sdp), to: session)
        case (nil, false):
            let reason = frame.error ?? "the node the client is connected to could not subscribe"
            send(.error(LiveRoomError(ErrorCode.badSessionDescription, "subscribe offer refused: \(reason)"), requestType: "subscribe"), to: session)
        case (nil, true):
            let reason = frame.error ?? "the node the client is connected to could not restart ICE"
            send(.error(LiveRoomError(ErrorCode.badSessionDescription, "ICE restart refused: \(reason)"), requestType: "restartIce"), to: session)
        }
    }

    private func sendNodeFrame(_ frame: NodeMediaFrame, to session: SessionID) {
        connections.outboxes[session]?.push(frame.text, priority: .high)
    }

    /// Asks the relaying node to make a subscription; the client gets its answer (or an error) when it comes.
    /// With `restart`, an ICE restart of that subscription instead.
    /// `mediaHome` names the node whose media port serves the publisher when it is not the room's
    /// home (a PK anchor of a room on another node).
    private func subscribeThroughRelay(session: SessionID, roomId: String?, publisherId: String, sdp: String, restart: Bool = false, mediaHome: String? = nil) {
        let id = self.node.nextRequest
        self.node.nextRequest += 1
        self.node.requests[id] = (session, publisherId, restart)
        sendNodeFrame(
            NodeMediaFrame(kind: restart ? .restartIce : .subscribe, id: id, roomId: roomId, publisherId: publisherId, sdp: sdp, mediaHome: mediaHome), to: session)
        Task { [weak self] in
            try? await Task.sleep(for: Self.nodeAnswerTimeout)
            await self?.nodeRequestTimedOut(id)
        }
    }

    private func nodeRequestTimedOut(_ id: Int) {
        guard let request = self.node.requests.removeValue(forKey: id) else { return }
        let error =
            request.restart
            ? LiveRoomError(ErrorCode.badSessionDescription, "ICE restart refused: the node the client is connected to did not answer")
            : LiveRoomError(ErrorCode.badSessionDescription, "subscribe offer refused: the node the client is connected to did not answer")
        send(.error(error, requestType: request.restart ? "restartIce" : "subscribe"), to: request.session)
    }

    /// Connects the media port; until then media requests get an error.
    func attach(_ media: any MediaPort) {
        self.media = media
    }

    /// A publisher's connection closed by itself: tell the room.
    /// A peer connection closed by itself (never connected, consent lost, DTLS closed). A
    /// WHIP/WHEP session is its peer connection, so it leaves the room; a signaling client
    /// stays in the room (its membership follows the WebSocket) and only stops publishing.
    func peerLost(session: SessionID, wasPublishing: Bool) {
        if httpSessions.remote[session] != nil {
            endRemotePlayback(session)
        } else if connections.outboxes[session] == nil, machine.membership(of: session) != nil {
            leaveForHTTP(session)
        } else if wasPublishing {
            execute(machine.publishEnded(session))
        }
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
        self.node.relayedSessions.remove(session)
        self.node.requests = self.node.requests.filter { $0.value.session != session }
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
                startBattle(command)
            case .pkPeer(let command):
                carryOut(command)
            }
        }
        recorder.record(records)
        seats.apply(machine.takeSeatChanges())
        for case .roomDissolved(let roomId, _, _) in records {
            shops.remove(roomId)
            if let cluster { Task { await cluster.release(roomKey: roomId) } }
        }
        if let webhooks, !records.isEmpty {
            webhooks.enqueue(WebhookEvents.events(from: records, now: EventTime.now().unixMillis))
        }
        publishersChanged(in: machine.roomsWithPublisherNews(in: actions))
    }

    /// Hands a media command to the media port. Commands are queued on its loop in call
    /// order; negotiation answers come back here.
    private func carryOut(_ command: MediaCommand) {
        guard let media else {
            if case .publish(let session, _, _, _) = command { send(.error(Self.noMedia, requestType: "publish"), to: session) }
            if case .subscribe(let session, _, _, _, _) = command { send(.error(Self.noMedia, requestType: "subscribe"), to: session) }
            if case .restartIce(let session, _, _) = command { send(.error(Self.noMedia, requestType: "restartIce"), to: session) }
            return
        }
        switch command {
        case .publish(let session, let roomId, let userId, let sdp):
            let answer = media.publish(owner: session, roomId: roomId, userId: userId, offer: sdp)
            Task {
                do {
                    let (sdp, audio, video) = try await answer.get()
                    self.published(session: session, roomId: roomId, userId: userId, answer: sdp, audio: audio, video: video)
                } catch {
                    self.send(.error(LiveRoomError(ErrorCode.badSessionDescription, "publish offer refused: \(error)"), requestType: "publish"), to: session)
                }
            }
        case .subscribe(let session, let roomId, _, let publisherId, let sdp) where self.node.relayedSessions.contains(session):
            // The relaying node makes it; a PK anchor of a room on another node is mirrored from that node.
            switch remoteMediaHome(ofRoom: roomId) {
            case .failure(let error): send(.error(error, requestType: "subscribe"), to: session)
            case .success(let home): subscribeThroughRelay(session: session, roomId: roomId, publisherId: publisherId, sdp: sdp, mediaHome: home.description)
            case nil: subscribeThroughRelay(session: session, roomId: roomId, publisherId: publisherId, sdp: sdp)
            }
        case .subscribe(let session, let roomId, _, let publisherId, let sdp):
            do {
                let answer = try subscriptionAnswer(owner: session, roomId: roomId, publisherId: publisherId, offer: sdp, media: media)
                Task {
                    do {
                        let sdp = try await answer()
                        self.send(.onSubscribeAnswer(userId: publisherId, sdp: sdp), to: session)
                    } catch {
                        self.send(.error(LiveRoomError(ErrorCode.badSessionDescription, "subscribe offer refused: \(error)"), requestType: "subscribe"), to: session)
                    }
                }
            } catch {
                send(.error(error, requestType: "subscribe"), to: session)
            }
        case .restartIce(let session, let publisherId?, let sdp) where self.node.relayedSessions.contains(session):
            // The subscription lives on the relaying node.
            subscribeThroughRelay(session: session, roomId: nil, publisherId: publisherId, sdp: sdp, restart: true)
        case .restartIce(let session, let publisherId, let sdp):
            Task {
                do {
                    let offer = try TransportDescription(of: try SessionDescription.parse(sdp))
                    guard let answer = try await media.restartICE(
                        owner: session, target: publisherId.map { .subscription(publisherId: $0) } ?? .publishing,
                        remote: ICECredentials(ufrag: offer.iceUfrag, pwd: offer.icePwd), fingerprint: offer.fingerprint
                    ).get() else {
                        throw NegotiationError("an ICE restart needs new ICE credentials; the offer keeps ice-ufrag \(offer.iceUfrag)")
                    }
                    self.send(.onIceRestartAnswer(userId: publisherId, sdp: answer.sdp), to: session)
                } catch {
                    self.send(.error(LiveRoomError(ErrorCode.badSessionDescription, "ICE restart refused: \(error)"), requestType: "restartIce"), to: session)
                }
            }
        case .unsubscribe(let session, let publisherId, let roomId):
            media.unsubscribe(owner: session, publisherId: publisherId, roomId: roomId)
            if self.node.relayedSessions.contains(session) {
                sendNodeFrame(NodeMediaFrame(kind: .unsubscribe, roomId: roomId, publisherId: publisherId), to: session)
            }
        case .setForwarding(let sessions, let roomId, let publisherId, let audio, let video):
            for session in sessions where self.node.relayedSessions.contains(session) {
                sendNodeFrame(NodeMediaFrame(kind: .forwarding, roomId: roomId, publisherId: publisherId, audio: audio, video: video), to: session)
            }
            media.setForwarding(owners: sessions, publisher: SFURouter.PublisherKey(roomId: roomId, userId: publisherId), audio: audio, video: video)
        case .stopPublishing(let roomId, let userId):
            media.stopPublishing(roomId: roomId, userId: userId)
        case .closeSession(let session):
            media.close(owner: session)
            endRemoteMedia(of: session)
            if self.node.relayedSessions.contains(session) { sendNodeFrame(NodeMediaFrame(kind: .close), to: session) }
        }
    }

    /// `owner`'s subscription to `publisherId` of `roomId` on this node's media port, from a
    /// mirror when the room is a linked room on another node: its SDP answer, to await. A local
    /// negotiation is queued on the media loop now, so media commands keep their call order.
    func subscriptionAnswer(
        owner: SessionID, roomId: String, publisherId: String, offer: String, media: any MediaPort
    ) throws(LiveRoomError) -> @Sendable () async throws -> String {
        switch remoteMediaHome(ofRoom: roomId) {
        case .failure(let error):
            throw error
        case .success(let home):
            let key = SFURouter.PublisherKey(roomId: roomId, userId: publisherId)
            return { try await media.subscribeMirrored(owner: owner, key: key, offer: offer, home: home) }
        case nil:
            let answer = media.subscribe(owner: owner, roomId: roomId, publisherId: publisherId, offer: offer)
            return { try await answer.get() }
        }
    }

    /// A publish was negotiated: answer the publisher, then tell the room, unless the
    /// publisher left or stopped being an anchor meanwhile.
    func published(session: SessionID, roomId: String, userId: String, answer: String, audio: Bool, video: Bool) {
        guard let membership = machine.membership(of: session), membership == (roomId, userId) else {
            media?.stopPublishing(roomId: roomId, userId: userId)
            return
        }
        send(.onPublishAnswer(sdp: answer), to: session)
        let actions = machine.publishStarted(session, audio: audio, video: video)
        execute(actions)
    }

    private static let noMedia = LiveRoomError(ErrorCode.badSessionDescription, "the media port is not running")
}

extension EventTime {
    static func now() -> EventTime {
        EventTime(monotonic: .now, unixMillis: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
    }
}
