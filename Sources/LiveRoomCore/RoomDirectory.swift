/// Who sits where, across the rooms: each session's room and user, how many rooms each user is
/// in (``RoomsStateMachine/Configuration/maxRoomsPerUser``), and the seat changes the server has
/// not yet taken. The part of the rooms' state that spans rooms.
struct RoomDirectory: Sendable {
    typealias Seat = (roomId: String, userId: String)

    private var seats: [SessionID: Seat] = [:]
    private var roomsOfUser: [String: Int] = [:]
    /// Sessions seated (with their room and user) or unseated (nil) since ``takeChanges()``, in order.
    private var changes: [(session: SessionID, seat: Seat?)] = []

    /// The room and user `session` is in, if any.
    subscript(session: SessionID) -> Seat? { seats[session] }

    /// How many rooms `userId` is in (one session each).
    func roomCount(of userId: String) -> Int { roomsOfUser[userId] ?? 0 }

    /// Seats `session` (or unseats it, nil), noting the change.
    mutating func seat(_ session: SessionID, _ seat: Seat?) {
        if let old = seats[session] {
            roomsOfUser[old.userId]! -= 1
            if roomsOfUser[old.userId] == 0 { roomsOfUser[old.userId] = nil }
        }
        seats[session] = seat
        if let seat { roomsOfUser[seat.userId, default: 0] += 1 }
        changes.append((session, seat))
    }

    /// The changes since the last call, in order.
    mutating func takeChanges() -> [(session: SessionID, seat: Seat?)] {
        defer { changes = [] }
        return changes
    }
}
