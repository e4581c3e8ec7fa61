/// A TRTC room: the integer `roomId` (1…4294967295) or the string `strRoomId`. They are two
/// namespaces, as in TRTC: room 123 and room "123" are different rooms.
///
/// The server keys every room by one string, ``key``: the room core, the hub, the SFU, tasks and
/// the room history all use it. Whatever a user sees names the room by ``description``, ``text``
/// or ``json`` instead.
public enum RoomID: Hashable, Sendable, CustomStringConvertible {
    /// TRTC's integer `roomId`; 0 means "not set" in TRTC and is never a room.
    case number(UInt32)
    /// TRTC's `strRoomId`.
    case string(String)

    /// The prefix of a numeric room's key. A `strRoomId` may not hold it (TRTC allows letters,
    /// digits, space and `!#$%&()+-:;<=.>?@[]^_{}|~,`), so no string room has a numeric room's key.
    public static let numberKeyPrefix: Character = "*"

    /// The server's one key for the room: a string room's id as it is, a numeric room's digits
    /// after ``numberKeyPrefix`` (`*123`). A string that starts with the prefix itself (never a
    /// valid `strRoomId`, but an admin call or a task may name one) gets one more in front
    /// (`**123`), so no two rooms ever share a key.
    public var key: String {
        switch self {
        case .number(let number): "\(Self.numberKeyPrefix)\(number)"
        case .string(let id): id.first == Self.numberKeyPrefix ? "\(Self.numberKeyPrefix)\(id)" : id
        }
    }

    /// The room a ``key`` names.
    public init(key: String) {
        guard key.first == Self.numberKeyPrefix else {
            self = .string(key)
            return
        }
        let rest = key.dropFirst()
        if rest.first == Self.numberKeyPrefix {
            self = .string(String(rest))
        } else if let number = UInt32(rest), String(number) == rest {
            self = .number(number)
        } else {
            // No room has such a key; read it as the string it is.
            self = .string(key)
        }
    }

    /// The id as text, as TRTC's room history shows it (`RoomString`): a number's digits or the string.
    public var text: String {
        switch self {
        case .number(let number): String(number)
        case .string(let id): id
        }
    }

    /// The id as TRTC's server API and callbacks give it: a JSON number for a numeric room, a
    /// JSON string for a string room.
    public var json: JSONValue {
        switch self {
        case .number(let number): .number(Double(number))
        case .string(let id): .string(id)
        }
    }

    /// `room 123` or `room "shop1"`, for messages.
    public var description: String {
        switch self {
        case .number(let number): "room \(number)"
        case .string(let id): "room \(id.quoted)"
        }
    }
}

extension RoomID {
    /// The room as a request or event names it, as TRTC's enterRoom does: `{"roomId": 123}` or
    /// `{"strRoomId": "shop1"}`.
    public var requestFields: [String: JSONValue] {
        switch self {
        case .number(let number): ["roomId": .number(Double(number))]
        case .string(let id): ["strRoomId": .string(id)]
        }
    }
}

