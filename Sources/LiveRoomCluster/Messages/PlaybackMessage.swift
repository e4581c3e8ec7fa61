import LiveRoomProtocol

/// What the two ends of a WHEP session split between two nodes tell each other (cluster mode),
/// as ``NodeMessage/playback(_:)``: `close` (the room's home → the node making the media: end
/// the peer connection of `owner`) or `ended` (the other way: the session `session` ended). Ids
/// travel as decimal strings (they exceed a JSON number's exact range).
public enum PlaybackMessage: Sendable, Equatable {
    case close(owner: UInt64, from: String)
    case ended(session: UInt64, from: String)

    /// The largest body taken.
    public static let maxBodyBytes = 1024

    public var json: JSONValue {
        switch self {
        case .close(let owner, let node): ["Kind": "close", "Owner": .string(String(owner)), "Node": .string(node)]
        case .ended(let session, let node): ["Kind": "ended", "Session": .string(String(session)), "Node": .string(node)]
        }
    }

    public static func parse(_ text: String) -> PlaybackMessage? {
        guard text.utf8.count <= maxBodyBytes, let value = try? JSONValue.parse(text), let node = value["Node"]?.stringValue, ClusterRules.isValidNodeId(node)
        else { return nil }
        switch value["Kind"]?.stringValue {
        case "close": return value["Owner"]?.stringValue.flatMap(UInt64.init).map { .close(owner: $0, from: node) }
        case "ended": return value["Session"]?.stringValue.flatMap(UInt64.init).map { .ended(session: $0, from: node) }
        default: return nil
        }
    }
}
