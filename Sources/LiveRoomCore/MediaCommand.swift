/// What a member publishes.
public struct PublishState: Sendable, Hashable {
    public var audio: Bool
    public var video: Bool

    public init(audio: Bool, video: Bool) {
        self.audio = audio
        self.video = video
    }
}

/// A publishing anchor as a mixer sees it: what it publishes and what it has muted.
public struct PublisherState: Sendable, Hashable {
    public var userId: String
    public var audio: Bool
    public var video: Bool
    public var audioMuted: Bool
    public var videoMuted: Bool

    public init(userId: String, audio: Bool, video: Bool, audioMuted: Bool = false, videoMuted: Bool = false) {
        self.userId = userId
        self.audio = audio
        self.video = video
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
    }
}

/// Work the room core hands to the media server.
public enum MediaCommand: Sendable, Hashable {
    /// Negotiate `userId`'s publishing peer connection from an SDP offer; the answer goes
    /// back to `session` as onPublishAnswer, then ``RoomsStateMachine/publishStarted(_:audio:video:)``.
    case publish(session: SessionID, roomId: String, userId: String, sdp: String)
    /// Negotiate a peer connection that sends `publisherId`'s media to `session` (user `userId`);
    /// `roomId` is the publisher's room (another room's, for a PK anchor).
    case subscribe(session: SessionID, roomId: String, userId: String, publisherId: String, sdp: String)
    /// Restart ICE on `session`'s subscription to `publisherId`, or (nil) its publishing
    /// connection, from an offer with new ICE credentials; the answer goes back as onIceRestartAnswer.
    case restartIce(session: SessionID, publisherId: String?, sdp: String)
    /// Close `session`'s subscription to `publisherId` (of `roomId`, when given).
    case unsubscribe(session: SessionID, publisherId: String, roomId: String? = nil)
    /// Forward to `sessions`' subscriptions to PK anchor `publisherId` of `publisherRoomId` only
    /// the kinds allowed (updateOtherRoomForwardMode).
    case setForwarding(sessions: [SessionID], publisherRoomId: String, publisherId: String, audio: Bool, video: Bool)
    /// `userId` no longer publishes in `roomId`: close its publishing connection; its subscribers stop receiving it.
    case stopPublishing(roomId: String, userId: String)
    /// Close every peer connection of `session` (it left the room or disconnected).
    case closeSession(SessionID)
}
