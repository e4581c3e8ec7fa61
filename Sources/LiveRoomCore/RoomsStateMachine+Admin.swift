import LiveRoomAuth
import LiveRoomProtocol

/// What the admin API and the server ask of the rooms: dismissing, removing, group messages,
/// and the questions about who is where.
extension RoomsStateMachine {
    // MARK: Admin

    /// DismissRoom / DismissRoomByStrRoomId (`roomId` is the room's key): everyone gets onExitRoom(2).
    public mutating func dismissRoom(_ roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        guard rooms[roomId] != nil else { throw noSuchRoom(roomId) }
        // Other rooms stop seeing this room's PK anchors first.
        var actions = rooms[roomId]!.anchorOrder.flatMap { endPKLinks(of: PKEnd(roomId: roomId, userId: $0)) }.filter { !Self.isSend(to: rooms[roomId]!, $0) }
        let room = rooms[roomId]!
        actions += room.sessions().map { .send($0, .onExitRoom(reason: 2)) }
        for member in room.members.values {
            directory.seat(member.session, nil)
            actions.append(.media(.closeSession(member.session)))
            actions.append(.record(.userLeft(roomId: roomId, userId: member.userId, at: now.unixMillis, reason: "dismissed")))
        }
        rooms[roomId] = nil
        actions.append(.record(.roomDissolved(roomId: roomId, at: now.unixMillis, reason: "dismissed")))
        return actions
    }

    /// RemoveUser / RemoveUserByStrRoomId: each named user present gets onExitRoom(1). Returns the actions
    /// and the user ids that were not in the room.
    public mutating func removeUsers(_ userIds: [String], from roomId: String, at now: EventTime) throws(LiveRoomError) -> (actions: [Action], notFound: [String]) {
        guard rooms[roomId] != nil else { throw noSuchRoom(roomId) }
        var actions: [Action] = []
        var notFound: [String] = []
        for userId in userIds {
            guard let member = rooms[roomId]?.members[userId] else {
                notFound.append(userId)
                continue
            }
            actions.append(.send(member.session, .onExitRoom(reason: 1)))
            actions += removeMember(userId, from: roomId, remoteReason: 2, record: "removed", at: now)
        }
        return (actions, notFound)
    }

    /// An IM group message from the backend: delivered to every user as a custom message
    /// from `administrator` with cmdID 0.
    public mutating func sendGroupMessage(_ data: String, to roomId: String, priority: MessagePriority) throws(LiveRoomError) -> [Action] {
        guard var room = rooms[roomId] else { throw noSuchRoom(roomId) }
        let seq = room.adminSeq
        room.adminSeq += 1
        rooms[roomId] = room
        let event = ServerEvent.onRecvCustomCmdMsg(userId: UserSig.administrator, cmdID: 0, seq: seq, data: data)
        return room.sessions().map { .send($0, event, priority) }
    }

    public func describe(_ roomId: String) -> RoomSnapshot? {
        guard let room = rooms[roomId] else { return nil }
        let users = room.members.values
            .sorted { $0.enteredAt < $1.enteredAt || ($0.enteredAt == $1.enteredAt && $0.userId < $1.userId) }
            .map { RoomSnapshot.User(userId: $0.userId, role: $0.role, enteredAt: $0.enteredAt, onMic: $0.micApproved && $0.role == .anchor) }
        return RoomSnapshot(roomId: room.id, createdAt: room.createdAt, users: users)
    }

    public var roomIds: [String] { rooms.keys.sorted() }

    /// Users in rooms, and how many of them publish (for metrics).
    public var population: (users: Int, publishers: Int) {
        rooms.values.reduce(into: (0, 0)) { total, room in
            total.0 += room.members.count
            total.1 += room.members.values.filter { $0.publishing != nil }.count
        }
    }

    /// Anchors of a room who publish, in the order they became anchors.
    /// The sessions of everyone in a room.
    public func sessions(in roomId: String) -> [SessionID] {
        rooms[roomId]?.members.values.map(\.session) ?? []
    }

    /// The sessions of the room's anchors.
    public func anchorSessions(in roomId: String) -> [SessionID] {
        rooms[roomId]?.anchorSessions() ?? []
    }

    /// The media commands of `session`'s subscription to `publisherId`, an anchor of its own room
    /// or a PK anchor its room sees (subscribed to in its own room, with the room's forward mode):
    /// for signaling's `subscribe` and for WHEP, which answers the offer itself.
    public func subscription(of session: SessionID, to publisherId: String, sdp: String) throws(LiveRoomError) -> [Action] {
        guard let (roomId, userId) = directory[session] else { throw LiveRoomError(ErrorCode.notInRoom, "enter a room first") }
        guard let publisherRoom = publisherRoom(of: publisherId, seenFrom: roomId),
            anchorState(of: PKEnd(roomId: publisherRoom, userId: publisherId))?.publishing != nil
        else {
            throw LiveRoomError(ErrorCode.notPublishing, "user \(publisherId.quoted) is not publishing in \(Self.room(roomId))")
        }
        try checkMedia(of: session, offer: sdp, sending: false)
        var actions: [Action] = [.media(.subscribe(session: session, roomId: publisherRoom, userId: userId, publisherId: publisherId, sdp: sdp))]
        let mode = forwardMode(from: publisherRoom, into: roomId)
        if publisherRoom != roomId, mode != .both {
            actions.append(.media(.setForwarding(sessions: [session], publisherRoomId: publisherRoom, publisherId: publisherId, audio: mode.audio, video: mode.video)))
        }
        return actions
    }

    /// The session of `userId` in room `roomId` (a room key), if the user is there.
    public func session(of userId: String, in roomId: String) -> SessionID? {
        rooms[roomId]?.members[userId]?.session
    }

    /// The publishers a member of `roomId` may play: the room's own, then the PK anchors it sees.
    public func visiblePublishers(in roomId: String) -> [String] {
        publishers(in: roomId) + pkAnchors(in: roomId).filter { anchorState(of: $0)?.publishing != nil }.map(\.userId)
    }

    /// Whether `id` is a valid string room id (``checkStringRoomId(_:)`` passes).
    public func isValidStringRoomId(_ id: String) -> Bool {
        (try? checkStringRoomId(id)) != nil
    }

    /// Whether `id` is a valid user id (``checkUserId(_:)`` passes).
    public func isValidUserId(_ id: String) -> Bool {
        (try? checkUserId(id)) != nil
    }

    public func publishers(in roomId: String) -> [String] {
        guard let room = rooms[roomId] else { return [] }
        return room.anchorOrder.filter { room.members[$0]?.publishing != nil }
    }

    /// What each publishing anchor of a room sends, in the order they became anchors (for mixers).
    public func publisherStates(in roomId: String) -> [PublisherState] {
        guard let room = rooms[roomId] else { return [] }
        return room.anchorOrder.compactMap { userId in
            guard let member = room.members[userId], let publishing = member.publishing else { return nil }
            return PublisherState(
                userId: userId, audio: publishing.audio, video: publishing.video, audioMuted: member.audioMuted, videoMuted: member.videoMuted)
        }
    }

    /// The role of a session's user, if it is in a room.
    public func role(of session: SessionID) -> Role? {
        guard let (roomId, userId) = directory[session] else { return nil }
        return rooms[roomId]?.members[userId]?.role
    }
}
