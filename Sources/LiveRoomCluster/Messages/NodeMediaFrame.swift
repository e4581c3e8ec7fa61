/// What a room's home node and the node relaying a client's signaling to it say about that
/// client's media, inside the relayed WebSocket (cluster mode): the home node decides (the
/// room's rules: roles, PrivateMapKey, PK), the relaying node makes the subscriber's peer
/// connection on its own media port, from its mirror of the publisher. Sent as
/// ``NodeMessage/media(_:)``; the relaying node never passes a node message on from the
/// client, and the home node takes them only on a relayed connection.
public struct NodeMediaFrame: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// Home → relay: make `owner`'s subscription to `publisherId` of `roomId` from `sdp`.
        case subscribe
        /// Home → relay: restart ICE on the subscription to `publisherId` with the client's offer `sdp`.
        case restartIce
        /// Relay → home: the answer to request `id` (`sdp`), or why not (`error`).
        case answer
        /// Home → relay: stop the subscription to `publisherId` (of `roomId`, when given).
        case unsubscribe
        /// Home → relay: pause or resume kinds of the subscription (PK forward modes).
        case forwarding
        /// Home → relay: close every media connection of the client.
        case close
    }

    public var kind: Kind
    public var id: Int?
    public var roomId: String?
    public var publisherId: String?
    public var sdp: String?
    public var error: String?
    public var audio: Bool?
    public var video: Bool?
    /// With `subscribe`: the media address (`host:port`) of the node the publisher publishes on,
    /// when it is not the room's home (a PK anchor of a room on another node).
    public var mediaHome: String?

    public init(
        kind: Kind, id: Int? = nil, roomId: String? = nil, publisherId: String? = nil, sdp: String? = nil, error: String? = nil, audio: Bool? = nil,
        video: Bool? = nil, mediaHome: String? = nil
    ) {
        self.kind = kind
        self.id = id
        self.roomId = roomId
        self.publisherId = publisherId
        self.sdp = sdp
        self.error = error
        self.audio = audio
        self.video = video
        self.mediaHome = mediaHome
    }

    /// The largest frame taken (an SDP offer or answer is a few KiB).
    public static let maximumSize = 256 << 10
}
