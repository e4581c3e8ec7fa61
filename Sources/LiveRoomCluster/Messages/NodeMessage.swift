import Foundation
import LiveRoomProtocol

/// Everything one node tells another (cluster mode), in one format: a JSON object
/// `{"liveroomNode":"<kind>","body":<the message>}`, written and read only here. Messages
/// between rooms' homes and task hosts go as `POST` ``path`` with the relay token; a relayed
/// client's media (``media(_:)``) goes inside its relayed WebSocket, beside the client's own
/// frames, which can never begin as a node message does. Media itself travels as sealed UDP
/// datagrams (`NodeRelayDatagram`), not as messages.
public enum NodeMessage: Sendable, Equatable {
    /// A cross-room PK link between rooms homed on two nodes.
    case pk(PKPeerMessage)
    /// A task whose runner runs on another node than its room's home.
    case task(TaskHostMessage)
    /// A WHEP session whose media and seat are on two nodes.
    case playback(PlaybackMessage)
    /// A relayed client's media, between the room's home and the relaying node.
    case media(NodeMediaFrame)

    /// Where nodes post their messages to each other.
    public static let path = "/v1/cluster/message"
    /// How every message begins.
    public static let prefix = #"{"liveroomNode":"#
    /// The largest message taken, envelope included.
    public static let maximumSize = 256 << 10 + 64

    public var kind: String {
        switch self {
        case .pk: "pk"
        case .task: "task"
        case .playback: "playback"
        case .media: "media"
        }
    }

    /// The message as JSON text.
    public var text: String {
        let body: String =
            switch self {
            case .pk(let message): message.json.jsonText
            case .task(let message): message.text
            case .playback(let message): message.json.jsonText
            case .media(let frame): frame.text
            }
        return Self.prefix + "\"" + kind + "\",\"body\":" + body + "}"
    }

    /// Whether `text` claims to be a node message (by its beginning).
    public static func isNodeMessage(_ text: String) -> Bool {
        text.hasPrefix(prefix)
    }

    /// Reads a message: the envelope exactly as ``text`` writes it, then the body by its kind's
    /// own checks. The error names what is wrong, with the code of the kind's requests.
    public static func parse(_ text: String) throws(LiveRoomError) -> NodeMessage {
        guard text.utf8.count <= maximumSize else { throw LiveRoomError(ErrorCode.invalidParameter, "a node message is at most \(maximumSize) bytes") }
        guard isNodeMessage(text), text.hasSuffix("}") else { throw malformed }
        let afterPrefix = text.utf8.dropFirst(prefix.utf8.count)
        guard afterPrefix.first == UInt8(ascii: "\""), let close = afterPrefix.dropFirst().firstIndex(of: UInt8(ascii: "\"")) else { throw malformed }
        let kind = String(decoding: afterPrefix[afterPrefix.index(after: afterPrefix.startIndex)..<close], as: UTF8.self)
        let separator = #","body":"#.utf8
        let rest = afterPrefix[afterPrefix.index(after: close)...]
        guard rest.starts(with: separator) else { throw malformed }
        let body = String(decoding: rest.dropFirst(separator.count).dropLast(), as: UTF8.self)
        switch kind {
        case "pk":
            return .pk(try PKPeerMessage.parse(body))
        case "task":
            guard let message = TaskHostMessage.parse(body) else { throw LiveRoomError(ErrorCode.invalidParameter, "not a task message") }
            return .task(message)
        case "playback":
            guard let message = PlaybackMessage.parse(body) else { throw LiveRoomError(ErrorCode.invalidParameter, "not a WHEP session message") }
            return .playback(message)
        case "media":
            guard let frame = NodeMediaFrame.parse(body) else { throw LiveRoomError(ErrorCode.invalidParameter, "not a media frame") }
            return .media(frame)
        default:
            throw LiveRoomError(ErrorCode.invalidParameter, "liveroomNode must be pk, task, playback or media")
        }
    }

    private static var malformed: LiveRoomError {
        LiveRoomError(ErrorCode.invalidParameter, #"a node message is {"liveroomNode":"<kind>","body":{…}}"#)
    }
}

extension NodeMediaFrame {
    /// The frame as JSON text (the body of ``NodeMessage/media(_:)``).
    public var text: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Reads a frame within ``maximumSize``; nil for anything else.
    public static func parse(_ text: String) -> NodeMediaFrame? {
        guard text.utf8.count <= maximumSize else { return nil }
        return try? JSONDecoder().decode(NodeMediaFrame.self, from: Data(text.utf8))
    }
}
