import Foundation
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomSFU
import LiveRoomTransport
import Logging
import NIOCore
import NIOPosix

/// WHIP and WHEP sessions: a room member without a WebSocket, whose resource is its session.
extension MediaSessions {
    // MARK: WHIP and WHEP sessions

    /// Why a WHIP or WHEP request was refused: an HTTP status and a readable message.
    struct HTTPRefusal: Error {
        var status: Int
        var message: String

        init(status: Int, message: String) {
            self.status = status
            self.message = message
        }

        /// A room's refusal as HTTP: a bad UserSig 401, a limit or privilege 403.
        init(_ error: LiveRoomError) {
            status = switch error.code {
            case ErrorCode.invalidUserSig, ErrorCode.userSigCheckFailed: 401
            case ErrorCode.tooManyAnchors, ErrorCode.privilegeCheckFailed: 403
            case ErrorCode.notPublishing: 404
            default: 400
            }
            message = "\(error.code): \(error.message)"
        }
    }

    /// A WHEP session of a user who is in the room over signaling too (the watch page): its
    /// subscription belongs to the signaling session, which keeps the user's one seat.
    struct AttachedPlayback: Sendable {
        var owner: SessionID
        var roomKey: String
        var userId: String
        var publisherId: String
        var publisherRoom: String
    }

    /// Enters a room for a WHIP/WHEP client (a session without a WebSocket) and negotiates
    /// its peer connection: publish for WHIP, play the first publishing anchor (or `anchor`,
    /// which may be a PK anchor the room sees) for WHEP. A WHEP request of a user who is in
    /// the room over signaling does not enter again (that would replace the signaling session):
    /// the subscription is that session's. Returns the session, which names the WHIP/WHEP resource.
    func enterForHTTP(
        roomId: String, userId: String, userSig: String, privateMapKey: String = "", publish: Bool, anchor: String?, offer: String
    ) async throws(HTTPRefusal) -> (SessionID, String) {
        let (session, answer, _) = try await enterForHTTP(
            roomId: roomId, userId: userId, userSig: userSig, privateMapKey: privateMapKey, publish: publish, anchor: anchor, offer: offer, mediaOn: nil)
        return (session, answer)
    }

    /// Cluster mode: a WHEP session whose media another node makes (``RemotePlayback``): the
    /// room's rules are checked and the user enters here, as for any WHEP session, but no media
    /// is made; the answer names the publisher, which node `mediaOn.node` then mirrors for its
    /// peer connection `mediaOn.owner`.
    func enterForRemotePlayback(
        roomId: String, userId: String, userSig: String, privateMapKey: String, anchor: String?, offer: String, mediaOn: RemotePlayback.MediaNode
    ) async throws(HTTPRefusal) -> (SessionID, SFURouter.PublisherKey) {
        let (session, _, publisher) = try await enterForHTTP(
            roomId: roomId, userId: userId, userSig: userSig, privateMapKey: privateMapKey, publish: false, anchor: anchor, offer: offer, mediaOn: mediaOn)
        return (session, publisher!)
    }

    func enterForHTTP(
        roomId: String, userId: String, userSig: String, privateMapKey: String, publish: Bool, anchor: String?, offer: String,
        mediaOn: RemotePlayback.MediaNode?
    ) async throws(HTTPRefusal) -> (SessionID, String, SFURouter.PublisherKey?) {
        guard let media, let hub else { throw HTTPRefusal(status: 503, message: "the media port is not running") }
        let session = await hub.newSession()
        let roomKey = RoomID.string(roomId).key
        let params = EnterRoomParams(
            sdkAppId: template.configuration.sdkAppId, userId: userId, userSig: userSig, strRoomId: roomId, role: publish ? .anchor : .audience, privateMapKey: privateMapKey)
        // The subscription's owner: the user's signaling session, or this new session in the room.
        var owner = session
        let signaling = publish ? nil : await seats.room(roomKey)?.read { $0.session(of: userId, in: roomKey) }
        if let signaling, outboxes[signaling] != nil {
            do throws(LiveRoomError) {
                try template.validate(params, now: EventTime.now().unixSeconds)
            } catch {
                throw HTTPRefusal(error)
            }
            owner = signaling
        } else if case .refused(let error) = await hub.enter(params, from: session) {
            throw HTTPRefusal(error)
        }
        guard let room = seats.room(roomKey) else { throw HTTPRefusal(status: 409, message: "room \(roomId.quoted) closed meanwhile") }
        if publish {
            do throws(HTTPRefusal) {
                return (session, try await publishForHTTP(session, in: room, userId: userId, offer: offer, media: media), nil)
            } catch {
                await leaveForHTTP(session)
                throw error
            }
        }
        guard let publisherId = await room.read({ anchor ?? $0.visiblePublishers(in: roomKey).first }) else {
            if owner == session { await leaveForHTTP(session) }
            throw HTTPRefusal(status: 409, message: "nobody publishes in room \(roomId.quoted) yet")
        }
        let subscription: (actions: [RoomsStateMachine.Action], home: String?)
        do throws(LiveRoomError) {
            subscription = try await room.update { [owner] machine throws(LiveRoomError) in
                let actions = try machine.subscription(of: owner, to: publisherId, sdp: offer)
                var home: String?
                for case .media(.subscribe(_, let room, _, _, _)) in actions where room != roomKey { home = machine.remoteNode(ofRoom: room) }
                return ((actions, home), [])
            }
        } catch {
            if owner == session { await leaveForHTTP(session) }
            throw HTTPRefusal(error)
        }
        var publisherRoom = roomKey
        var rest: [RoomsStateMachine.Action] = []
        for action in subscription.actions {
            if case .media(.subscribe(_, let room, _, _, _)) = action { publisherRoom = room } else { rest.append(action) }
        }
        let answer: String
        do {
            if let mediaOn {
                // The node the client reached makes the media; this node only keeps the seat.
                answer = ""
                httpSessions.mediaNodes[session] = mediaOn
            } else {
                answer = try await subscriptionAnswer(owner: owner, roomId: publisherRoom, publisherId: publisherId, offer: offer, home: subscription.home, media: media)()
            }
        } catch {
            if owner == session { await leaveForHTTP(session) }
            throw HTTPRefusal(status: 400, message: "the offer cannot be used: \(error)")
        }
        await room.execute(rest)
        if owner != session {
            // A new subscription of the owner to the publisher replaced any earlier one; entries
            // of owners gone from their rooms are dropped here too.
            httpSessions.attached = httpSessions.attached.filter { _, playback in
                !(playback.owner == owner && playback.publisherId == publisherId) && seats.seat(of: playback.owner) != nil
            }
            httpSessions.attached[session] = AttachedPlayback(
                owner: owner, roomKey: roomKey, userId: userId, publisherId: publisherId, publisherRoom: publisherRoom)
        }
        return (session, answer, SFURouter.PublisherKey(roomId: publisherRoom, userId: publisherId))
    }

    /// The WHIP session `session`, in its room, publishes `offer`; returns the answer.
    func publishForHTTP(_ session: SessionID, in room: Room, userId: String, offer: String, media: any MediaPort) async throws(HTTPRefusal) -> String {
        let refusal = await room.read { machine -> LiveRoomError? in
            do throws(LiveRoomError) {
                try machine.checkMedia(of: session, offer: offer, sending: true)
                return nil
            } catch {
                return error
            }
        }
        if let refusal { throw HTTPRefusal(refusal) }
        do {
            let (answer, audio, video) = try await media.publish(owner: session, roomId: room.key, userId: userId, offer: offer).get()
            await published(session: session, roomId: room.key, userId: userId, answer: answer, audio: audio, video: video)
            return answer
        } catch {
            throw HTTPRefusal(status: 400, message: "the offer cannot be used: \(error)")
        }
    }

    /// A WHIP/WHEP PATCH with the client's ICE credentials: an ICE restart when they are new,
    /// nil when they are the ones in use (a trickled candidate, which an ICE-lite server needs not).
    func restartICEForHTTP(_ session: SessionID, publishing: Bool, remote: ICECredentials) async throws(HTTPRefusal) -> SFURouter.ICERestartAnswer? {
        guard let media else { throw HTTPRefusal(status: 503, message: "the media port is not running") }
        var owner = session
        var target: SFURouter.ICERestartTarget = publishing ? .publishing : .subscription(publisherId: nil)
        if !publishing, let playback = httpSessions.attached[session] {
            owner = playback.owner
            target = .subscription(publisherId: playback.publisherId)
        }
        do {
            return try await media.restartICE(owner: owner, target: target, remote: remote, fingerprint: nil).get()
        } catch {
            throw HTTPRefusal(status: 409, message: "the ICE restart cannot be done: \(error)")
        }
    }

    /// Whether a WHIP/WHEP resource is a session in this (string) room as this user.
    func isHTTPSession(_ session: SessionID, roomId: String, userId: String) -> Bool {
        if remotePlayback(session, roomKey: RoomID.string(roomId).key, userId: userId) != nil { return true }
        if let playback = httpSessions.attached[session] {
            // The owner must still be that user in that room (a connection may leave and enter another).
            return playback.roomKey == RoomID.string(roomId).key && playback.userId == userId
                && seats.seat(of: playback.owner).map { $0 == (playback.roomKey, playback.userId) } == true
        }
        return outboxes[session] == nil && seats.seat(of: session).map { $0 == (RoomID.string(roomId).key, userId) } == true
    }

    /// Ends a WHIP/WHEP session: it leaves the room and its peer connection closes. An attached
    /// playback ends only its subscription; its signaling session stays in the room.
    func leaveForHTTP(_ session: SessionID) async {
        if httpSessions.remote[session] != nil { return endRemotePlayback(session) }
        endRemoteMedia(of: session)
        if let playback = httpSessions.attached.removeValue(forKey: session) {
            media?.unsubscribe(owner: playback.owner, publisherId: playback.publisherId, roomId: playback.publisherRoom)
            return
        }
        await seats.room(of: session)?.update { $0.handle(.exitRoom, from: session, at: .now()) }
        media?.close(owner: session)
    }

    /// Whether `id` is a string room id TRTC takes (the watch page's path).
    func isValidRoomId(_ id: String) -> Bool {
        template.isValidStringRoomId(id)
    }
}

/// WHEP sessions that are not simply a session of their own in the room.
struct HTTPSessions {
    /// WHEP sessions attached to signaling sessions, by resource id.
    var attached: [SessionID: MediaSessions.AttachedPlayback] = [:]
    /// Cluster mode, on a room's home: WHEP sessions here whose media another node makes.
    var mediaNodes: [SessionID: RemotePlayback.MediaNode] = [:]
    /// Cluster mode, on the node a WHEP client reached: its peer connections whose session
    /// (the seat in the room) is on the room's home, by owner.
    var remote: [UInt64: RemotePlayback] = [:]
}
