import LiveRoomProtocol

/// What a PK anchor sends and has muted, as its room's home node tells the home of a linked
/// room on another node (cluster mode).
public struct AnchorState: Sendable, Hashable {
    /// What it publishes; nil when it does not.
    public var publishing: PublishState?
    public var audioMuted: Bool
    public var videoMuted: Bool

    public init(publishing: PublishState?, audioMuted: Bool = false, videoMuted: Bool = false) {
        self.publishing = publishing
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
    }

    init(_ member: RoomsStateMachine.Member) {
        self.init(publishing: member.publishing, audioMuted: member.audioMuted, videoMuted: member.videoMuted)
    }

    var audioAvailable: Bool { publishing?.audio == true && !audioMuted }
    var videoAvailable: Bool { publishing?.video == true && !videoMuted }
}

/// A PK anchor of a room on another node: that room's home node and what the anchor sends.
struct RemoteAnchor: Sendable, Hashable {
    var node: String
    var state: AnchorState
}

/// What the home node of a room tells the home of a room linked with it on another node
/// (cluster mode). The server carries these over its node-to-node channel, in order per node,
/// and answers with the receiving machine's `remote…` calls.
public enum PKPeerCommand: Sendable, Hashable {
    /// Ask the home of `callee`'s room to link it with `caller` (who sends `state`); the answer
    /// goes to ``RoomsStateMachine/remoteLinkAnswered(session:caller:callee:node:result:since:)``.
    case link(session: SessionID, caller: PKEnd, state: AnchorState, callee: PKEnd, since: Int64)
    /// Anchor `end` of a room here now sends `state`: for `node`, home of rooms that see it.
    case anchorState(PKEnd, AnchorState, node: String)
    /// The link ended here: for `node`, home of its other room.
    case unlink(PKLink, node: String)
    /// Ask the home of `callee`'s room to show `callee` the PK request of `caller` (requestPK);
    /// whether it did goes to ``RoomsStateMachine/remotePKRequestDelivered(caller:callee:result:)``.
    case request(caller: PKEnd, callee: PKEnd)
    /// The answer to a request between rooms on two nodes, for `node`: from the callee's home,
    /// accepted (nil; the caller's home then links as connectOtherRoom does) or why not; from
    /// the caller's home, why an accepted request could not be linked.
    case answer(caller: PKEnd, callee: PKEnd, error: LiveRoomError?, node: String)
}

extension RoomsStateMachine {
    /// The room of `link` that is here when the other is on another node; nil when both are here.
    func localRoom(of link: PKLink) -> String? {
        if remoteAnchors[link.caller] != nil { return link.callee.roomId }
        if remoteAnchors[link.callee] != nil { return link.caller.roomId }
        return nil
    }

    /// The node of the end of `link` that is on another node; nil when both are here.
    func remoteNode(of link: PKLink) -> String? {
        remoteAnchors[link.caller]?.node ?? remoteAnchors[link.callee]?.node
    }

    /// The nodes of the linked rooms on other nodes that see anchor `end`, each once.
    func peerNodes(seeing end: PKEnd) -> [String] {
        var nodes: [String] = []
        for link in pkLinks where link.has(end) {
            guard let far = link.remote(seenFrom: end.roomId), let node = remoteAnchors[far]?.node, !nodes.contains(node) else { continue }
            nodes.append(node)
        }
        return nodes
    }

    /// The node a room linked with one here lives on; nil when it is here or not linked.
    public func remoteNode(ofRoom roomId: String) -> String? {
        remoteAnchors.first { $0.key.roomId == roomId }?.value.node
    }

    /// The nodes linked rooms live on.
    public var peerNodes: Set<String> {
        Set(remoteAnchors.values.map(\.node))
    }

    /// The home node of the callee's room answered a link `caller` asked for (``PKPeerCommand/link``):
    /// with what the callee sends, or why not. The link is made here when the caller may still
    /// make it; else the other node is told to end it again.
    public mutating func remoteLinkAnswered(
        session: SessionID, caller: PKEnd, callee: PKEnd, node: String, result: Result<AnchorState, LiveRoomError>, since: Int64
    ) -> [Action] {
        let callerIsThere = rooms[caller.roomId]?.members[caller.userId]?.session == session
        func answer(_ code: Int, _ message: String) -> [Action] {
            callerIsThere ? [.send(session, .onConnectOtherRoom(userId: callee.userId, errCode: code, errMsg: message))] : []
        }
        switch result {
        case .failure(let error):
            return answer(error.code, error.message)
        case .success(let state):
            let made = PKLink(caller: caller, callee: callee, since: since)
            do throws(LiveRoomError) {
                guard callerIsThere else {
                    throw LiveRoomError(ErrorCode.pkCallerIsAudience, "the caller left while the other node answered")
                }
                _ = try checkCaller(caller, to: RoomID(key: callee.roomId), userId: callee.userId)
                guard rooms[callee.roomId] == nil else {
                    throw LiveRoomError(ErrorCode.pkInvalidParameter, "\(RoomID(key: callee.roomId)) opened on this node meanwhile; connect again")
                }
            } catch {
                return answer(error.code, error.message) + [.pkPeer(.unlink(made, node: node))]
            }
            remoteAnchors[callee] = RemoteAnchor(node: node, state: state)
            return answer(0, "") + link(caller, with: callee, since: since)
        }
    }

    /// Anchor `caller` of a room on `node` asks to link with anchor `callee` of a room here:
    /// what the callee sends, or why not, and what to tell this node's rooms.
    /// A link that answers a PK request the callee accepted tells the callee how it ended.
    public mutating func remoteLinkRequested(
        caller: PKEnd, node: String, state: AnchorState, callee: PKEnd, since: Int64
    ) -> (Result<AnchorState, LiveRoomError>, [Action]) {
        let accepted = pkRequests.firstIndex { $0.from == caller && $0.to == callee && $0.accepted && $0.node == node }
        if let accepted { pkRequests.remove(at: accepted) }
        do throws(LiveRoomError) {
            try checkRemote(caller)
            if let known = remoteAnchors[caller], known.node != node {
                throw LiveRoomError(ErrorCode.pkInvalidParameter, "\(RoomID(key: caller.roomId)) is linked here through another node")
            }
            try checkCallee(callee, linkingWith: caller)
            try checkConsent(of: callee, to: caller, accepted: accepted != nil)
        } catch {
            return (.failure(error), accepted == nil ? [] : tell(callee, about: caller, error))
        }
        remoteAnchors[caller] = RemoteAnchor(node: node, state: state)
        let told = accepted == nil ? [] : tell(callee, about: caller, nil)
        return (.success(anchorState(of: callee)!), told + link(caller, with: callee, since: since))
    }

    /// A room elsewhere must not be open here too (one room, two homes).
    private func checkRemote(_ end: PKEnd) throws(LiveRoomError) {
        guard rooms[end.roomId] == nil else {
            throw LiveRoomError(ErrorCode.pkInvalidParameter, "\(RoomID(key: end.roomId)) is open on this node too; connect again")
        }
    }

    // MARK: Requests between nodes (requestPK and its answer)

    /// Anchor `caller` of a room on `node` asks anchor `callee` of a room here for a PK
    /// (``PKPeerCommand/request``): the callee is shown the request, or why not. The request
    /// waits here for the callee's answer as one from this node's rooms does.
    public mutating func remotePKRequested(caller: PKEnd, node: String, callee: PKEnd, at now: ContinuousClock.Instant) -> (Result<Void, LiveRoomError>, [Action]) {
        do throws(LiveRoomError) {
            try checkRemote(caller)
            try checkCallee(callee, linkingWith: caller)
            try checkWaitingRequests(from: caller, to: callee)
        } catch {
            return (.failure(error), [])
        }
        pkRequests.removeAll { $0.from == caller && $0.to == callee }
        pkRequests.append(PKRequest(from: caller, to: callee, expires: now + configuration.pkRequestTimeout, node: node))
        return (.success(()), [showRequest(from: caller, to: callee)])
    }

    /// The home of the callee's room showed the request of `caller` here, or refused it: a
    /// refusal ends the request and reaches the caller.
    public mutating func remotePKRequestDelivered(caller: PKEnd, callee: PKEnd, result: Result<Void, LiveRoomError>) -> [Action] {
        guard case .failure(let error) = result, let index = pkRequests.firstIndex(where: { $0.from == caller && $0.to == callee && $0.node == nil }) else { return [] }
        pkRequests.remove(at: index)
        return tell(caller, about: callee, error)
    }

    /// The callee here accepted the request of `request.from` on `node`: checked on this side,
    /// it waits for the link the caller's node then asks for (``remoteLinkRequested``).
    mutating func acceptRemote(_ request: PKRequest, node: String, session: SessionID, at now: EventTime) -> [Action] {
        do throws(LiveRoomError) {
            try checkCallee(request.to, linkingWith: request.from)
        } catch {
            return tell(request.to, about: request.from, error) + [.pkPeer(.answer(caller: request.from, callee: request.to, error: error, node: node))]
        }
        var accepted = request
        accepted.accepted = true
        accepted.expires = now.monotonic + configuration.pkRequestTimeout
        pkRequests.append(accepted)
        return [.pkPeer(.answer(caller: request.from, callee: request.to, error: nil, node: node))]
    }

    /// The other end of a PK request between nodes answered (``PKPeerCommand/answer``). On the
    /// caller's side: a refusal reaches the caller; an acceptance links as connectOtherRoom
    /// does, or tells the callee's node why not. On the callee's side: the caller's node could
    /// not link an accepted request, and the callee hears why.
    public mutating func remotePKAnswered(caller: PKEnd, callee: PKEnd, error: LiveRoomError?, from node: String, at now: EventTime) -> [Action] {
        if let index = pkRequests.firstIndex(where: { $0.from == caller && $0.to == callee && $0.node == nil && rooms[callee.roomId] == nil }) {
            pkRequests.remove(at: index)
            if let error { return tell(caller, about: callee, error) }
            do throws(LiveRoomError) {
                _ = try checkCaller(caller, to: RoomID(key: callee.roomId), userId: callee.userId)
            } catch {
                return tell(caller, about: callee, error) + [.pkPeer(.answer(caller: caller, callee: callee, error: error, node: node))]
            }
            let member = rooms[caller.roomId]!.members[caller.userId]!
            return [.pkPeer(.link(session: member.session, caller: caller, state: AnchorState(member), callee: callee, since: now.unixMillis))]
        }
        if let index = pkRequests.firstIndex(where: { $0.from == caller && $0.to == callee && $0.accepted && $0.node == node }) {
            pkRequests.remove(at: index)
            return error.map { tell(callee, about: caller, $0) } ?? []
        }
        // An acceptance nobody here waits for any more (the request timed out, or its caller left).
        guard error == nil else { return [] }
        let expired = LiveRoomError(ErrorCode.pkRequestTimeout, "the PK request of \(caller.userId.quoted) is no longer waiting")
        return [.pkPeer(.answer(caller: caller, callee: callee, error: expired, node: node))]
    }

    /// The home node of a linked room tells what its anchor `end` sends now: the rooms here
    /// that see it hear what changed for them.
    public mutating func remoteAnchorChanged(_ end: PKEnd, state: AnchorState, from node: String) -> [Action] {
        guard let known = remoteAnchors[end], known.node == node, known.state != state else { return [] }
        let viewers = roomsSeeing(end).filter { rooms[$0] != nil }.sorted()
        let before = viewers.map { availability(of: end, in: $0) }
        remoteAnchors[end]!.state = state
        var actions: [Action] = []
        for (viewer, was) in zip(viewers, before) {
            let now = availability(of: end, in: viewer)
            for session in rooms[viewer]!.sessions() {
                if was.video != now.video { actions.append(.send(session, .onUserVideoAvailable(userId: end.userId, available: now.video))) }
                if was.audio != now.audio { actions.append(.send(session, .onUserAudioAvailable(userId: end.userId, available: now.audio))) }
            }
        }
        return actions
    }

    /// The home node of a linked room ended the link between `caller` and `callee`.
    public mutating func remoteUnlinked(caller: PKEnd, callee: PKEnd, from node: String) -> [Action] {
        let links = pkLinks.filter { $0.caller == caller && $0.callee == callee && remoteNode(of: $0) == node }
        return remove(links: links, tellingPeers: false)
    }

    /// `node` is gone (dead, or it does not answer): every link with a room there ends.
    public mutating func remoteNodeLost(_ node: String) -> [Action] {
        remove(links: pkLinks.filter { remoteNode(of: $0) == node }, tellingPeers: false)
    }
}
