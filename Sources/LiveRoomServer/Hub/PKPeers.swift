import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWire

/// Cross-room PK with a room on another node (cluster mode). The room core keeps the link and
/// what the other room's anchor sends; this node's hub carries the core's ``PKPeerCommand``s to
/// that room's home node (``OtherNodes``), hands the messages that node sends back to the
/// core, and gives this room's members the other anchor's media from a mirror of it, made by
/// the node relay (the same mirror that serves a room's viewers on other nodes).
extension RoomHub {
    /// Carries out a message for the home node of a linked room.
    func carryOut(_ command: PKPeerCommand) {
        switch command {
        case .link(let session, let caller, let state, let callee, let since):
            Task {
                var node = ""
                let result: Result<AnchorState, LiveRoomError>
                if let home = await nodes.liveHome(ofRoom: callee.roomId) {
                    node = home.nodeId
                    let message = PKPeerMessage(kind: .link, node: nodes.nodeId, caller: caller, callee: callee, state: state, since: since)
                    result =
                        await nodes.ask(home, .pk(message)).flatMap { $0.status == 200 ? PKPeerMessage.parseAnswer($0.body) : nil }
                        ?? .failure(LiveRoomError(ErrorCode.homeNodeUnreachable, "node \(home.nodeId) of \(RoomID(key: callee.roomId)) did not answer"))
                } else {
                    result = .failure(LiveRoomError(ErrorCode.pkRoomNotFound, "\(RoomID(key: callee.roomId)) does not exist"))
                }
                self.execute(self.machine.remoteLinkAnswered(session: session, caller: caller, callee: callee, node: node, result: result, since: since))
            }
        case .request(let caller, let callee):
            Task {
                let result: Result<Void, LiveRoomError>
                if let home = await nodes.liveHome(ofRoom: callee.roomId) {
                    let message = PKPeerMessage(kind: .request, node: nodes.nodeId, caller: caller, callee: callee)
                    result =
                        await nodes.ask(home, .pk(message)).flatMap { $0.status == 200 ? PKPeerMessage.parseAcknowledgement($0.body) : nil }
                        ?? .failure(LiveRoomError(ErrorCode.homeNodeUnreachable, "node \(home.nodeId) of \(RoomID(key: callee.roomId)) did not answer"))
                } else {
                    result = .failure(LiveRoomError(ErrorCode.pkRoomNotFound, "\(RoomID(key: callee.roomId)) does not exist"))
                }
                self.execute(self.machine.remotePKRequestDelivered(caller: caller, callee: callee, result: result))
            }
        case .answer(let caller, let callee, let error, let node):
            nodes.tell(node, .pk(PKPeerMessage(kind: .answer, node: nodes.nodeId, caller: caller, callee: callee, error: error)))
        case .anchorState(let end, let state, let node):
            nodes.tell(node, .pk(PKPeerMessage(kind: .state, node: nodes.nodeId, caller: end, state: state)))
        case .unlink(let link, let node):
            nodes.tell(node, .pk(PKPeerMessage(kind: .unlink, node: nodes.nodeId, caller: link.caller, callee: link.callee)))
        }
    }

    /// A battle's event for a side in a room on another node, sent to that room's home.
    /// Returns false when the side's room is here.
    func announceElsewhere(_ name: String, _ fields: [String: JSONValue], to side: PKEnd, from starter: PKEnd) -> Bool {
        guard let node = machine.remoteNode(ofRoom: side.roomId) else { return false }
        var message = PKPeerMessage(kind: .battle, node: nodes.nodeId, caller: starter, callee: side)
        message.event = (name, fields)
        nodes.tell(node, .pk(message))
        return true
    }

    /// A `pk` node message (``NodeMessage``, its relay token checked): its answer.
    func pkPeerMessage(_ message: PKPeerMessage) async -> JSONValue {
        switch message.kind {
        case .link:
            guard let node = await nodes.liveNode(message.node), let callee = message.callee, let state = message.state else {
                return PKPeerMessage.answer(.failure(LiveRoomError(ErrorCode.pkInvalidParameter, "node \(message.node) is not a live node of the cluster")))
            }
            let (result, actions) = machine.remoteLinkRequested(caller: message.caller, node: node.nodeId, state: state, callee: callee, since: message.since)
            execute(actions)
            return PKPeerMessage.answer(result)
        case .request:
            guard let node = await nodes.liveNode(message.node), let callee = message.callee else {
                return PKPeerMessage.answer(.failure(LiveRoomError(ErrorCode.pkInvalidParameter, "node \(message.node) is not a live node of the cluster")))
            }
            let (result, actions) = machine.remotePKRequested(caller: message.caller, node: node.nodeId, callee: callee, at: .now)
            execute(actions)
            return PKPeerMessage.acknowledgement(result)
        case .answer:
            if let callee = message.callee {
                execute(machine.remotePKAnswered(caller: message.caller, callee: callee, error: message.error, from: message.node, at: .now()))
            }
        case .state:
            if let state = message.state { execute(machine.remoteAnchorChanged(message.caller, state: state, from: message.node)) }
        case .unlink:
            if let callee = message.callee { execute(machine.remoteUnlinked(caller: message.caller, callee: callee, from: message.node)) }
        case .battle:
            // Only for a room here linked with the battle's room on the sending node.
            guard let callee = message.callee, let event = message.event, machine.remoteNode(ofRoom: message.caller.roomId) == message.node,
                machine.pkLinks(of: callee.roomId).contains(where: { $0.caller.roomId == message.caller.roomId || $0.callee.roomId == message.caller.roomId })
            else {
                return PKPeerMessage.answer(.failure(LiveRoomError(ErrorCode.pkNotConnected, "no room here is linked with that battle's room on node \(message.node)")))
            }
            broadcast(.onPKBattle(name: event.name, fields: event.fields), in: callee.roomId)
        }
        return ["ErrorCode": 0, "ErrorMessage": ""]
    }

    /// The nodes alive now (each reconciliation): links with rooms on any other node end, and
    /// so do WHEP sessions played here whose seat was on a node that died (the client makes a
    /// new one, which reaches the room's new home), and tasks whose runner or room was there.
    func nodesAlive(_ alive: Set<String>) {
        for node in machine.peerNodes.subtracting(alive) { pkPeerLost(node) }
        playbackHomesAlive(alive)
        taskHostsAlive(alive)
    }

    /// `node` died or did not take a message: every link with a room there ends.
    func pkPeerLost(_ node: String) {
        let actions = machine.remoteNodeLost(node)
        if !actions.isEmpty { logger.warning("PK links with a lost node ended", metadata: [LogKey.node: "\(node)"]) }
        execute(actions)
    }

    /// The media address of the node `roomId`'s PK anchors publish on, when that room lives on
    /// another node; nil when it is here.
    func remoteMediaHome(ofRoom roomId: String) -> Result<TransportAddress, LiveRoomError>? {
        guard let node = machine.remoteNode(ofRoom: roomId) else { return nil }
        guard let address = nodes.known(node)?.mediaAddresses.lazy.compactMap(NodeMediaRelay.address).first else {
            return .failure(LiveRoomError(ErrorCode.badSessionDescription, "node \(node) of the PK anchor has no usable media address"))
        }
        return .success(address)
    }
}
