import LiveRoomAuth
import LiveRoomProtocol

/// Roles, mic-connection, publishing and room messages.
extension RoomsStateMachine {
    // MARK: Roles and mic-connection

    mutating func switchRole(_ userId: String, in roomId: String, to role: Role, at now: EventTime) throws(LiveRoomError) -> [Action] {
        let member = rooms[roomId]!.members[userId]!
        guard member.role != role else {
            return [.send(member.session, .onSwitchRole(errCode: 0, errMsg: "", role: role))]
        }
        if role == .anchor, !member.enteredAsAnchor, !member.micApproved {
            throw LiveRoomError(
                ErrorCode.micApprovalRequired,
                "switching to anchor needs an anchor to accept your mic request (requestMic) or an accepted invitation")
        }
        return try setRole(userId, in: roomId, to: role, at: now)
    }

    /// Changes a member's role and announces it. Leaving the anchor role ends mic approval.
    mutating func setRole(_ userId: String, in roomId: String, to role: Role, at now: EventTime) throws(LiveRoomError) -> [Action] {
        var room = rooms[roomId]!
        var member = room.members[userId]!
        if role == .anchor, room.anchorCount >= configuration.maxAnchorsPerRoom {
            throw tooManyAnchors(roomId)
        }
        member.role = role
        if role == .anchor {
            room.anchorOrder.append(userId)
            room.micRequests.removeAll { $0 == userId }
            room.invitations[userId] = nil
        } else {
            room.anchorOrder.removeAll { $0 == userId }
            member.micApproved = false
        }
        rooms[roomId] = room
        // An anchor who becomes audience ends its PK links and stops publishing first.
        var actions: [Action] = role == .audience ? endPKLinks(of: PKEnd(roomId: roomId, userId: userId)) + stopPublishing(userId, in: roomId) : []
        room = rooms[roomId]!
        member.publishing = room.members[userId]!.publishing
        room.members[userId] = member
        rooms[roomId] = room
        actions += [
            .send(member.session, .onSwitchRole(errCode: 0, errMsg: "", role: role)),
            .record(.roleChanged(roomId: roomId, userId: userId, role: role, at: now.unixMillis)),
        ]
        for s in room.sessions(except: userId) {
            actions.append(.send(s, role == .anchor ? .onRemoteUserEnterRoom(userId: userId) : .onRemoteUserLeaveRoom(userId: userId, reason: 3)))
        }
        return actions
    }

    mutating func requestMic(_ userId: String, in roomId: String) throws(LiveRoomError) -> [Action] {
        var room = rooms[roomId]!
        guard room.members[userId]!.role == .audience else {
            throw LiveRoomError(ErrorCode.audienceOnly, "you are already an anchor")
        }
        let anchors = room.anchorSessions()
        guard !anchors.isEmpty else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "\(Self.room(roomId)) has no anchor to ask")
        }
        if !room.micRequests.contains(userId) { room.micRequests.append(userId) }
        rooms[roomId] = room
        return anchors.map { .send($0, .onMicRequest(userId: userId)) }
    }

    mutating func answerMicRequest(from target: String, by anchorId: String, in roomId: String, accept: Bool, at now: EventTime) throws(LiveRoomError) -> [Action] {
        try requireAnchor(anchorId, in: roomId)
        var room = rooms[roomId]!
        guard room.micRequests.contains(target), let asker = room.members[target] else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "no pending mic request from \(target.quoted)")
        }
        room.micRequests.removeAll { $0 == target }
        rooms[roomId] = room
        guard accept else {
            return [.send(asker.session, .onMicRequestResult(userId: anchorId, accepted: false, reason: "rejected by \(anchorId)"))]
        }
        do {
            let switched = try bringOnMic(target, in: roomId, at: now)
            return [.send(asker.session, .onMicRequestResult(userId: anchorId, accepted: true, reason: "accepted by \(anchorId)"))] + switched
        } catch {
            let anchorSession = room.members[anchorId]!.session
            return [
                .send(asker.session, .onMicRequestResult(userId: anchorId, accepted: false, reason: error.message)),
                .send(anchorSession, .error(error, requestType: "acceptMic")),
            ]
        }
    }

    mutating func inviteMic(_ target: String, by anchorId: String, in roomId: String) throws(LiveRoomError) -> [Action] {
        try requireAnchor(anchorId, in: roomId)
        guard let invited = rooms[roomId]!.members[target] else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "user \(target.quoted) is not in \(Self.room(roomId))")
        }
        guard invited.role == .audience else {
            throw LiveRoomError(ErrorCode.audienceOnly, "user \(target.quoted) is already an anchor")
        }
        rooms[roomId]!.invitations[target] = anchorId
        return [.send(invited.session, .onMicInvitation(userId: anchorId))]
    }

    mutating func answerInvitation(_ userId: String, in roomId: String, accept: Bool, at now: EventTime) throws(LiveRoomError) -> [Action] {
        guard let inviterId = rooms[roomId]!.invitations[userId] else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "you have no pending mic invitation")
        }
        rooms[roomId]!.invitations[userId] = nil
        let inviterSession = rooms[roomId]!.members[inviterId]?.session
        guard accept else {
            return inviterSession.map { [.send($0, .onMicInvitationResult(userId: userId, accepted: false, reason: "rejected by \(userId)"))] } ?? []
        }
        do {
            let switched = try bringOnMic(userId, in: roomId, at: now)
            let answer = inviterSession.map { [Action.send($0, .onMicInvitationResult(userId: userId, accepted: true, reason: "accepted"))] } ?? []
            return answer + switched
        } catch {
            let answer = inviterSession.map { [Action.send($0, .onMicInvitationResult(userId: userId, accepted: false, reason: error.message))] } ?? []
            return answer + [.send(rooms[roomId]!.members[userId]!.session, .error(error, requestType: "acceptInvitation"))]
        }
    }

    /// Switches an approved audience member to anchor; they stay approved while on mic.
    mutating func bringOnMic(_ userId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        let actions = try setRole(userId, in: roomId, to: .anchor, at: now)
        rooms[roomId]!.members[userId]!.micApproved = true
        return actions
    }

    mutating func endMic(_ target: String, by anchorId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        try requireAnchor(anchorId, in: roomId)
        guard let member = rooms[roomId]!.members[target], member.role == .anchor else {
            throw LiveRoomError(ErrorCode.noSuchUserOrRequest, "user \(target.quoted) is not on mic in \(Self.room(roomId))")
        }
        guard member.micApproved else {
            throw LiveRoomError(ErrorCode.notCoHost, "user \(target.quoted) is an anchor of the room, not a mic-connection co-host")
        }
        return try setRole(target, in: roomId, to: .audience, at: now)
    }

    func requireAnchor(_ userId: String, in roomId: String) throws(LiveRoomError) {
        guard rooms[roomId]!.members[userId]!.role == .anchor else {
            throw LiveRoomError(ErrorCode.anchorOnly, "only an anchor may do this")
        }
    }

    // MARK: Publishing

    /// Ends a member's publishing: the media server closes it and the room is told.
    mutating func stopPublishing(_ userId: String, in roomId: String) -> [Action] {
        guard let before = rooms[roomId]?.members[userId], before.publishing != nil else { return [] }
        var after = before
        after.publishing = nil
        rooms[roomId]!.members[userId] = after
        return [.media(.stopPublishing(roomId: roomId, userId: userId))] + availabilityChanges(of: userId, in: roomId, from: before, to: after)
    }

    mutating func setMuted(_ userId: String, in roomId: String, _ change: (inout Member) -> Void) -> [Action] {
        let before = rooms[roomId]!.members[userId]!
        var after = before
        change(&after)
        rooms[roomId]!.members[userId] = after
        return availabilityChanges(of: userId, in: roomId, from: before, to: after)
    }

    /// onUserVideoAvailable / onUserAudioAvailable to everyone else for what changed.
    /// Rooms linked with the member's through PK hear of it too, as far as their forward mode lets through.
    func availabilityChanges(of userId: String, in roomId: String, from before: Member, to after: Member, except: String? = nil) -> [Action] {
        var actions: [Action] = []
        func tell(_ sessions: [SessionID], video: Bool, audio: Bool) {
            for s in sessions {
                if before.videoAvailable != after.videoAvailable, video {
                    actions.append(.send(s, .onUserVideoAvailable(userId: userId, available: after.videoAvailable)))
                }
                if before.audioAvailable != after.audioAvailable, audio {
                    actions.append(.send(s, .onUserAudioAvailable(userId: userId, available: after.audioAvailable)))
                }
            }
        }
        tell(rooms[roomId]!.sessions(except: except ?? userId), video: true, audio: true)
        // A replaced session's media ends with its leaving (`except` is set only then).
        if except == nil, before.videoAvailable != after.videoAvailable || before.audioAvailable != after.audioAvailable {
            actions.append(
                .record(
                    .mediaChanged(
                        roomId: roomId, userId: userId,
                        video: before.videoAvailable != after.videoAvailable ? after.videoAvailable : nil,
                        audio: before.audioAvailable != after.audioAvailable ? after.audioAvailable : nil)))
        }
        let end = PKEnd(roomId: roomId, userId: userId)
        for viewer in roomsSeeing(end).sorted() {
            let mode = forwardMode(from: roomId, into: viewer)
            tell(rooms[viewer]?.sessions() ?? [], video: mode.video, audio: mode.audio)
        }
        // The homes of linked rooms on other nodes hear what the anchor sends now.
        return actions + peerNodes(seeing: end).map { .pkPeer(.anchorState(end, AnchorState(after), node: $0)) }
    }

    // MARK: Room messages

    func requireAnchor(_ userId: String, in roomId: String, to what: String) throws(LiveRoomError) {
        guard rooms[roomId]?.members[userId]?.role == .anchor else {
            throw LiveRoomError(ErrorCode.anchorOnly, "only anchors \(what)")
        }
    }

    /// The custom message (cmdID 1, high priority, as TRTC's guide sends pop-ups) of a pop-up
    /// `session`'s user made, to everyone else in its room; nothing when it has left.
    public mutating func popUpMessage(_ data: String, from session: SessionID) -> [Action] {
        guard let (roomId, userId) = directory[session], var member = rooms[roomId]?.members[userId] else { return [] }
        let seq = member.nextSeq
        member.nextSeq += 1
        rooms[roomId]!.members[userId] = member
        let event = ServerEvent.onRecvCustomCmdMsg(userId: userId, cmdID: 1, seq: seq, data: data)
        return rooms[roomId]!.sessions(except: userId).map { .send($0, event, .high) }
    }

    mutating func sendCustomCmdMsg(_ message: CustomCmdMsg, from userId: String, in roomId: String, at now: EventTime) throws(LiveRoomError) -> [Action] {
        guard configuration.customCmdIDs.contains(message.cmdID) else {
            throw LiveRoomError(
                ErrorCode.invalidCustomMessage,
                "cmdID must be from \(configuration.customCmdIDs.lowerBound) to \(configuration.customCmdIDs.upperBound), not \(message.cmdID)")
        }
        let size = message.data.utf8.count
        guard size <= configuration.maxCustomMessageBytes else {
            throw LiveRoomError(
                ErrorCode.invalidCustomMessage, "data is \(size) bytes; at most \(configuration.maxCustomMessageBytes) are allowed")
        }
        var member = rooms[roomId]!.members[userId]!
        try member.limiter.admit(size: size, now: now.monotonic)
        let seq = member.nextSeq
        member.nextSeq += 1
        rooms[roomId]!.members[userId] = member
        let event = ServerEvent.onRecvCustomCmdMsg(userId: userId, cmdID: message.cmdID, seq: seq, data: message.data)
        return rooms[roomId]!.sessions(except: userId).map { .send($0, event) }
    }

    /// Whether an action is a message to someone in `room` (who is about to be told the room is gone).
    static func isSend(to room: Room, _ action: Action) -> Bool {
        guard case .send(let session, _, _) = action else { return false }
        return room.members.values.contains { $0.session == session }
    }

    /// A request about the session's media: publishing, subscribing, muting.
    mutating func handleMedia(_ request: RoomRequest, from session: SessionID, as userId: String, in roomId: String) throws(LiveRoomError) -> [Action] {
        switch request {
        case .publish(let sdp):
            guard rooms[roomId]!.members[userId]!.role == .anchor else {
                throw LiveRoomError(ErrorCode.audienceCannotPublish, "only anchors publish; switch role to anchor first")
            }
            try checkMedia(of: session, offer: sdp, sending: true)
            return [.media(.publish(session: session, roomId: roomId, userId: userId, sdp: sdp))]
        case .unpublish:
            return stopPublishing(userId, in: roomId)
        case .subscribe(let publisherId, let sdp):
            return try subscription(of: session, to: publisherId, sdp: sdp)
        case .unsubscribe(let publisherId):
            return [.media(.unsubscribe(session: session, publisherId: publisherId))]
        case .restartIce(let publisherId, let sdp):
            if publisherId == nil, rooms[roomId]!.members[userId]!.publishing == nil {
                throw LiveRoomError(ErrorCode.notPublishing, "there is no publishing connection to restart: publish first")
            }
            return [.media(.restartIce(session: session, publisherId: publisherId, sdp: sdp))]
        case .muteLocalVideo(let mute):
            return setMuted(userId, in: roomId) { $0.videoMuted = mute }
        case .muteLocalAudio(let mute):
            return setMuted(userId, in: roomId) { $0.audioMuted = mute }
        default:
            return []
        }
    }

    /// A request about the room's shop, checked here and carried out by the catalogue.
    func handleCatalogue(_ request: RoomRequest, from session: SessionID, as userId: String, in roomId: String) throws(LiveRoomError) -> [Action] {
        switch request {
        case .addProduct(let fields):
            try requireAnchor(userId, in: roomId, to: "add products")
            return [.catalogue(.add(session: session, roomId: roomId, fields: fields))]
        case .editProduct(let itemNumber, let changes):
            try requireAnchor(userId, in: roomId, to: "edit products")
            return [.catalogue(.edit(session: session, roomId: roomId, itemNumber: itemNumber, changes: changes))]
        case .removeProduct(let itemNumber):
            try requireAnchor(userId, in: roomId, to: "remove products")
            return [.catalogue(.remove(session: session, roomId: roomId, itemNumber: itemNumber))]
        case .listProducts(let offset, let limit):
            return [.catalogue(.list(session: session, roomId: roomId, offset: offset, limit: limit))]
        case .popProduct(let itemNumber, let custom):
            try requireAnchor(userId, in: roomId, to: "pop products")
            return [.catalogue(.pop(session: session, roomId: roomId, userId: userId, itemNumber: itemNumber, custom: custom))]
        case .unpopProduct:
            try requireAnchor(userId, in: roomId, to: "end pop-ups")
            return [.catalogue(.unpop(session: session, roomId: roomId, userId: userId))]
        case .removeReplay(let replayId):
            try requireAnchor(userId, in: roomId, to: "remove replays")
            return [.catalogue(.removeReplay(session: session, roomId: roomId, replayId: replayId))]
        case .shopOwner(let target, let grant):
            // The shop checks that the caller is an owner; the target need not be in the room.
            return [.catalogue(.owner(session: session, roomId: roomId, userId: target, grant: grant))]
        case .buyProduct(let itemNumber, let quantity, let requestId):
            return [
                .catalogue(.buy(session: session, roomId: roomId, userId: userId, itemNumber: itemNumber, quantity: quantity, requestId: requestId))
            ]
        default:
            return []
        }
    }
}
