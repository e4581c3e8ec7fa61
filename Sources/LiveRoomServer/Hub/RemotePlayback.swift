import LiveRoomCluster
import LiveRoomCore

/// Cluster mode: a WHEP viewer's media on the node its request reached (V), as for a viewer
/// over signaling, while its seat is in the room on the room's home (H). V checks the UserSig
/// and asks H (the request forwarded, with V's node and the owner of the peer connection it
/// will make); H checks the room's rules, enters the user and names the publisher; V makes the
/// peer connection from its mirror of the publisher and answers the client, with a Location
/// naming V (`V~owner`). Either end tells the other when the session ends
/// (``PlaybackMessage``): H when the user leaves the room (removed, the room dismissed), V when the
/// client deletes the resource or its peer connection is lost.
struct RemotePlayback: Sendable {
    /// The node making a WHEP session's media, and the owner of its peer connection there.
    struct MediaNode: Sendable, Hashable {
        var node: String
        var owner: UInt64
    }

    /// The room's home and the session (the seat) there.
    var home: NodeRegistration
    var session: UInt64
    var roomKey: String
    var userId: String

    /// Headers of a WHEP request forwarded to the room's home for a session whose media the
    /// forwarding node makes.
    static let nodeHeader = "x-liveroom-media-node"
    static let ownerHeader = "x-liveroom-media-owner"
}

extension MediaSessions {
    /// V: a peer connection made here for a session on the room's home.
    func startRemotePlayback(owner: UInt64, _ playback: RemotePlayback) {
        httpSessions.remote[owner] = playback
    }

    /// V: the remote playback `owner` is, when it is `userId`'s in `roomKey`.
    func remotePlayback(_ owner: UInt64, roomKey: String, userId: String) -> RemotePlayback? {
        httpSessions.remote[owner].flatMap { $0.roomKey == roomKey && $0.userId == userId ? $0 : nil }
    }

    /// V: the client ended the session, or its peer connection was lost: the media here ends
    /// and the home hears of it.
    func endRemotePlayback(_ owner: UInt64) {
        guard let playback = httpSessions.remote.removeValue(forKey: owner) else { return }
        media?.close(owner: owner)
        Task { _ = await nodes.ask(playback.home, .playback(.ended(session: playback.session, from: nodes.nodeId))) }
    }

    /// V: the nodes alive now: the peer connections of sessions seated on a node that died are
    /// closed (the client makes a new session, which reaches the room's new home).
    func playbackHomesAlive(_ alive: Set<String>) {
        for (owner, playback) in httpSessions.remote where !alive.contains(playback.home.nodeId) {
            httpSessions.remote[owner] = nil
            media?.close(owner: owner)
        }
    }

    /// H: `session` left (or its signaling session, which a WHEP session attached to, closed):
    /// the nodes making their media are told to end it.
    func endRemoteMedia(of session: SessionID) {
        guard !httpSessions.mediaNodes.isEmpty else { return }
        let ended = [session] + httpSessions.attached.filter { $0.value.owner == session }.map(\.key)
        for session in ended {
            guard let mediaOn = httpSessions.mediaNodes.removeValue(forKey: session) else { continue }
            Task {
                guard let node = await nodes.liveNode(mediaOn.node) else { return }
                _ = await nodes.ask(node, .playback(.close(owner: mediaOn.owner, from: nodes.nodeId)))
            }
        }
    }

    /// A `playback` node message (``NodeMessage``, its relay token checked): whether it
    /// named something it may end.
    func remotePlaybackMessage(_ message: PlaybackMessage) async -> Bool {
        switch message {
        case .close(let owner, let node):
            guard let playback = httpSessions.remote[owner], playback.home.nodeId == node else { return false }
            httpSessions.remote[owner] = nil
            media?.close(owner: owner)
        case .ended(let session, let node):
            guard httpSessions.mediaNodes[session]?.node == node else { return false }
            httpSessions.mediaNodes[session] = nil
            await leaveForHTTP(session)
        }
        return true
    }
}
