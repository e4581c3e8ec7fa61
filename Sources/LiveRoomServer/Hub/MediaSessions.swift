import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire

/// The rooms' media beside the hub: the rooms' media commands carried out on the media port
/// (or, for a connection relayed from another node in cluster mode, asked of that node), and
/// the WHIP and WHEP sessions (MediaSessions+HTTP.swift, RemotePlayback.swift). It runs on the
/// hub's thread; a room hands it its media commands itself, in the order it made them.
actor MediaSessions {
    nonisolated var unownedExecutor: UnownedSerialExecutor { RoomHub.executorLoop.executor.asUnownedSerialExecutor() }

    /// How long a relaying node has to answer a subscription.
    static let nodeAnswerTimeout = Duration.seconds(10)

    private(set) var media: (any MediaPort)?
    /// The hub, which enters WHIP/WHEP sessions into rooms and numbers them.
    private(set) weak var hub: RoomHub?
    /// The other nodes (cluster mode), or none.
    private(set) var nodes: any OtherNodes = SingleNode()
    let seats: Seats
    let outboxes: Outboxes
    /// The rooms' settings, to check a WHEP session's enter; it holds no room.
    let template: RoomsStateMachine
    /// Connections another node relays here (cluster mode): that node makes their subscriptions.
    private var relayed: Set<SessionID> = []
    /// Subscriptions asked of a relaying node and not yet answered, by request id.
    private var relayRequests: [Int: (session: SessionID, publisherId: String, restart: Bool)] = [:]
    private var nextRelayRequest = 1
    /// WHEP sessions that are not a signaling session's own (MediaSessions+HTTP.swift, RemotePlayback.swift).
    var httpSessions = HTTPSessions()

    init(configuration: RoomsStateMachine.Configuration, seats: Seats, outboxes: Outboxes) {
        template = RoomsStateMachine(configuration: configuration)
        self.seats = seats
        self.outboxes = outboxes
    }

    /// Connects the media port (until then media requests get an error) and the hub.
    func attach(_ media: any MediaPort, hub: RoomHub) {
        self.media = media
        self.hub = hub
    }

    func attach(_ nodes: any OtherNodes) {
        self.nodes = nodes
    }

    /// The connection is relayed from another node: its subscriptions' media is served there.
    func markRelayed(_ session: SessionID) {
        relayed.insert(session)
    }

    /// A signaling connection closed: its media ends (unless its room ended it already) and
    /// so do the subscriptions asked of its relaying node.
    func disconnected(_ session: SessionID, inRoom: Bool) {
        if !inRoom { carryOut(.closeSession(session), home: nil) }
        relayed.remove(session)
        relayRequests = relayRequests.filter { $0.value.session != session }
    }

    /// A room's media commands, carried out in the order the room made them.
    func carryOut(_ commands: [(command: MediaCommand, home: String?)]) {
        for (command, home) in commands { carryOut(command, home: home) }
    }

    private func send(_ event: ServerEvent, to session: SessionID) {
        outboxes.send(event, to: [session])
    }

    /// A frame of the relaying node on a relayed connection (``NodeMediaFrame``).
    func nodeFrame(_ text: String, from session: SessionID) {
        guard relayed.contains(session), case .media(let frame)? = try? NodeMessage.parse(text), frame.kind == .answer, let id = frame.id,
            let request = relayRequests[id], request.session == session
        else { return }
        relayRequests[id] = nil
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
        outboxes[session]?.push(NodeMessage.media(frame).text, priority: .high)
    }

    /// Asks the relaying node to make a subscription; the client gets its answer (or an error) when it comes.
    /// With `restart`, an ICE restart of that subscription instead.
    /// `mediaHome` names the node whose media port serves the publisher when it is not the room's
    /// home (a PK anchor of a room on another node).
    private func subscribeThroughRelay(session: SessionID, roomId: String?, publisherId: String, sdp: String, restart: Bool = false, mediaHome: String? = nil) {
        let id = nextRelayRequest
        nextRelayRequest += 1
        relayRequests[id] = (session, publisherId, restart)
        sendNodeFrame(
            NodeMediaFrame(kind: restart ? .restartIce : .subscribe, id: id, roomId: roomId, publisherId: publisherId, sdp: sdp, mediaHome: mediaHome), to: session)
        Task { [weak self] in
            try? await Task.sleep(for: Self.nodeAnswerTimeout)
            await self?.nodeRequestTimedOut(id)
        }
    }

    private func nodeRequestTimedOut(_ id: Int) {
        guard let request = relayRequests.removeValue(forKey: id) else { return }
        let error =
            request.restart
            ? LiveRoomError(ErrorCode.badSessionDescription, "ICE restart refused: the node the client is connected to did not answer")
            : LiveRoomError(ErrorCode.badSessionDescription, "subscribe offer refused: the node the client is connected to did not answer")
        send(.error(error, requestType: request.restart ? "restartIce" : "subscribe"), to: request.session)
    }

    /// A peer connection closed by itself (never connected, consent lost, DTLS closed). A
    /// WHIP/WHEP session is its peer connection, so it leaves the room; a signaling client
    /// stays in the room (its membership follows the WebSocket) and only stops publishing.
    func peerLost(session: SessionID, wasPublishing: Bool) async {
        if httpSessions.remote[session] != nil {
            endRemotePlayback(session)
        } else if outboxes[session] == nil, seats.seat(of: session) != nil {
            await leaveForHTTP(session)
        } else if wasPublishing {
            await seats.room(of: session)?.update { $0.publishEnded(session) }
        }
    }

    /// Hands a media command to the media port. Commands are queued on its loop in call
    /// order; negotiation answers come back here. `home` is the node of a subscription's
    /// publisher when it is a PK anchor of another room (``Room/execute(_:)``).
    func carryOut(_ command: MediaCommand, home: String?) {
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
                    await self.published(session: session, roomId: roomId, userId: userId, answer: sdp, audio: audio, video: video)
                } catch {
                    self.send(.error(LiveRoomError(ErrorCode.badSessionDescription, "publish offer refused: \(error)"), requestType: "publish"), to: session)
                }
            }
        case .subscribe(let session, let roomId, _, let publisherId, let sdp) where relayed.contains(session):
            // The relaying node makes it; a PK anchor of a room on another node is mirrored from that node.
            switch nodes.mediaAddress(ofHome: home) {
            case .failure(let error): send(.error(error, requestType: "subscribe"), to: session)
            case .success(let home): subscribeThroughRelay(session: session, roomId: roomId, publisherId: publisherId, sdp: sdp, mediaHome: home.description)
            case nil: subscribeThroughRelay(session: session, roomId: roomId, publisherId: publisherId, sdp: sdp)
            }
        case .subscribe(let session, let roomId, _, let publisherId, let sdp):
            do {
                let answer = try subscriptionAnswer(owner: session, roomId: roomId, publisherId: publisherId, offer: sdp, home: home, media: media)
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
        case .restartIce(let session, let publisherId?, let sdp) where relayed.contains(session):
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
            if relayed.contains(session) {
                sendNodeFrame(NodeMediaFrame(kind: .unsubscribe, roomId: roomId, publisherId: publisherId), to: session)
            }
        case .setForwarding(let sessions, let roomId, let publisherId, let audio, let video):
            for session in sessions where relayed.contains(session) {
                sendNodeFrame(NodeMediaFrame(kind: .forwarding, roomId: roomId, publisherId: publisherId, audio: audio, video: video), to: session)
            }
            media.setForwarding(owners: sessions, publisher: SFURouter.PublisherKey(roomId: roomId, userId: publisherId), audio: audio, video: video)
        case .stopPublishing(let roomId, let userId):
            media.stopPublishing(roomId: roomId, userId: userId)
        case .closeSession(let session):
            media.close(owner: session)
            endRemoteMedia(of: session)
            if relayed.contains(session) { sendNodeFrame(NodeMediaFrame(kind: .close), to: session) }
        }
    }

    /// `owner`'s subscription to `publisherId` of `roomId` on this node's media port, from a
    /// mirror when the room is a linked room on another node: its SDP answer, to await. A local
    /// negotiation is queued on the media loop now, so media commands keep their call order.
    func subscriptionAnswer(
        owner: SessionID, roomId: String, publisherId: String, offer: String, home: String?, media: any MediaPort
    ) throws(LiveRoomError) -> @Sendable () async throws -> String {
        switch nodes.mediaAddress(ofHome: home) {
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
    func published(session: SessionID, roomId: String, userId: String, answer: String, audio: Bool, video: Bool) async {
        guard let room = seats.room(roomId), await room.published(session: session, userId: userId, answer: answer, audio: audio, video: video) else {
            media?.stopPublishing(roomId: roomId, userId: userId)
            return
        }
    }

    private static let noMedia = LiveRoomError(ErrorCode.badSessionDescription, "the media port is not running")
}
