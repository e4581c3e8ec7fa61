import LiveRoomProtocol

/// One event for the shop's backend: TRTC's room (group 1) and media (group 2) callbacks, and
/// LiveRoom's own groups (1001 publish tasks, 1002 commerce, 1003 PK). See `docs/webhooks.md`.
///
/// Events of one room are delivered in order; ``roomKey`` names that room (``RoomID/key``).
public struct WebhookEvent: Sendable, Hashable {
    /// The room whose order this event keeps (``RoomID/key``).
    public var roomKey: String
    public var group: Int
    public var type: Int
    /// When it happened, milliseconds since 1970 (`EventTs` carries the seconds).
    public var at: Int64
    /// `EventInfo`'s fields after `RoomId`, `EventTs` and `UniqueId`, in this order.
    public var fields: [WebhookField]

    public init(roomKey: String, group: Int, type: Int, at: Int64, fields: [WebhookField]) {
        self.roomKey = roomKey
        self.group = group
        self.type = type
        self.at = at
        self.fields = fields
    }

    /// The exact JSON body that is signed, stored and posted.
    ///
    /// `{"EventGroupId":…,"EventType":…,"CallbackTs":…,"EventInfo":{"RoomId":…,"EventTs":…,"UniqueId":…,…}}`:
    /// `RoomId` is a number for a numeric room and a string for a string room, as TRTC sends it.
    public func body(callbackTs: Int64, uniqueId: UInt64) -> [UInt8] {
        let info = [
            WebhookField("RoomId", WebhookEvents.roomIdValue(roomKey)), WebhookField("EventTs", .int(at / 1000)), WebhookField("UniqueId", .unsigned(uniqueId)),
        ] + fields
        let top = [
            WebhookField("EventGroupId", .int(Int64(group))), WebhookField("EventType", .int(Int64(type))),
            WebhookField("CallbackTs", .int(callbackTs)), WebhookField("EventInfo", .object(info)),
        ]
        var text = ""
        WebhookValue.object(top).write(to: &text)
        return Array(text.utf8)
    }
}

/// One named value of a webhook body.
public struct WebhookField: Sendable, Hashable {
    public var name: String
    public var value: WebhookValue

    public init(_ name: String, _ value: WebhookValue) {
        self.name = name
        self.value = value
    }
}

/// A JSON value of a webhook body: integers stay exact (no floating point on the way).
public indirect enum WebhookValue: Sendable, Hashable {
    case int(Int64)
    case unsigned(UInt64)
    case string(String)
    case bool(Bool)
    case object([WebhookField])

    func write(to text: inout String) {
        switch self {
        case .int(let value): text += String(value)
        case .unsigned(let value): text += String(value)
        case .bool(let value): text += value ? "true" : "false"
        case .string(let value): Self.writeString(value, to: &text)
        case .object(let fields):
            text += "{"
            for (index, field) in fields.enumerated() {
                if index > 0 { text += "," }
                Self.writeString(field.name, to: &text)
                text += ":"
                field.value.write(to: &text)
            }
            text += "}"
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped, the rest as UTF-8.
    static func writeString(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
