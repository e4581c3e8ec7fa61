import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import Logging
import NIOCore

/// The signaling WebSocket route, `/ws`: each connection is a ``SignalingConnection``.
struct SignalingRoutes: Sendable {
    let hub: RoomHub
    /// Cluster mode: connections to rooms homed on another node are relayed there.
    let cluster: ClusterMembership?
    let media: MediaService?
    /// Connections in all and per client address.
    let gate: ConnectionGate
    /// How long a connection may take to enter a room.
    let loginTimeout: Duration
    let logger: Logger

    func add(to router: Router<ServerRequestContext>) {
        router.webSocket("/ws") { inbound, outbound, context in
            await SignalingConnection(routes: self, outbound: outbound, channel: context.requestContext.channel).run(
                inbound, request: context.request, remoteAddress: context.requestContext.remoteAddress)
        }
    }
}

/// One signaling WebSocket from the upgrade to the close: the connection caps, the cluster's
/// relay, the login deadline, the outbox's writer, reading frames (on its room's lane once it
/// has a seat) and telling the hub when it ends.
struct SignalingConnection: Sendable {
    let routes: SignalingRoutes
    let outbound: WebSocketOutboundWriter
    let channel: any Channel
    private var hub: RoomHub { routes.hub }
    private var logger: Logger { routes.logger }

    init(routes: SignalingRoutes, outbound: WebSocketOutboundWriter, channel: any Channel) {
        self.routes = routes
        self.outbound = outbound
        self.channel = channel
    }

    func run(_ inbound: WebSocketInboundStream, request: Request, remoteAddress: SocketAddress?) async {
        let connectedAt = ContinuousClock.now
        // A connection another node relays (cluster mode) counts against its client's address.
        let relayed =
            routes.cluster.map {
                ClusterRouting.isRelayToken(request.headers[HTTPField.Name(ClusterRouting.tokenHeader)!], expected: $0.relayToken)
            } ?? false
        // Counted from the upgrade to the close; over a limit the client is told why.
        let address =
            relayed
            ? ClusterRouting.forwardedAddress(request.headers[HTTPField.Name(ClusterRouting.clientAddressHeader)!])
                ?? ConnectionLimits.key(remoteAddress)
            : ConnectionLimits.key(remoteAddress)
        if let refusal = routes.gate.admit(address) {
            try? await outbound.write(.text(ServerEvent.error(refusal).json.jsonText))
            try? await outbound.close(.unknown(1013), reason: "try again later")
            logger.info("Signaling connection refused", metadata: [LogKey.address: "\(address)", LogKey.error: "\(refusal.code)"])
            return
        }
        defer { routes.gate.release(address) }
        var messages = inbound.messages(maxSize: LiveRoomServer.maxSignalingFrameSize).makeAsyncIterator()
        // Cluster mode: the first frame (enterRoom) decides where the connection is served.
        // A room homed on another node is relayed there; a relayed connection is served here.
        var first: WebSocketMessage?
        if let cluster = routes.cluster, !relayed {
            let received = SharedFlag()
            let deadline = loginDeadline(entered: { received.isSet }) { message in
                try? await outbound.write(.text(ServerEvent.error(message).json.jsonText))
                logger.info("Signaling connection closed: no enterRoom", metadata: [LogKey.address: "\(address)"])
            } close: { reason in
                await hangUp(reason: reason)
            }
            first = try? await messages.next()
            received.set()
            deadline.cancel()
            guard let first else { return }
            if case .text(let text) = first, let roomKey = ClusterRouting.enteredRoomKey(text),
                await relayToHome(of: roomKey, first: text, messages: &messages, cluster: cluster, address: address)
            {
                return
            }
        }
        await serve(&messages, first: first, relayed: relayed, connectedAt: connectedAt)
    }

    /// Relays the connection to its room's home node, if another node is the home; false when
    /// the room is served here. A home that cannot be reached is asked for again until the
    /// database takes it for dead (3 s) and the room is claimed anew, here or on another node.
    private func relayToHome(
        of roomKey: String, first: String, messages: inout WebSocketInboundMessageStream.AsyncIterator, cluster: ClusterMembership, address: String
    ) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(ClusterRules.deadAfterMs / 1000 + 2)
        while let home = await cluster.home(ofRoom: roomKey) {
            let outcome = await NodeRelay.run(
                first: first, messages: &messages, outbound: outbound, channel: channel, home: home, from: cluster.nodeId,
                token: cluster.relayToken, clientAddress: address, media: routes.media, logger: logger)
            if outcome == .relayed { return true }
            guard ContinuousClock.now < deadline else {
                let error = ServerEvent.error(LiveRoomError(ErrorCode.homeNodeUnreachable, "the room's home node cannot be reached; try again"))
                try? await outbound.write(.text(error.json.jsonText))
                try? await outbound.close(.unknown(1013), reason: "the room's home node cannot be reached")
                return true
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
        return false
    }

    /// Serves the connection here: a session of the hub, its outbox written to the channel, its
    /// frames read until it closes.
    private func serve(
        _ messages: inout WebSocketInboundMessageStream.AsyncIterator, first: WebSocketMessage?, relayed: Bool, connectedAt: ContinuousClock.Instant
    ) async {
        let (session, outbox) = await hub.connect()
        if relayed { await hub.mediaSessions.markRelayed(session) }
        logger.debug("Signaling connection opened", metadata: [LogKey.session: "\(session)"])
        // Whether the server ended the connection (a policy, not the network): no reconnect grace then.
        let closedByServer = SharedFlag()
        // The connection's work (handling frames, writing) runs on its room's lane once it has
        // a seat, its reading on the room's reading lane: a busy room's connections queue behind
        // each other, not before other rooms'.
        let (executor, readingExecutor) = (ConnectionExecutor(), ConnectionExecutor(reads: true))
        hub.seats.register(session, executor, readingExecutor)
        defer { hub.seats.unregister(session) }
        await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: Void.self) { group in
                // A connection that has not entered a room by the deadline is closed: idle
                // connections cost the server memory and a file descriptor each.
                let deadline = loginDeadline(entered: { hub.isInRoom(session) }) { message in
                    await hub.send(.error(message), to: session)
                    logger.info("Signaling connection closed: no enterRoom", metadata: [LogKey.session: "\(session)"])
                } close: { reason in
                    closedByServer.set()
                    await hangUp(reason: reason)
                }
                group.addTask { await outbox.write(to: channel) }
                group.addTask {
                    switch await outbox.ended() {
                    case .overflowed:
                        // A client that does not read what its room sends is closed, not buffered for.
                        logger.info("Signaling connection closed: it does not read", metadata: [LogKey.session: "\(session)"])
                        closedByServer.set()
                        await hangUp(reason: "more than \(outbox.maxBytes) bytes of messages wait for this client; read faster")
                    case .hungUp(let reason):
                        try? await Task.sleep(for: .milliseconds(100))  // lets the writer send what is queued first
                        closedByServer.set()
                        await hangUp(reason: reason, restart: true)
                    case .closed:
                        break
                    }
                }
                // Frames are read on the reading lane (pongs included) and handled on the room's
                // lane, in order.
                let handoff = FrameHandoff()
                nonisolated(unsafe) var reader = messages  // used by the reading task alone from here on
                group.addTask(executorPreference: readingExecutor) {
                    do {
                        while let message = try await reader.next() { await handoff.put(message) }
                    } catch {
                        self.logger.debug("Signaling connection failed", metadata: [LogKey.session: "\(session)", LogKey.error: "\(error)"])
                    }
                    handoff.finish()
                }
                if let first { await handle(first, session: session, outbox: outbox, relayed: relayed, connectedAt: connectedAt) }
                for await message in handoff.frames {
                    handoff.took()
                    await handle(message, session: session, outbox: outbox, relayed: relayed, connectedAt: connectedAt)
                }
                // Handling stopped (cancelled at shutdown): a reader waiting for room goes on to the close.
                handoff.finish()
                deadline.cancel()
                if closedByServer.isSet {
                    await hub.disconnect(session)
                } else {
                    await hub.connectionLost(session)
                }
                await group.waitForAll()
            }
        }
        logger.debug("Signaling connection closed", metadata: [LogKey.session: "\(session)"])
    }

    /// One frame from the client.
    private func handle(_ message: WebSocketMessage, session: SessionID, outbox: ConnectionOutbox, relayed: Bool, connectedAt: ContinuousClock.Instant) async {
        switch message {
        case .text(let text) where relayed && NodeMessage.isNodeMessage(text):
            await hub.mediaSessions.nodeFrame(text, from: session)
        case .text(let text):
            do throws(LiveRoomError) {
                let request = try SignalingRequest.parse(text)
                if !relayed, case .room(.buyProduct(let itemNumber, let quantity, let requestId)) = request {
                    // A purchase goes to its room's shop, not through the hub, and the next
                    // frame is read at once.
                    buy(itemNumber: itemNumber, quantity: quantity, requestId: requestId, session: session, outbox: outbox)
                } else if case .room(let roomRequest) = request, !roomRequest.isEnter, let room = hub.seats.room(of: session) {
                    // A member's request goes to its room's actor, not through the hub.
                    await room.receive(roomRequest, from: session, elapsedMs: Int((ContinuousClock.now - connectedAt).ticks(rate: 1000)))
                } else {
                    await hub.receive(request, from: session, connectedAt: connectedAt)
                }
            } catch {
                logger.debug("Bad signaling message", metadata: [LogKey.session: "\(session)", LogKey.error: "\(error)"])
                outbox.push(ServerEvent.error(error).json.jsonText, priority: .normal)
            }
        case .binary:
            await hub.send(.error(LiveRoomError(ErrorCode.invalidField, "signaling frames must be text (JSON), not binary")), to: session)
        }
    }

    /// A purchase: checked against the seat the room machine gave this connection, then
    /// carried out by the room's shop beside the hub; the answer comes through the outbox.
    private func buy(itemNumber: Int, quantity: Int, requestId: String?, session: SessionID, outbox: ConnectionOutbox) {
        let seat: (roomId: String, userId: String)
        do throws(LiveRoomError) {
            seat = try hub.seats.takePurchase(by: session, now: .now)
        } catch {
            outbox.push(ServerEvent.error(error, requestType: "buyProduct").json.jsonText, priority: .normal)
            return
        }
        hub.shops.buy(roomId: seat.roomId, userId: seat.userId, itemNumber: itemNumber, quantity: quantity, requestId: requestId, answer: outbox)
    }

    /// After the login timeout, unless `entered`: `tell`s the client (-7013 and why), and
    /// `close`s the connection a moment later.
    private func loginDeadline(
        entered: @escaping @Sendable () async -> Bool, tell: @escaping @Sendable (LiveRoomError) async -> Void,
        close: @escaping @Sendable (String) async -> Void
    ) -> Task<Void, Never> {
        let timeout = routes.loginTimeout
        return Task {
            guard (try? await Task.sleep(for: timeout)) != nil, await !entered() else { return }
            let seconds = timeout.components.seconds
            await tell(LiveRoomError(ErrorCode.loginTimeout, "no enterRoom within \(seconds) s; the connection is closed"))
            try? await Task.sleep(for: .milliseconds(100))  // lets the writer send the error first
            await close("no enterRoom within \(seconds) s")
        }
    }

    /// Closes the connection: for a policy violation (1008), or, `restart`, for a service
    /// restart (1012), after which the client should reconnect. Sends the close frame if it goes
    /// out within a moment, then closes the socket: a client that does not read would otherwise
    /// keep the connection (and its writes) forever.
    private func hangUp(reason: String, restart: Bool = false) async {
        let closing = Task { try? await outbound.close(restart ? .unknown(1012) : .policyViolation, reason: reason) }
        try? await Task.sleep(for: .milliseconds(200))
        closing.cancel()
        try? await channel.close()
    }
}
