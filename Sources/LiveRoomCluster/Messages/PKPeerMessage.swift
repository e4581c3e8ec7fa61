import LiveRoomCore
import LiveRoomProtocol

/// What one room's home node tells another's about a cross-room PK link between them (cluster
/// mode): ``NodeMessage/pk(_:)``, sent in order per node.
/// Every field is checked here (sizes, characters, kinds); what the rooms make of it is the
/// room core's (``RoomsStateMachine/remoteLinkRequested(caller:node:state:callee:since:)`` and the
/// other `remote…` calls).
public struct PKPeerMessage: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Link `caller` (a room on the sender) with `callee` (a room here); answered with the callee's state.
        case link
        /// `caller`, an anchor of a room on the sender, now sends `state`.
        case state
        /// The link between `caller` and `callee` ended on the sender.
        case unlink
        /// A PK battle's event (``battleEvents``) for `callee`'s room here, from the battle that
        /// `caller`'s room on the sender runs.
        case battle
        /// Show `callee` (a room here) the PK request of `caller` (a room on the sender); answered
        /// with whether it was shown.
        case request
        /// The answer to a request between `caller` and `callee`: accepted when there is no
        /// `error` (from the callee's node), or why not (from either node).
        case answer
    }

    /// The battle events a node may send another's room.
    public static let battleEvents: Set<String> = ["onPKBattleStarted", "onPKBattleScore", "onPKBattleEnded"]

    public var kind: Kind
    /// The sending node.
    public var node: String
    public var caller: PKEnd
    /// Unused for `state`.
    public var callee: PKEnd?
    public var state: AnchorState?
    public var since: Int64 = 0
    /// With `battle`: the event's name and fields.
    public var event: (name: String, fields: [String: JSONValue])?
    /// With `answer`: why the request was refused or could not be linked; nil: accepted.
    public var error: LiveRoomError?

    public static func == (a: PKPeerMessage, b: PKPeerMessage) -> Bool {
        a.json == b.json
    }

    public init(
        kind: Kind, node: String, caller: PKEnd, callee: PKEnd? = nil, state: AnchorState? = nil, since: Int64 = 0,
        event: (name: String, fields: [String: JSONValue])? = nil, error: LiveRoomError? = nil
    ) {
        self.error = error
        self.kind = kind
        self.node = node
        self.caller = caller
        self.callee = callee
        self.state = state
        self.since = since
        self.event = event
    }

    /// The largest body taken.
    public static let maxBodyBytes = 16 << 10

    public var json: JSONValue {
        var object: [String: JSONValue] = ["Kind": .string(kind.rawValue), "Node": .string(node), "Caller": Self.json(caller), "Since": .number(Double(since))]
        if let callee { object["Callee"] = Self.json(callee) }
        if let state { object["State"] = Self.json(state) }
        if let event { object["Event"] = ["Name": .string(event.name), "Fields": .object(event.fields)] }
        if let error { object["Error"] = ["Code": .number(Double(error.code)), "Message": .string(error.message)] }
        return .object(object)
    }

    /// Parses and checks a body; the reason when it is not one.
    public static func parse(_ text: String) throws(LiveRoomError) -> PKPeerMessage {
        guard text.utf8.count <= maxBodyBytes else { throw invalid("the body is over \(maxBodyBytes) bytes") }
        guard let value = try? JSONValue.parse(text) else { throw invalid("the body is not valid JSON") }
        guard let kind = value["Kind"]?.stringValue.flatMap(Kind.init(rawValue:)) else { throw invalid("Kind must be link, state, unlink, battle, request or answer") }
        guard let node = value["Node"]?.stringValue, ClusterRules.isValidNodeId(node) else { throw invalid("Node must be a node id") }
        let caller = try end(value["Caller"], "Caller")
        var message = PKPeerMessage(kind: kind, node: node, caller: caller)
        if kind != .state { message.callee = try end(value["Callee"], "Callee") }
        if kind == .link || kind == .state { message.state = try state(value["State"]) }
        if kind == .battle {
            guard let name = value["Event"]?["Name"]?.stringValue, battleEvents.contains(name), let fields = value["Event"]?["Fields"]?.objectValue else {
                throw invalid("Event must have a Name (\(battleEvents.sorted().joined(separator: ", "))) and Fields")
            }
            message.event = (name, fields)
        }
        if kind == .answer, let error = value["Error"] {
            guard let code = error["Code"]?.intValue, code != 0, let text = error["Message"]?.stringValue, text.utf8.count <= maxErrorBytes else {
                throw invalid("Error must have a Code other than 0 and a Message of at most \(maxErrorBytes) bytes")
            }
            message.error = LiveRoomError(code, text)
        }
        if let since = value["Since"]?.doubleValue {
            guard since >= 0, since < 1e15, since == since.rounded() else { throw invalid("Since must be milliseconds since 1970") }
            message.since = Int64(since)
        }
        return message
    }

    /// The answer to a link: the callee's state, or why not.
    public static func answer(_ result: Result<AnchorState, LiveRoomError>) -> JSONValue {
        switch result {
        case .success(let state): ["ErrorCode": 0, "ErrorMessage": "", "State": json(state)]
        case .failure(let error): ["ErrorCode": .number(Double(error.code)), "ErrorMessage": .string(error.message)]
        }
    }

    /// Reads an answer to a link; nil when it is not one.
    public static func parseAnswer(_ text: String) -> Result<AnchorState, LiveRoomError>? {
        switch parseAcknowledgement(text) {
        case nil: return nil
        case .failure(let error): return .failure(error)
        case .success: return (try? JSONValue.parse(text)).flatMap { try? state($0["State"]) }.map { .success($0) }
        }
    }

    /// The answer to a request: done, or why not.
    public static func acknowledgement(_ result: Result<Void, LiveRoomError>) -> JSONValue {
        switch result {
        case .success: ["ErrorCode": 0, "ErrorMessage": ""]
        case .failure(let error): ["ErrorCode": .number(Double(error.code)), "ErrorMessage": .string(error.message)]
        }
    }

    /// Reads an answer's code (0: done) and message; nil when it is not an answer.
    public static func parseAcknowledgement(_ text: String) -> Result<Void, LiveRoomError>? {
        guard text.utf8.count <= maxBodyBytes, let value = try? JSONValue.parse(text), let code = value["ErrorCode"]?.intValue else { return nil }
        guard code == 0 else {
            let message = String((value["ErrorMessage"]?.stringValue ?? "refused by the other room's node").prefix(maxErrorBytes))
            return .failure(LiveRoomError(code, message))
        }
        return .success(())
    }

    /// The longest error message a node passes on from another.
    static let maxErrorBytes = 512

    private static func invalid(_ message: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.pkInvalidParameter, message)
    }

    private static func json(_ end: PKEnd) -> JSONValue {
        ["RoomKey": .string(end.roomId), "UserId": .string(end.userId)]
    }

    private static func json(_ state: AnchorState) -> JSONValue {
        [
            "Publishing": state.publishing.map { ["Audio": .bool($0.audio), "Video": .bool($0.video)] } ?? .null,
            "AudioMuted": .bool(state.audioMuted), "VideoMuted": .bool(state.videoMuted),
        ]
    }

    /// A room key (a string room id, or `*` and a number) and a user id, within TRTC's sizes and
    /// without control characters; whether they exist is the room core's to say.
    private static func end(_ value: JSONValue?, _ name: String) throws(LiveRoomError) -> PKEnd {
        guard let room = value?["RoomKey"]?.stringValue, let user = value?["UserId"]?.stringValue,
            (1...65).contains(room.utf8.count), (1...32).contains(user.utf8.count),
            (room + user).unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        else { throw invalid("\(name) must have a RoomKey (1–65 bytes) and a UserId (1–32 bytes)") }
        return PKEnd(roomId: room, userId: user)
    }

    private static func state(_ value: JSONValue?) throws(LiveRoomError) -> AnchorState {
        guard let value, let audioMuted = value["AudioMuted"]?.boolValue, let videoMuted = value["VideoMuted"]?.boolValue else {
            throw invalid("State must have AudioMuted and VideoMuted")
        }
        var publishing: PublishState?
        if let object = value["Publishing"], object != .null {
            guard let audio = object["Audio"]?.boolValue, let video = object["Video"]?.boolValue else {
                throw invalid("State.Publishing must be null or have Audio and Video")
            }
            publishing = PublishState(audio: audio, video: video)
        }
        return AnchorState(publishing: publishing, audioMuted: audioMuted, videoMuted: videoMuted)
    }
}
