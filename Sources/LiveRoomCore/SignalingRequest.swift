/// A user's role in a room.
public enum Role: String, Sendable, Hashable, Codable, CaseIterable {
    case anchor
    case audience
}

/// The parameters of `enterRoom`, as TRTCParams carries them.
public struct EnterRoomParams: Sendable, Hashable {
    public var sdkAppId: UInt64
    public var userId: String
    public var userSig: String
    public var strRoomId: String
    public var role: Role

    public init(sdkAppId: UInt64, userId: String, userSig: String, strRoomId: String, role: Role) {
        self.sdkAppId = sdkAppId
        self.userId = userId
        self.userSig = userSig
        self.strRoomId = strRoomId
        self.role = role
    }
}

/// A custom message as `sendCustomCmdMsg` sends it.
public struct CustomCmdMsg: Sendable, Hashable {
    public var cmdID: Int
    public var data: String
    public var reliable: Bool
    public var ordered: Bool

    public init(cmdID: Int, data: String, reliable: Bool = true, ordered: Bool = true) {
        self.cmdID = cmdID
        self.data = data
        self.reliable = reliable
        self.ordered = ordered
    }
}

/// A message from a client on the signaling WebSocket: a JSON object whose `type` names
/// the TRTC API it mirrors.
public enum SignalingRequest: Sendable, Hashable {
    case enterRoom(EnterRoomParams)
    case exitRoom
    case switchRole(Role)
    case requestMic
    case acceptMic(userId: String)
    case rejectMic(userId: String)
    case inviteMic(userId: String)
    case acceptInvitation
    case rejectInvitation
    case endMic(userId: String)
    case sendCustomCmdMsg(CustomCmdMsg)
    /// Publish audio and/or video: `sdp` is the offer of a peer connection whose sections are sendonly.
    case publish(sdp: String)
    /// Stop publishing (closes the publishing peer connection).
    case unpublish
    /// Receive an anchor's media: `sdp` is the offer of a peer connection whose sections are recvonly.
    case subscribe(userId: String, sdp: String)
    /// Stop receiving an anchor's media.
    case unsubscribe(userId: String)
    /// muteLocalVideo / muteLocalAudio: others see onUserVideoAvailable / onUserAudioAvailable.
    case muteLocalVideo(Bool)
    case muteLocalAudio(Bool)
    /// Start a publish media stream task (relay or mix, to CDNs or into a room); answered by
    /// `onStartPublishMediaStream`. The objects keep the shapes of TRTC's `TRTCPublishTarget`,
    /// `TRTCStreamEncoderParam` and `TRTCStreamMixingConfig`, unparsed: LiveRoomMixer reads them.
    case startPublishMediaStream(target: JSONValue, encoderParam: JSONValue?, mixingConfig: JSONValue?)
    /// Change a running task; a nil object keeps its current value. Answered by `onUpdatePublishMediaStream`.
    case updatePublishMediaStream(taskId: String, target: JSONValue?, encoderParam: JSONValue?, mixingConfig: JSONValue?)
    /// Stop a task, or every task of this user when `taskId` is empty. Answered by `onStopPublishMediaStream`.
    case stopPublishMediaStream(taskId: String)

    /// The `type` field's value.
    public var type: String {
        switch self {
        case .enterRoom: "enterRoom"
        case .exitRoom: "exitRoom"
        case .switchRole: "switchRole"
        case .requestMic: "requestMic"
        case .acceptMic: "acceptMic"
        case .rejectMic: "rejectMic"
        case .inviteMic: "inviteMic"
        case .acceptInvitation: "acceptInvitation"
        case .rejectInvitation: "rejectInvitation"
        case .endMic: "endMic"
        case .sendCustomCmdMsg: "sendCustomCmdMsg"
        case .publish: "publish"
        case .unpublish: "unpublish"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .muteLocalVideo: "muteLocalVideo"
        case .muteLocalAudio: "muteLocalAudio"
        case .startPublishMediaStream: "startPublishMediaStream"
        case .updatePublishMediaStream: "updatePublishMediaStream"
        case .stopPublishMediaStream: "stopPublishMediaStream"
        }
    }

    /// Every `type` the server understands.
    public static let types = [
        "enterRoom", "exitRoom", "switchRole", "requestMic", "acceptMic", "rejectMic", "inviteMic",
        "acceptInvitation", "rejectInvitation", "endMic", "sendCustomCmdMsg", "publish", "unpublish", "subscribe",
        "unsubscribe", "muteLocalVideo", "muteLocalAudio", "startPublishMediaStream", "updatePublishMediaStream",
        "stopPublishMediaStream",
    ]

    /// The JSON form a client sends.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["type": .string(type)]
        switch self {
        case .enterRoom(let p):
            o["sdkAppId"] = .number(Double(p.sdkAppId))
            o["userId"] = .string(p.userId)
            o["userSig"] = .string(p.userSig)
            o["strRoomId"] = .string(p.strRoomId)
            o["role"] = .string(p.role.rawValue)
            o["scene"] = "live"
        case .switchRole(let role):
            o["role"] = .string(role.rawValue)
        case .acceptMic(let u), .rejectMic(let u), .inviteMic(let u), .endMic(let u):
            o["userId"] = .string(u)
        case .sendCustomCmdMsg(let m):
            o["cmdID"] = .number(Double(m.cmdID))
            o["data"] = .string(m.data)
            o["reliable"] = .bool(m.reliable)
            o["ordered"] = .bool(m.ordered)
        case .publish(let sdp):
            o["sdp"] = .string(sdp)
        case .subscribe(let userId, let sdp):
            o["userId"] = .string(userId)
            o["sdp"] = .string(sdp)
        case .unsubscribe(let userId):
            o["userId"] = .string(userId)
        case .muteLocalVideo(let mute), .muteLocalAudio(let mute):
            o["mute"] = .bool(mute)
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
        case .exitRoom, .requestMic, .acceptInvitation, .rejectInvitation, .unpublish:
            break
        }
        return .object(o)
    }

    /// Parses one signaling frame. Errors name the field and carry a code.
    public static func parse(_ text: String) throws(LiveRoomError) -> SignalingRequest {
        let value: JSONValue
        do {
            value = try JSONValue.parse(text)
        } catch {
            throw LiveRoomError(ErrorCode.malformedJSON, "signaling message is not valid JSON")
        }
        return try parse(value)
    }

    public static func parse(_ value: JSONValue) throws(LiveRoomError) -> SignalingRequest {
        guard let object = value.objectValue else {
            throw LiveRoomError(ErrorCode.invalidField, "signaling message must be a JSON object, not \(value.typeName)")
        }
        let fields = Fields(object: object)
        let type = try fields.string("type")
        switch type {
        case "enterRoom":
            let sdkAppId = try fields.int("sdkAppId")
            guard sdkAppId > 0 else {
                throw LiveRoomError(ErrorCode.invalidSdkAppId, "sdkAppId must be a positive integer")
            }
            let roleText = try fields.optionalString("role") ?? Role.audience.rawValue
            guard let role = Role(rawValue: roleText) else {
                throw LiveRoomError(ErrorCode.invalidField, "role must be \"anchor\" or \"audience\", not \"\(roleText)\"")
            }
            if let scene = try fields.optionalString("scene"), scene != "live" {
                throw LiveRoomError(ErrorCode.invalidField, "scene must be \"live\", not \"\(scene)\"")
            }
            return .enterRoom(
                EnterRoomParams(
                    sdkAppId: UInt64(sdkAppId), userId: try fields.optionalString("userId") ?? "",
                    userSig: try fields.optionalString("userSig") ?? "", strRoomId: try fields.optionalString("strRoomId") ?? "",
                    role: role))
        case "exitRoom": return .exitRoom
        case "switchRole":
            let roleText = try fields.string("role")
            guard let role = Role(rawValue: roleText) else {
                throw LiveRoomError(ErrorCode.invalidField, "role must be \"anchor\" or \"audience\", not \"\(roleText)\"")
            }
            return .switchRole(role)
        case "requestMic": return .requestMic
        case "acceptMic": return .acceptMic(userId: try fields.string("userId"))
        case "rejectMic": return .rejectMic(userId: try fields.string("userId"))
        case "inviteMic": return .inviteMic(userId: try fields.string("userId"))
        case "acceptInvitation": return .acceptInvitation
        case "rejectInvitation": return .rejectInvitation
        case "endMic": return .endMic(userId: try fields.string("userId"))
        case "sendCustomCmdMsg":
            return .sendCustomCmdMsg(
                CustomCmdMsg(
                    cmdID: try fields.int("cmdID"), data: try fields.string("data"),
                    reliable: try fields.optionalBool("reliable") ?? true, ordered: try fields.optionalBool("ordered") ?? true))
        case "publish": return .publish(sdp: try fields.string("sdp"))
        case "unpublish": return .unpublish
        case "subscribe": return .subscribe(userId: try fields.string("userId"), sdp: try fields.string("sdp"))
        case "unsubscribe": return .unsubscribe(userId: try fields.string("userId"))
        case "muteLocalVideo": return .muteLocalVideo(try fields.bool("mute"))
        case "muteLocalAudio": return .muteLocalAudio(try fields.bool("mute"))
        case "startPublishMediaStream":
            return .startPublishMediaStream(
                target: try fields.jsonObject("target"), encoderParam: try fields.optionalJSONObject("encoderParam"),
                mixingConfig: try fields.optionalJSONObject("mixingConfig"))
        case "updatePublishMediaStream":
            return .updatePublishMediaStream(
                taskId: try fields.string("taskId"), target: try fields.optionalJSONObject("target"),
                encoderParam: try fields.optionalJSONObject("encoderParam"), mixingConfig: try fields.optionalJSONObject("mixingConfig"))
        case "stopPublishMediaStream": return .stopPublishMediaStream(taskId: try fields.optionalString("taskId") ?? "")
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown signaling type \"\(type)\"; known: \(types.joined(separator: ", "))")
        }
    }
}

/// Typed access to a JSON object's fields with errors that name the field.
struct Fields {
    var object: [String: JSONValue]

    func string(_ key: String) throws(LiveRoomError) -> String {
        guard let value = try optionalString(key) else {
            throw LiveRoomError(ErrorCode.missingField, "missing field \"\(key)\"")
        }
        return value
    }

    func optionalString(_ key: String) throws(LiveRoomError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard let s = value.stringValue else {
            throw LiveRoomError(ErrorCode.invalidField, "field \"\(key)\" must be a string, not \(value.typeName)")
        }
        return s
    }

    func int(_ key: String) throws(LiveRoomError) -> Int {
        guard let value = object[key], value != .null else {
            throw LiveRoomError(ErrorCode.missingField, "missing field \"\(key)\"")
        }
        guard let n = value.intValue else {
            throw LiveRoomError(ErrorCode.invalidField, "field \"\(key)\" must be an integer, not \(value.typeName)")
        }
        return n
    }

    func bool(_ key: String) throws(LiveRoomError) -> Bool {
        guard let value = try optionalBool(key) else {
            throw LiveRoomError(ErrorCode.missingField, "missing field \"\(key)\"")
        }
        return value
    }

    /// A JSON object, kept as it is.
    func jsonObject(_ key: String) throws(LiveRoomError) -> JSONValue {
        guard let value = try optionalJSONObject(key) else {
            throw LiveRoomError(ErrorCode.missingField, "missing field \"\(key)\"")
        }
        return value
    }

    /// A JSON object, kept as it is; nil when absent or null.
    func optionalJSONObject(_ key: String) throws(LiveRoomError) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        guard value.objectValue != nil else {
            throw LiveRoomError(ErrorCode.invalidField, "field \"\(key)\" must be an object, not \(value.typeName)")
        }
        return value
    }

    func optionalBool(_ key: String) throws(LiveRoomError) -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard let b = value.boolValue else {
            throw LiveRoomError(ErrorCode.invalidField, "field \"\(key)\" must be a boolean, not \(value.typeName)")
        }
        return b
    }
}
