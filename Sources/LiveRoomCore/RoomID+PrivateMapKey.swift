import LiveRoomAuth
import LiveRoomProtocol

extension RoomID {
    /// The room as a PrivateMapKey names it: a numeric room in a version 0 user buffer, a string
    /// room in a version 1 one.
    public var privateMapKeyRoom: PrivateMapKey.Room {
        switch self {
        case .number(let number): .numeric(number)
        case .string(let id): .string(id)
        }
    }
}
