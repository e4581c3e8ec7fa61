/// A signaling request about publish media stream tasks (relay or mix, to CDNs or into a room).
/// The server's publish task service handles these; the room core has no part in them.
///
/// The objects keep the shapes of TRTC's `TRTCPublishTarget`, `TRTCStreamEncoderParam` and
/// `TRTCStreamMixingConfig`, unread: LiveRoomPublishTasks reads them into a task configuration.
public enum PublishTaskRequest: Sendable, Hashable {
    /// Start a task; answered by `onStartPublishMediaStream`.
    case startPublishMediaStream(target: JSONValue, encoderParam: JSONValue?, mixingConfig: JSONValue?)
    /// Change a running task; a nil object keeps its current value. Answered by `onUpdatePublishMediaStream`.
    case updatePublishMediaStream(taskId: String, target: JSONValue?, encoderParam: JSONValue?, mixingConfig: JSONValue?)
    /// Stop a task, or every task of this user when `taskId` is empty. Answered by `onStopPublishMediaStream`.
    case stopPublishMediaStream(taskId: String)

    /// The `type` field's value.
    public var type: String {
        switch self {
        case .startPublishMediaStream: "startPublishMediaStream"
        case .updatePublishMediaStream: "updatePublishMediaStream"
        case .stopPublishMediaStream: "stopPublishMediaStream"
        }
    }

    /// Every publish task request `type`.
    public static let types = ["startPublishMediaStream", "updatePublishMediaStream", "stopPublishMediaStream"]

    /// The JSON form a client sends.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["type": .string(type)]
        switch self {
        case .startPublishMediaStream(let target, let encoderParam, let mixingConfig):
            o["target"] = target
            o["encoderParam"] = encoderParam
            o["mixingConfig"] = mixingConfig
        case .updatePublishMediaStream(let taskId, let target, let encoderParam, let mixingConfig):
            o["taskId"] = .string(taskId)
            o["target"] = target
            o["encoderParam"] = encoderParam
            o["mixingConfig"] = mixingConfig
        case .stopPublishMediaStream(let taskId):
            o["taskId"] = .string(taskId)
        }
        return .object(o)
    }

    /// Reads the request of `type` from its message's fields; `nil` when `type` is not a publish task request.
    static func parse(type: String, _ fields: JSONFields) throws(LiveRoomError) -> PublishTaskRequest? {
        switch type {
        case "startPublishMediaStream":
            return .startPublishMediaStream(
                target: try fields.requiredObject("target"), encoderParam: try fields.object("encoderParam"),
                mixingConfig: try fields.object("mixingConfig"))
        case "updatePublishMediaStream":
            return .updatePublishMediaStream(
                taskId: try fields.requiredString("taskId"), target: try fields.object("target"),
                encoderParam: try fields.object("encoderParam"), mixingConfig: try fields.object("mixingConfig"))
        case "stopPublishMediaStream":
            return .stopPublishMediaStream(taskId: try fields.string("taskId") ?? "")
        default:
            return nil
        }
    }
}
