import LiveRoomProtocol

/// One end of a cross-room PK link: an anchor in its room (rooms by their key).
public struct PKEnd: Sendable, Hashable {
    public var roomId: String
    public var userId: String

    public init(roomId: String, userId: String) {
        self.roomId = roomId
        self.userId = userId
    }
}

/// A cross-room PK link: the two anchors, and everyone in their rooms, see and hear each other.
public struct PKLink: Sendable, Hashable {
    /// The anchor who connected (or asked, when the other accepted).
    public var caller: PKEnd
    public var callee: PKEnd
    /// Milliseconds since 1970 when the link was made.
    public var since: Int64

    public init(caller: PKEnd, callee: PKEnd, since: Int64) {
        self.caller = caller
        self.callee = callee
        self.since = since
    }

    /// The end in `roomId`'s view across the link: the other room's anchor.
    func remote(seenFrom roomId: String) -> PKEnd? {
        if caller.roomId == roomId { return callee }
        if callee.roomId == roomId { return caller }
        return nil
    }

    func has(_ end: PKEnd) -> Bool { caller == end || callee == end }
}

/// A PK request waiting for the other anchor's answer.
struct PKRequest: Sendable, Hashable {
    var from: PKEnd
    var to: PKEnd
    var expires: ContinuousClock.Instant
    /// The home node of the asker's room, when it lives on another node (the request was shown
    /// to an anchor here); nil for an asker here.
    var node: String? = nil
    /// The anchor here accepted it and the link waits for the asker's node to make it.
    var accepted = false
}

/// What a battle is to be fought between: each room once, with its anchor.
public struct PKBattleCommand: Sendable, Hashable {
    /// The anchor who started it, answered on failure.
    public var session: SessionID
    /// The caller's end first, then one anchor of each room linked with the caller's room.
    public var sides: [PKEnd]
    public var durationSec: Int
}

extension RoomsStateMachine {
    /// Battles last 5 s to an hour.
    public static let pkBattleDurations = 5...3600
    /// The most PK requests one anchor has waiting: asked by it, and waiting for its answer.
    public static let maxWaitingPKRequests = 10

    // MARK: Who sees whom

    /// The anchors of other rooms that `roomId` sees through PK links, in link order, each once.
    public func pkAnchors(in roomId: String) -> [PKEnd] {
        var seen: Set<PKEnd> = []
        return pkLinks.compactMap { $0.remote(seenFrom: roomId) }.filter { seen.insert($0).inserted }
    }

    /// The rooms `roomId` is linked with.
    func linkedRooms(of roomId: String) -> Set<String> {
        Set(pkAnchors(in: roomId).map(\.roomId))
    }

    /// The anchors of `roomId` taking part in PK links.
    func anchorsInPK(of roomId: String) -> Set<String> {
        Set(pkLinks.flatMap { [$0.caller, $0.callee] }.filter { $0.roomId == roomId }.map(\.userId))
    }

    /// The rooms that see anchor `end` through its links.
    func roomsSeeing(_ end: PKEnd) -> Set<String> {
        Set(pkLinks.filter { $0.has(end) }.compactMap { $0.remote(seenFrom: end.roomId)?.roomId })
    }

    public func forwardMode(from roomId: String, into viewer: String) -> PKForwardMode {
        pkForward[viewer]?[roomId] ?? .both
    }

    /// Every PK link with an end in `roomId` (for DescribeRoom).
    public func pkLinks(of roomId: String) -> [PKLink] {
        pkLinks.filter { $0.caller.roomId == roomId || $0.callee.roomId == roomId }
    }

    /// The remote PK anchors `roomId` sees who publish, as a mixer sees them (forward modes applied).
    public func pkPublisherStates(in roomId: String) -> [(roomId: String, state: PublisherState)] {
        pkAnchors(in: roomId).compactMap { end in
            guard let anchor = anchorState(of: end), let publishing = anchor.publishing else { return nil }
            let mode = forwardMode(from: end.roomId, into: roomId)
            let state = PublisherState(
                userId: end.userId, audio: publishing.audio && mode.audio, video: publishing.video && mode.video, audioMuted: anchor.audioMuted,
                videoMuted: anchor.videoMuted)
            return (end.roomId, state)
        }
    }

    /// What anchor `end` sends and has muted: a member of a room here, or a PK anchor of a
    /// room on another node as its home last told (cluster mode).
    func anchorState(of end: PKEnd) -> AnchorState? {
        if let room = rooms[end.roomId] { return room.members[end.userId].map(AnchorState.init) }
        return remoteAnchors[end]?.state
    }

    /// The room a publisher that `roomId` may subscribe to publishes in: the room itself for its
    /// own members, the other room for a PK anchor it sees.
    func publisherRoom(of userId: String, seenFrom roomId: String) -> String? {
        if rooms[roomId]?.members[userId] != nil { return roomId }
        return pkAnchors(in: roomId).first { $0.userId == userId }?.roomId
    }

    /// What room `viewer` receives of anchor `end`, one of its own or a PK anchor: (video, audio).
    /// A room's own anchors have no forward mode, so they pass as they are.
    func availability(of end: PKEnd, in viewer: String) -> (video: Bool, audio: Bool) {
        guard let anchor = anchorState(of: end) else { return (false, false) }
        let mode = forwardMode(from: end.roomId, into: viewer)
        return (anchor.videoAvailable && mode.video, anchor.audioAvailable && mode.audio)
    }

    /// Tells `sessions` of room `viewer` that anchor `end` (one of its own, or a PK anchor) is
    /// there, with what they can receive of it.
    func introduce(_ end: PKEnd, to sessions: [SessionID], in viewer: String) -> [Action] {
        let (video, audio) = availability(of: end, in: viewer)
        return sessions.flatMap { session -> [Action] in
            var actions: [Action] = [.send(session, .onRemoteUserEnterRoom(userId: end.userId))]
            if video { actions.append(.send(session, .onUserVideoAvailable(userId: end.userId, available: true))) }
            if audio { actions.append(.send(session, .onUserAudioAvailable(userId: end.userId, available: true))) }
            return actions
        }
    }

    /// Tells `viewer`'s room that PK anchor `end` is gone from its view and closes their subscriptions to it.
    func withdraw(_ end: PKEnd, from viewer: String) -> [Action] {
        let (video, audio) = availability(of: end, in: viewer)
        return (rooms[viewer]?.sessions() ?? []).flatMap { session -> [Action] in
            var actions: [Action] = []
            if video { actions.append(.send(session, .onUserVideoAvailable(userId: end.userId, available: false))) }
            if audio { actions.append(.send(session, .onUserAudioAvailable(userId: end.userId, available: false))) }
            actions.append(.send(session, .onRemoteUserLeaveRoom(userId: end.userId, reason: 0)))
            actions.append(.media(.unsubscribe(session: session, publisherId: end.userId, roomId: end.roomId)))
            return actions
        }
    }

    /// Removes `links`; each room that no longer sees the other end is told (while the ends are
    /// still members, so what they were seen to send is known). The home node of a linked room
    /// on another node is told too, unless it is the one that ended the link (`tellingPeers`).
    mutating func remove(links: [PKLink], tellingPeers: Bool = true) -> [Action] {
        guard !links.isEmpty else { return [] }
        let before = views
        pkLinks.removeAll { links.contains($0) }
        let gone = before.subtracting(views).sorted { ($0.viewer, $0.end.userId) < ($1.viewer, $1.end.userId) }
        var actions = gone.flatMap { withdraw($0.end, from: $0.viewer) } + links.map { Action.record(.pkUnlinked($0, onlyRoom: localRoom(of: $0))) }
        for link in links {
            guard tellingPeers, let node = remoteNode(of: link) else { continue }
            actions.append(.pkPeer(.unlink(link, node: node)))
        }
        // Remote anchors no link names any more are forgotten (after the withdrawals used them).
        let linked = Set(pkLinks.flatMap { [$0.caller, $0.callee] })
        remoteAnchors = remoteAnchors.filter { linked.contains($0.key) }
        // Forward modes between rooms no longer linked are forgotten (after the withdrawals used them).
        for (viewer, modes) in pkForward {
            let linked = linkedRooms(of: viewer)
            pkForward[viewer] = modes.filter { linked.contains($0.key) }
            if pkForward[viewer]?.isEmpty == true { pkForward[viewer] = nil }
        }
        return actions
    }

    /// A room seeing a PK anchor of another room.
    private struct View: Hashable {
        var end: PKEnd
        var viewer: String
    }

    /// Every PK anchor each room sees through the links.
    private var views: Set<View> {
        Set(pkLinks.flatMap { [View(end: $0.caller, viewer: $0.callee.roomId), View(end: $0.callee, viewer: $0.caller.roomId)] })
    }

    /// Ends every link of anchor `end` (it leaves, stops being an anchor, or its room is dismissed).
    mutating func endPKLinks(of end: PKEnd) -> [Action] {
        let actions = remove(links: pkLinks.filter { $0.has(end) })
        pkRequests.removeAll { $0.from == end || $0.to == end }
        return actions
    }

    // MARK: Requests

    /// Checks what the caller's own node can: `caller` is an anchor naming another room and its
    /// anchor, and its room may take one more linked room and PK anchor. Returns the other end.
    func checkCaller(_ caller: PKEnd, to room: RoomID?, userId: String) throws(LiveRoomError) -> PKEnd {
        guard rooms[caller.roomId]?.members[caller.userId]?.role == .anchor else {
            throw LiveRoomError(ErrorCode.pkCallerIsAudience, "only anchors connect with other rooms; switch role to anchor first")
        }
        guard let room, !userId.isEmpty else {
            throw LiveRoomError(ErrorCode.pkInvalidParameter, "name the other room (strRoomId or roomId) and its anchor (userId)")
        }
        let other = PKEnd(roomId: room.key, userId: userId)
        guard other.roomId != caller.roomId else {
            throw LiveRoomError(ErrorCode.pkInvalidParameter, "\(room) is your own room; a PK links two different rooms")
        }
        if rooms[caller.roomId]!.members[userId] != nil {
            throw LiveRoomError(ErrorCode.pkInvalidParameter, "user \(userId.quoted) is in both rooms; a PK needs distinct user ids")
        }
        try checkLimits(of: caller, linkingWith: other, code: ErrorCode.tooManyPKRooms, whose: "your room")
        return other
    }

    /// Checks the callee's side, in a room here: `callee` is an anchor of it, the caller is not
    /// a member of it, and it may take one more linked room and PK anchor.
    func checkCallee(_ callee: PKEnd, linkingWith caller: PKEnd) throws(LiveRoomError) {
        let room = RoomID(key: callee.roomId)
        guard let target = rooms[callee.roomId] else { throw LiveRoomError(ErrorCode.pkRoomNotFound, "\(room) does not exist") }
        guard target.members[callee.userId]?.role == .anchor else {
            throw LiveRoomError(ErrorCode.pkUserNotFound, "user \(callee.userId.quoted) is not an anchor in \(room)")
        }
        if target.members[caller.userId] != nil {
            throw LiveRoomError(ErrorCode.pkInvalidParameter, "user \(caller.userId.quoted) is in both rooms; a PK needs distinct user ids")
        }
        try checkLimits(of: callee, linkingWith: caller, code: ErrorCode.pkPeerRoomFull, whose: "\(room)")
    }

    /// Refuses a link `caller` asks for unless `callee` agreed to it: it accepted the caller's
    /// request (`accepted`), its room's PK allow-list names the caller's room, or the server
    /// runs open (TRTC's behaviour). A stranger cannot show itself to a room's audience, take its
    /// PK slots or start a battle with it.
    func checkConsent(of callee: PKEnd, to caller: PKEnd, accepted: Bool) throws(LiveRoomError) {
        guard !accepted, !configuration.openPKLinks else { return }
        if rooms[callee.roomId]?.pkAllowList.contains(where: { $0.key == caller.roomId }) == true { return }
        throw LiveRoomError(
            ErrorCode.pkConsentRequired,
            "\(callee.userId.quoted) has not agreed to a PK with \(RoomID(key: caller.roomId)): ask with requestPK, or have its room's owner allow yours (setPKAllowList)")
    }

    /// Refuses a request when its asker, or the anchor asked, already has the most requests
    /// waiting (a repeated request replaces the earlier one, so it is not counted).
    func checkWaitingRequests(from caller: PKEnd, to callee: PKEnd) throws(LiveRoomError) {
        let others = pkRequests.filter { !($0.from == caller && $0.to == callee) }
        if rooms[caller.roomId] != nil, others.count(where: { $0.from == caller }) >= Self.maxWaitingPKRequests {
            throw LiveRoomError(ErrorCode.tooManyPKRequests, "you have \(Self.maxWaitingPKRequests) PK requests waiting for answers; wait for them")
        }
        if rooms[callee.roomId] != nil, others.count(where: { $0.to == callee }) >= Self.maxWaitingPKRequests {
            throw LiveRoomError(ErrorCode.tooManyPKRequests, "\(callee.userId.quoted) has \(Self.maxWaitingPKRequests) PK requests waiting for its answer; try later")
        }
    }

    /// TRTC's limits on one end's room: linked rooms (3) and anchors in PK (10).
    private func checkLimits(of end: PKEnd, linkingWith far: PKEnd, code: Int, whose: String) throws(LiveRoomError) {
        let linked = linkedRooms(of: end.roomId)
        if !linked.contains(far.roomId), linked.count >= configuration.maxPKRooms {
            throw LiveRoomError(code, "\(whose) already connects with \(linked.count) rooms, the most allowed")
        }
        let anchors = anchorsInPK(of: end.roomId)
        if !anchors.contains(end.userId), anchors.count >= configuration.maxPKAnchorsPerRoom {
            throw LiveRoomError(code, "\(whose) already has \(anchors.count) anchors in PK, the most allowed")
        }
    }

    /// Checks that `caller` may link with anchor `userId` of `room`, both here; returns the other end.
    private func checkLink(from caller: PKEnd, to room: RoomID?, userId: String) throws(LiveRoomError) -> PKEnd {
        let other = try checkCaller(caller, to: room, userId: userId)
        try checkCallee(other, linkingWith: caller)
        return other
    }

    /// Whether `end`'s room is not here and may live on another node (cluster mode).
    private func isElsewhere(_ end: PKEnd) -> Bool {
        configuration.roomsOnOtherNodes && rooms[end.roomId] == nil
    }

    /// Makes the link (already checked) and tells both rooms (the one here, when the other
    /// lives on another node).
    mutating func link(_ caller: PKEnd, with callee: PKEnd, since: Int64) -> [Action] {
        if pkLinks.contains(where: { $0.has(caller) && $0.has(callee) }) { return [] }
        let newInCaller = !pkAnchors(in: caller.roomId).contains(callee)
        let newInCallee = !pkAnchors(in: callee.roomId).contains(caller)
        let made = PKLink(caller: caller, callee: callee, since: since)
        pkLinks.append(made)
        pkRequests.removeAll { ($0.from == caller && $0.to == callee) || ($0.from == callee && $0.to == caller) }
        var actions: [Action] = [.record(.pkLinked(made, onlyRoom: localRoom(of: made)))]
        if newInCaller, let room = rooms[caller.roomId] { actions += introduce(callee, to: room.sessions(), in: caller.roomId) }
        if newInCallee, let room = rooms[callee.roomId] { actions += introduce(caller, to: room.sessions(), in: callee.roomId) }
        return actions
    }

    /// Handles the PK requests; errors are answered in TRTC's callbacks.
    mutating func handlePK(_ request: RoomRequest, from session: SessionID, as caller: PKEnd, at now: EventTime) -> [Action] {
        switch request {
        case .connectOtherRoom(let room, let userId):
            do throws(LiveRoomError) {
                let other = try checkCaller(caller, to: room, userId: userId)
                if isElsewhere(other) {
                    // Its home node checks its side and answers (remoteLinkAnswered).
                    let state = anchorState(of: caller)!
                    return [.pkPeer(.link(session: session, caller: caller, state: state, callee: other, since: now.unixMillis))]
                }
                try checkCallee(other, linkingWith: caller)
                try checkConsent(of: other, to: caller, accepted: false)
                return [.send(session, .onConnectOtherRoom(userId: userId, errCode: 0, errMsg: ""))] + link(caller, with: other, since: now.unixMillis)
            } catch {
                return [.send(session, .onConnectOtherRoom(userId: userId, errCode: error.code, errMsg: error.message))]
            }
        case .requestPK(let room, let userId):
            do throws(LiveRoomError) {
                let other = try checkCaller(caller, to: room, userId: userId)
                let elsewhere = isElsewhere(other)
                if !elsewhere { try checkCallee(other, linkingWith: caller) }
                try checkWaitingRequests(from: caller, to: other)
                pkRequests.removeAll { $0.from == caller && $0.to == other }
                pkRequests.append(PKRequest(from: caller, to: other, expires: now.monotonic + configuration.pkRequestTimeout))
                // A room elsewhere: its home checks its side and shows the callee the request (remotePKRequestDelivered).
                return elsewhere ? [.pkPeer(.request(caller: caller, callee: other))] : [showRequest(from: caller, to: other)]
            } catch {
                return [.send(session, .onConnectOtherRoom(userId: userId, errCode: error.code, errMsg: error.message))]
            }
        case .answerPK(let room, let userId, let accept):
            return answerPK(from: room.map { PKEnd(roomId: $0.key, userId: userId) }, userId: userId, accept: accept, by: caller, session: session, at: now)
        case .disconnectOtherRoom:
            guard rooms[caller.roomId]?.members[caller.userId]?.role == .anchor else {
                return [.send(session, .onDisconnectOtherRoom(errCode: ErrorCode.pkCallerIsAudience, errMsg: "only anchors end PK links"))]
            }
            let links = pkLinks.filter { $0.has(caller) }
            guard !links.isEmpty else {
                return [.send(session, .onDisconnectOtherRoom(errCode: ErrorCode.pkNotConnected, errMsg: "you have no PK link"))]
            }
            return [.send(session, .onDisconnectOtherRoom(errCode: 0, errMsg: ""))] + remove(links: links)
        case .updateOtherRoomForwardMode(let room, let mode):
            return updateForwardMode(of: caller, for: room, to: mode, session: session)
        case .setPKAllowList(let list):
            guard rooms[caller.roomId]?.members[caller.userId]?.role == .anchor else {
                return [.send(session, .error(LiveRoomError(ErrorCode.pkCallerIsAudience, "only anchors set the PK allow-list"), requestType: request.type))]
            }
            // The shop checks that the caller owns the room's shop, then the room keeps the list.
            return [.catalogue(.pkAllowList(session: session, roomId: caller.roomId, rooms: list.filter { $0.key != caller.roomId }))]
        case .startPKBattle(let durationSec):
            do throws(LiveRoomError) {
                guard rooms[caller.roomId]?.members[caller.userId]?.role == .anchor else {
                    throw LiveRoomError(ErrorCode.pkCallerIsAudience, "only anchors start PK battles")
                }
                guard Self.pkBattleDurations.contains(durationSec) else {
                    throw LiveRoomError(ErrorCode.invalidPKBattle, "durationSec must be \(Self.pkBattleDurations.lowerBound)–\(Self.pkBattleDurations.upperBound), not \(durationSec)")
                }
                var sides = [caller]
                for end in pkAnchors(in: caller.roomId) where !sides.contains(where: { $0.roomId == end.roomId }) { sides.append(end) }
                guard sides.count > 1 else { throw LiveRoomError(ErrorCode.pkNotConnected, "your room has no PK link to battle over") }
                return [.battle(PKBattleCommand(session: session, sides: sides, durationSec: durationSec))]
            } catch {
                return [.send(session, .error(error, requestType: "startPKBattle"))]
            }
        default:
            return []
        }
    }

    /// The callee's answer to a PK request from `asker`.
    mutating func answerPK(from asker: PKEnd?, userId: String, accept: Bool, by caller: PKEnd, session: SessionID, at now: EventTime) -> [Action] {
        guard let asker, let index = pkRequests.firstIndex(where: { $0.from == asker && $0.to == caller && !$0.accepted }) else {
            let error = LiveRoomError(ErrorCode.noSuchUserOrRequest, "no PK request from \(userId.quoted) waits for your answer")
            return [.send(session, .error(error, requestType: accept ? "acceptPK" : "rejectPK"))]
        }
        let request = pkRequests.remove(at: index)
        let rejected = LiveRoomError(ErrorCode.pkRejected, "\(caller.userId.quoted) rejected the PK request")
        if let node = request.node {
            return accept ? acceptRemote(request, node: node, session: session, at: now) : [.pkPeer(.answer(caller: asker, callee: caller, error: rejected, node: node))]
        }
        guard let askerSession = rooms[asker.roomId]?.members[asker.userId]?.session else { return [] }
        guard accept else {
            return [.send(askerSession, .onConnectOtherRoom(userId: caller.userId, errCode: rejected.code, errMsg: rejected.message))]
        }
        do throws(LiveRoomError) {
            // Checked again: the rooms may have changed while the request waited.
            _ = try checkLink(from: asker, to: RoomID(key: caller.roomId), userId: caller.userId)
            return [
                .send(askerSession, .onConnectOtherRoom(userId: caller.userId, errCode: 0, errMsg: "")),
                .send(session, .onConnectOtherRoom(userId: asker.userId, errCode: 0, errMsg: "")),
            ] + link(asker, with: caller, since: now.unixMillis)
        } catch {
            return [
                .send(askerSession, .onConnectOtherRoom(userId: caller.userId, errCode: error.code, errMsg: error.message)),
                .send(session, .onConnectOtherRoom(userId: asker.userId, errCode: error.code, errMsg: error.message)),
            ]
        }
    }

    /// An anchor chooses what of a linked room's anchors its room receives.
    mutating func updateForwardMode(of caller: PKEnd, for room: RoomID?, to mode: PKForwardMode, session: SessionID) -> [Action] {
        guard rooms[caller.roomId]?.members[caller.userId]?.role == .anchor else {
            return [.send(session, .onUpdateOtherRoomForwardMode(errCode: ErrorCode.pkCallerIsAudience, errMsg: "only anchors change PK forwarding"))]
        }
        guard let room, linkedRooms(of: caller.roomId).contains(room.key) else {
            return [.send(session, .onUpdateOtherRoomForwardMode(errCode: ErrorCode.pkNotConnected, errMsg: "your room has no PK link with \(room?.description ?? "that room")"))]
        }
        let ends = pkAnchors(in: caller.roomId).filter { $0.roomId == room.key }
        let before = ends.map { availability(of: $0, in: caller.roomId) }
        pkForward[caller.roomId, default: [:]][room.key] = mode == .both ? nil : mode
        let sessions = rooms[caller.roomId]!.sessions()
        var actions: [Action] = [.send(session, .onUpdateOtherRoomForwardMode(errCode: 0, errMsg: ""))]
        for (end, was) in zip(ends, before) {
            let now = availability(of: end, in: caller.roomId)
            for s in sessions {
                if was.video != now.video { actions.append(.send(s, .onUserVideoAvailable(userId: end.userId, available: now.video))) }
                if was.audio != now.audio { actions.append(.send(s, .onUserAudioAvailable(userId: end.userId, available: now.audio))) }
            }
            actions.append(.media(.setForwarding(sessions: sessions, publisherRoomId: end.roomId, publisherId: end.userId, audio: mode.audio, video: mode.video)))
        }
        return actions
    }

    /// Sets the rooms whose anchors may link with `roomId`'s by connectOtherRoom without a
    /// request (checked by the caller: an owner asked, or the admin API); the room's anchors hear it.
    public mutating func setPKAllowList(_ list: [RoomID], in roomId: String) -> [Action] {
        guard rooms[roomId] != nil else { return [] }
        rooms[roomId]!.pkAllowList = Array(list.prefix(RoomRequest.maxPKAllowList))
        let event = ServerEvent.onPKAllowList(rooms: rooms[roomId]!.pkAllowList)
        return rooms[roomId]!.anchorSessions().map { .send($0, event) }
    }

    /// Shows anchor `to` (here) the PK request of `from`.
    func showRequest(from: PKEnd, to: PKEnd) -> Action {
        let timeout = Int(configuration.pkRequestTimeout.components.seconds)
        return .send(rooms[to.roomId]!.members[to.userId]!.session, .onPKRequest(userId: from.userId, room: RoomID(key: from.roomId), timeoutSec: timeout))
    }

    /// Tells anchor `end`, when it is here, how its PK with `other` ended: linked (nil), or why not.
    func tell(_ end: PKEnd, about other: PKEnd, _ error: LiveRoomError?) -> [Action] {
        guard let session = rooms[end.roomId]?.members[end.userId]?.session else { return [] }
        return [.send(session, .onConnectOtherRoom(userId: other.userId, errCode: error?.code ?? 0, errMsg: error?.message ?? ""))]
    }

    /// PK requests nobody answered in time: their askers get -3326 (the home node of an asker
    /// elsewhere times its request out itself). An accepted request whose link the asker's node
    /// did not make in time is told to the anchor who accepted it.
    public mutating func expirePKRequests(now: ContinuousClock.Instant) -> [Action] {
        let expired = pkRequests.filter { $0.expires <= now }
        pkRequests.removeAll { $0.expires <= now }
        return expired.flatMap { request in
            request.accepted
                ? tell(request.to, about: request.from, LiveRoomError(ErrorCode.pkRequestTimeout, "\(RoomID(key: request.from.roomId)) did not link in time"))
                : tell(request.from, about: request.to, LiveRoomError(ErrorCode.pkRequestTimeout, "\(request.to.userId.quoted) did not answer the PK request in time"))
        }
    }
}
