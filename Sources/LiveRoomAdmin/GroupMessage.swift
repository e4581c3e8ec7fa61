import LiveRoomCore
import LiveRoomProtocol

/// The IM REST call `send_group_msg` (`POST /v4/group_open_http_svc/send_group_msg`), read
/// with IM's error codes: 10004 a bad parameter, 10015 a bad `GroupId`.
public struct GroupMessage: Sendable {
    /// The room.
    public var groupId: String
    /// Each TIMCustomElem's `Data`, delivered as a custom message.
    public var datas: [String]
    public var priority: MessagePriority
    /// `Random`, echoed as `MsgSeq`.
    public var random: Int

    public init(_ body: String) throws(LiveRoomError) {
        guard let value = try? JSONValue.parse(body) else { throw LiveRoomError(10004, "the request body is not a JSON object") }
        let f = try JSONFields(value, missingCode: 10004, code: 10004)
        guard let groupId = try f.string("GroupId", code: 10015), !groupId.isEmpty else {
            throw LiveRoomError(10015, "GroupId is missing or empty", field: "GroupId")
        }
        guard let elements = try f.objectArray("MsgBody"), !elements.isEmpty else {
            throw LiveRoomError(10004, "MsgBody must be a non-empty array", field: "MsgBody")
        }
        var datas: [String] = []
        for element in elements {
            let type = try element.string("MsgType")
            guard type == "TIMCustomElem" else {
                throw element.invalid("MsgType", "must be TIMCustomElem (the only type supported), not \((type ?? "missing").quoted)")
            }
            datas.append(try element.requiredFields("MsgContent").requiredString("Data"))
        }
        let priorityText = try f.string("MsgPriority") ?? "Normal"
        switch priorityText.lowercased() {
        case "high": priority = .high
        case "normal", "low", "lowest": priority = .normal
        default: throw f.invalid("MsgPriority", "must be High, Normal, Low or Lowest, not \(priorityText.quoted)")
        }
        self.groupId = groupId
        self.datas = datas
        random = f.value("Random")?.intValue ?? 0
    }
}
