import Foundation

/// What a room's home node and the node relaying a client's signaling to it say about that
/// client's media, inside the relayed WebSocket (cluster mode): the home node decides (the
/// room's rules: roles, PrivateMapKey, PK), the relaying node makes the subscriber's peer
/// connection on its own media port, from its mirror of the publisher. Frames begin with
/// ``prefix``; the relaying node never passes such a frame on from the client, and the home
/// node takes them only on a relayed connection.
struct NodeMediaFrame: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable {
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

    var kind: Kind
    var id: Int?
    var roomId: String?
    var publisherId: String?
    var sdp: String?
    var error: String?
    var audio: Bool?
    var video: Bool?
    /// With `subscribe`: the media address (`host:port`) of the node the publisher publishes on,
    /// when it is not the room's home (a PK anchor of a room on another node).
    var mediaHome: String?

    static let prefix = "{\"liveroomNode\":"
    /// The largest frame taken (an SDP offer or answer is a few KiB).
    static let maximumSize = 256 << 10

    private struct Body: Codable {
        var id: Int?
        var roomId: String?
        var publisherId: String?
        var sdp: String?
        var error: String?
        var audio: Bool?
        var video: Bool?
        var mediaHome: String?
    }

    private struct Envelope: Codable {
        var liveroomNode: Kind
        var body: Body
    }

    var text: String {
        let body = Body(id: id, roomId: roomId, publisherId: publisherId, sdp: sdp, error: error, audio: audio, video: video, mediaHome: mediaHome)
        let encoded = (try? JSONEncoder().encode(body)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return Self.prefix + "\"\(kind.rawValue)\",\"body\":" + encoded + "}"
    }

    /// Whether a frame is one of these (by its beginning).
    static func isNodeFrame(_ text: String) -> Bool {
        text.hasPrefix(prefix)
    }

    static func parse(_ text: String) -> NodeMediaFrame? {
        guard isNodeFrame(text), text.utf8.count <= maximumSize, let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(text.utf8)) else {
            return nil
        }
        let body = envelope.body
        return NodeMediaFrame(
            kind: envelope.liveroomNode, id: body.id, roomId: body.roomId, publisherId: body.publisherId, sdp: body.sdp, error: body.error, audio: body.audio,
            video: body.video, mediaHome: body.mediaHome)
    }
}
