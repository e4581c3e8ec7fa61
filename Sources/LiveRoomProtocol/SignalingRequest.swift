/// A message from a client on the signaling WebSocket: a JSON object whose `type` names the
/// TRTC API it mirrors. Room requests go to the room core, publish task requests to the
/// server's publish task service.
public enum SignalingRequest: Sendable, Hashable {
    case room(RoomRequest)
    case publishTask(PublishTaskRequest)

    /// The `type` field's value.
    public var type: String {
        switch self {
        case .room(let request): request.type
        case .publishTask(let request): request.type
        }
    }

    /// Every `type` the server understands.
    public static let types = RoomRequest.types + PublishTaskRequest.types

    /// The JSON form a client sends.
    public var json: JSONValue {
        switch self {
        case .room(let request): request.json
        case .publishTask(let request): request.json
        }
    }

    /// Parses one signaling frame. Errors name the field and carry a code.
    public static func parse(_ text: String) throws(LiveRoomError) -> SignalingRequest {
        try parse(JSONValue.parse(text, message: "signaling message"))
    }

    public static func parse(_ value: JSONValue) throws(LiveRoomError) -> SignalingRequest {
        let fields = try JSONFields(value, path: "")
        let type = try fields.requiredString("type")
        if let request = try RoomRequest.parse(type: type, fields) { return .room(request) }
        if let request = try PublishTaskRequest.parse(type: type, fields) { return .publishTask(request) }
        throw LiveRoomError(ErrorCode.unknownRequest, "unknown signaling type \(type.quoted); known: \(types.joined(separator: ", "))", field: "type")
    }
}
