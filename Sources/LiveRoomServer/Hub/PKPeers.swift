import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol

/// Cross-room PK: each room's machine keeps its side of a link and what the other room's anchor
/// sends. The hub carries a room's ``PKPeerCommand``s to the other room: to its actor when it is
/// here, or to its home node (``OtherNodes``) in a cluster, and hands what that node sends back
/// to the room here. Members get another node's anchor from a mirror of it, made by the node
/// relay (the same mirror that serves a room's viewers on other nodes).
extension RoomHub {
    /// Carries out `room`'s message for another room.
    func carryOut(_ command: PKPeerCommand, from room: Room) async {
        let here = nodes.nodeId
        switch command {
        case .link(let session, let caller, let state, let callee, let since):
            guard let target = rooms.byKey[callee.roomId] else {
                // Its home node checks its side and answers (not waited for here: the room goes on meanwhile).
                let message = PKPeerMessage(kind: .link, node: here, caller: caller, callee: callee, state: state, since: since)
                Task {
                    await self.askHome(of: callee, message, for: room, parse: PKPeerMessage.parseAnswer) { node, result in
                        { $0.remoteLinkAnswered(session: session, caller: caller, callee: callee, node: node, result: result, since: since) }
                    }
                }
                return
            }
            let result = try? await target.update { machine in machine.remoteLinkRequested(caller: caller, node: here, state: state, callee: callee, since: since) }
            await room.update { $0.remoteLinkAnswered(session: session, caller: caller, callee: callee, node: here, result: result ?? .failure(Self.gone(callee)), since: since) }
        case .request(let caller, let callee):
            guard let target = rooms.byKey[callee.roomId] else {
                let message = PKPeerMessage(kind: .request, node: here, caller: caller, callee: callee)
                Task {
                    await self.askHome(of: callee, message, for: room, parse: PKPeerMessage.parseAcknowledgement) { _, result in
                        { $0.remotePKRequestDelivered(caller: caller, callee: callee, result: result) }
                    }
                }
                return
            }
            let result = try? await target.update { machine in machine.remotePKRequested(caller: caller, node: here, callee: callee, at: .now) }
            await room.update { $0.remotePKRequestDelivered(caller: caller, callee: callee, result: result ?? .failure(Self.gone(callee))) }
        case .answer(let caller, let callee, let error, let node):
            guard node == here else {
                return nodes.tell(node, .pk(PKPeerMessage(kind: .answer, node: here, caller: caller, callee: callee, error: error)))
            }
            await rooms.byKey[caller.roomId == room.key ? callee.roomId : caller.roomId]?.update {
                $0.remotePKAnswered(caller: caller, callee: callee, error: error, from: here, at: .now())
            }
        case .anchorState(let end, let state, let node):
            guard node == here else { return nodes.tell(node, .pk(PKPeerMessage(kind: .state, node: here, caller: end, state: state))) }
            for other in rooms.byKey.values where other !== room {
                await other.update { $0.remoteAnchorChanged(end, state: state, from: here) }
            }
        case .unlink(let link, let node):
            guard node == here else { return nodes.tell(node, .pk(PKPeerMessage(kind: .unlink, node: here, caller: link.caller, callee: link.callee))) }
            await rooms.byKey[link.caller.roomId == room.key ? link.callee.roomId : link.caller.roomId]?.update {
                $0.remoteUnlinked(caller: link.caller, callee: link.callee, from: here)
            }
        }
    }

    /// A room that closed while a message was on its way to it.
    private static func gone(_ end: PKEnd) -> LiveRoomError {
        LiveRoomError(ErrorCode.pkRoomNotFound, "\(RoomID(key: end.roomId)) does not exist")
    }

    /// Asks the home node of `callee`'s room (a link or a request) and hands `room` its answer.
    private func askHome<Answer: Sendable>(
        of callee: PKEnd, _ message: PKPeerMessage, for room: Room, parse: (String) -> Result<Answer, LiveRoomError>?,
        answer: @Sendable (String, Result<Answer, LiveRoomError>) -> @Sendable (inout RoomsStateMachine) -> [RoomsStateMachine.Action]
    ) async {
        var node = ""
        let result: Result<Answer, LiveRoomError>
        if let home = await nodes.liveHome(ofRoom: callee.roomId) {
            node = home.nodeId
            let reply = await nodes.ask(home, .pk(message)).flatMap { $0.status == 200 ? $0.body : nil }
            result = reply.flatMap(parse)
                ?? .failure(LiveRoomError(ErrorCode.homeNodeUnreachable, "node \(home.nodeId) of \(RoomID(key: callee.roomId)) did not answer"))
        } else {
            result = .failure(Self.gone(callee))
        }
        await room.update(answer(node, result))
    }

    /// Whether a room here should hear a battle's event from `node`: it is linked with the
    /// battle's room there.
    private func isLinked(_ roomId: String, with battleRoom: String, on node: String) async -> Bool {
        await rooms.byKey[roomId]?.read { machine in
            machine.remoteNode(ofRoom: battleRoom) == node
                && machine.pkLinks(of: roomId).contains { $0.caller.roomId == battleRoom || $0.callee.roomId == battleRoom }
        } ?? false
    }

    /// A battle's event for a side in a room on another node, sent to that room's home.
    /// Returns false when the side's room is here.
    func announceElsewhere(_ name: String, _ fields: [String: JSONValue], to side: PKEnd, from starter: PKEnd) -> Bool {
        guard rooms.byKey[side.roomId] == nil, let node = seats.home(ofLinked: side.roomId), node != nodes.nodeId else { return false }
        var message = PKPeerMessage(kind: .battle, node: nodes.nodeId, caller: starter, callee: side)
        message.event = (name, fields)
        nodes.tell(node, .pk(message))
        return true
    }

    /// A `pk` node message (``NodeMessage``, its relay token checked): its answer.
    func pkPeerMessage(_ message: PKPeerMessage) async -> JSONValue {
        let notLive = LiveRoomError(ErrorCode.pkInvalidParameter, "node \(message.node) is not a live node of the cluster")
        switch message.kind {
        case .link, .request:
            guard let node = await nodes.liveNode(message.node), let callee = message.callee, message.kind == .request || message.state != nil else {
                return PKPeerMessage.answer(.failure(notLive))
            }
            guard rooms.byKey[message.caller.roomId] == nil else {
                let error = LiveRoomError(ErrorCode.pkInvalidParameter, "\(RoomID(key: message.caller.roomId)) is open on this node too; connect again")
                return PKPeerMessage.answer(.failure(error))
            }
            guard let room = rooms.byKey[callee.roomId] else { return PKPeerMessage.answer(.failure(Self.gone(callee))) }
            let caller = message.caller
            if message.kind == .request {
                let result = (try? await room.update { machine in machine.remotePKRequested(caller: caller, node: node.nodeId, callee: callee, at: .now) })
                return PKPeerMessage.acknowledgement(result ?? .failure(Self.gone(callee)))
            }
            let (state, since) = (message.state!, message.since)
            let result = try? await room.update { machine in machine.remoteLinkRequested(caller: caller, node: node.nodeId, state: state, callee: callee, since: since) }
            return PKPeerMessage.answer(result ?? .failure(Self.gone(callee)))
        case .answer:
            if let callee = message.callee {
                let (caller, error, node) = (message.caller, message.error, message.node)
                for roomId in [caller.roomId, callee.roomId] {
                    await rooms.byKey[roomId]?.update { $0.remotePKAnswered(caller: caller, callee: callee, error: error, from: node, at: .now()) }
                }
            }
        case .state:
            if let state = message.state {
                let (end, node) = (message.caller, message.node)
                for room in rooms.byKey.values { await room.update { $0.remoteAnchorChanged(end, state: state, from: node) } }
            }
        case .unlink:
            if let callee = message.callee {
                let (caller, node) = (message.caller, message.node)
                for roomId in [caller.roomId, callee.roomId] {
                    await rooms.byKey[roomId]?.update { $0.remoteUnlinked(caller: caller, callee: callee, from: node) }
                }
            }
        case .battle:
            // Only for a room here linked with the battle's room on the sending node.
            guard let callee = message.callee, let event = message.event, await isLinked(callee.roomId, with: message.caller.roomId, on: message.node) else {
                return PKPeerMessage.answer(.failure(LiveRoomError(ErrorCode.pkNotConnected, "no room here is linked with that battle's room on node \(message.node)")))
            }
            await rooms.byKey[callee.roomId]?.broadcast(.onPKBattle(name: event.name, fields: event.fields))
        }
        return ["ErrorCode": 0, "ErrorMessage": ""]
    }

    /// The nodes alive now (each reconciliation): links with rooms on any other node end, and
    /// so do WHEP sessions played here whose seat was on a node that died (the client makes a
    /// new one, which reaches the room's new home), and tasks whose runner or room was there.
    func nodesAlive(_ alive: Set<String>) async {
        for node in seats.linkedNodes.subtracting([nodes.nodeId]).subtracting(alive) { await pkPeerLost(node) }
        await mediaSessions.playbackHomesAlive(alive)
        await tasks.taskHostsAlive(alive)
    }

    /// `node` died or did not take a message: every link with a room there ends.
    func pkPeerLost(_ node: String) async {
        var ended = false
        for room in rooms.byKey.values {
            let endedHere = try? await room.update { machine in
                let actions = machine.remoteNodeLost(node)
                return (!actions.isEmpty, actions)
            }
            ended = ended || endedHere == true
        }
        if ended { logger.warning("PK links with a lost node ended", metadata: [LogKey.node: "\(node)"]) }
    }
}

extension RoomHub {
    /// What the battles tell: an event for everyone in a battle's rooms (a side in a room on
    /// another node hears it through that room's home), or a refusal for its starter.
    func battleEvent(_ event: PKBattles.Event) async {
        switch event {
        case .refused(let session, let error):
            send(.error(error, requestType: "startPKBattle"), to: session)
        case .announce(let sides, let name, let fields):
            for side in sides {
                if announceElsewhere(name, fields, to: side, from: sides[0]) { continue }
                await rooms.byKey[side.roomId]?.broadcast(.onPKBattle(name: name, fields: fields))
            }
        }
    }

    /// PK requests nobody answered in time get their answer (-3326).
    func expirePKRequests() async {
        for room in rooms.byKey.values {
            await room.update { $0.expirePKRequests(now: .now) }
        }
    }

    /// The PK links of a room, for DescribeRoom.
    func pkLinks(of roomId: String) async -> [PKLink] {
        await rooms.byKey[roomId]?.read { $0.pkLinks(of: roomId) } ?? []
    }
}
