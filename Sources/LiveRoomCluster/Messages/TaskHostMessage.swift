import Foundation
import LiveRoomPublishTasks

/// What a task's room home (H, which keeps the task: its state, retries, owner, answers) and the
/// node that runs its runner (T) tell each other (cluster mode), as ``NodeMessage/task(_:)``:
/// H → T `start` (the config), then in order `connect`, `disconnect`, `apply`, `anchors`,
/// `inputs` (each input with the node and media address it is mirrored from) and `stop`;
/// T → H `event` (an RTMP connection's fate, an image that cannot be used).
public struct TaskHostMessage: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case start, connect, disconnect, apply, anchors, inputs, stop, event
    }

    /// A task input and where it is mirrored from.
    public struct Input: Codable, Sendable, Equatable {
        public var roomKey: String
        public var userId: String
        public var node: String
        public var media: String

        public init(roomKey: String, userId: String, node: String, media: String) {
            self.roomKey = roomKey
            self.userId = userId
            self.node = node
            self.media = media
        }
    }

    public var kind: Kind
    /// The sending node.
    public var node: String
    public var taskId: String
    public var roomId: String?
    public var config: PublishTaskConfig?
    public var url: String?
    public var anchors: [MixAnchor]?
    public var inputs: [Input]?
    /// With `event`: `rtmpConnected`, `rtmpFailed`, `rtmpRefused` or `imageUnavailable`, its message and code;
    /// or `encoding`, the pixels a second in `code`.
    public var event: String?
    public var message: String?
    public var code: Int?

    public init(
        kind: Kind, node: String, taskId: String, roomId: String? = nil, config: PublishTaskConfig? = nil, url: String? = nil, anchors: [MixAnchor]? = nil,
        inputs: [Input]? = nil, event: String? = nil, message: String? = nil, code: Int? = nil
    ) {
        self.kind = kind
        self.node = node
        self.taskId = taskId
        self.roomId = roomId
        self.config = config
        self.url = url
        self.anchors = anchors
        self.inputs = inputs
        self.event = event
        self.message = message
        self.code = code
    }

    public static let maxBodyBytes = 256 << 10

    /// The message as JSON text. (Not through `JSONValue`, whose numbers are doubles: a
    /// config's durations are 128-bit counts of attoseconds.)
    public var text: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Parses a body; nil for anything that is not a message within the bounds.
    public static func parse(_ text: String) -> TaskHostMessage? {
        guard text.utf8.count <= maxBodyBytes, let message = try? JSONDecoder().decode(TaskHostMessage.self, from: Data(text.utf8)),
            ClusterRules.isValidNodeId(message.node), (1...128).contains(message.taskId.utf8.count), (message.inputs?.count ?? 0) <= StreamMixingConfig.maxInputs * 2,
            (message.anchors?.count ?? 0) <= 256
        else { return nil }
        return message
    }
}
