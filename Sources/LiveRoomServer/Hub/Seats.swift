import LiveRoomCore
import LiveRoomProtocol
import Synchronization

/// Who sits in which room, as the rooms last said (``RoomsStateMachine/takeSeatChanges()``), for
/// connections and the hub to read without asking a room; each user's count of rooms; each
/// seat's budget of purchases; the live rooms' actors; and each room's lane of work
/// (``RoomLane``), which its connections' executors follow.
final class Seats: Sendable {
    private struct Seat {
        var roomId: String
        var userId: String
        /// The same budget as the room changes the machine admits (10 a second, bursts of 20),
        /// kept here because purchases do not pass the machine.
        var purchases = TokenBucket(capacity: RoomsStateMachine.roomChangeBurst, ratePerSecond: RoomsStateMachine.roomChangesPerSecond)
    }

    private struct Lane {
        var lane: RoomLane
        var seated = 0
    }

    private struct State {
        var seats: [SessionID: Seat] = [:]
        var executors: [SessionID: [ConnectionExecutor]] = [:]
        /// Each room's lane while someone sits in it.
        var lanes: [String: Lane] = [:]
        var rooms: [String: Room] = [:]
        /// The node of each room a room here is linked with, as each room last said (this
        /// node's id for a room here).
        var linkedHomes: [String: [String: String]] = [:]
        /// Each user's rooms, with its sessions in each (two while a newer one takes over).
        var userRooms = UserRooms()

        mutating func seat(_ session: SessionID, _ seat: Seat?) {
            if let old = seats[session] {
                lanes[old.roomId]?.seated -= 1
                if lanes[old.roomId]?.seated == 0 { lanes[old.roomId] = nil }
                userRooms.count(old.userId, in: old.roomId, by: -1)
            }
            seats[session] = seat
            guard let seat else {
                for executor in executors[session] ?? [] { executor.move(to: nil) }
                return
            }
            userRooms.count(seat.userId, in: seat.roomId, by: 1)
            lanes[seat.roomId, default: Lane(lane: RoomLane())].seated += 1
            let lane = lanes[seat.roomId]!.lane
            for executor in executors[session] ?? [] { executor.move(to: lane) }
        }
    }

    private let state = Mutex(State())

    func apply(_ changes: [(session: SessionID, seat: (roomId: String, userId: String)?)]) {
        guard !changes.isEmpty else { return }
        state.withLock { state in
            for (session, seat) in changes {
                state.seat(session, seat.map { Seat(roomId: $0.roomId, userId: $0.userId) })
            }
        }
    }

    /// `session`'s tasks run on `executors`, which follow its seat from room to room.
    func register(_ session: SessionID, _ executors: ConnectionExecutor...) {
        state.withLock { state in
            state.executors[session] = executors
            let lane = state.seats[session].flatMap { state.lanes[$0.roomId]?.lane }
            for executor in executors { executor.move(to: lane) }
        }
    }

    func unregister(_ session: SessionID) {
        _ = state.withLock { $0.executors.removeValue(forKey: session) }
    }

    /// The room's lane, or a lane of its own when nobody sits in it.
    func lane(of roomId: String) -> RoomLane {
        state.withLock { $0.lanes[roomId]?.lane } ?? RoomLane()
    }

    /// How many rooms have a lane (someone sits in them).
    var laneCount: Int { state.withLock { $0.lanes.count } }

    /// The room's actor, for connections to reach it without the hub.
    func add(_ room: Room) {
        state.withLock { $0.rooms[room.key] = room }
    }

    /// The room's actor is gone (its room emptied).
    func release(_ room: Room) {
        state.withLock { state in
            guard state.rooms[room.key] === room else { return }
            state.rooms[room.key] = nil
            state.linkedHomes[room.key] = nil
        }
    }

    /// The room and user of `session`.
    func seat(of session: SessionID) -> (roomId: String, userId: String)? {
        state.withLock { $0.seats[session].map { ($0.roomId, $0.userId) } }
    }

    /// The actor of room `key`, while it lives.
    func room(_ key: String) -> Room? {
        state.withLock { $0.rooms[key] }
    }

    /// Room `key` is linked with rooms on `homes` (by room key).
    func setLinkedHomes(of key: String, _ homes: [String: String]) {
        state.withLock { $0.linkedHomes[key] = homes.isEmpty ? nil : homes }
    }

    /// The node that room `roomId`, linked with a room here, lives on.
    func home(ofLinked roomId: String) -> String? {
        state.withLock { $0.linkedHomes.values.lazy.compactMap { $0[roomId] }.first }
    }

    /// The nodes of every room linked with a room here.
    var linkedNodes: Set<String> {
        state.withLock { Set($0.linkedHomes.values.flatMap(\.values)) }
    }

    /// The actor of the room `session` sits in.
    func room(of session: SessionID) -> Room? {
        state.withLock { state in state.seats[session].flatMap { state.rooms[$0.roomId] } }
    }

    /// The rooms `userId` sits in.
    func rooms(of userId: String) -> Set<String> {
        state.withLock { $0.userRooms.rooms(of: userId) }
    }

    /// The room and user of `session`, with one purchase taken from its budget, or why not.
    func takePurchase(by session: SessionID, now: ContinuousClock.Instant) throws(LiveRoomError) -> (roomId: String, userId: String) {
        try state.withLock { state throws(LiveRoomError) in
            guard var seat = state.seats[session] else { throw LiveRoomError(ErrorCode.notInRoom, "enter a room first") }
            guard seat.purchases.canTake(1, now: now) else {
                throw LiveRoomError(
                    ErrorCode.roomChangeRateLimited,
                    "refused: over \(Int(RoomsStateMachine.roomChangesPerSecond)) buy requests per second (bursts of \(Int(RoomsStateMachine.roomChangeBurst)))")
            }
            seat.purchases.take(1, now: now)
            state.seats[session] = seat
            return (seat.roomId, seat.userId)
        }
    }
}

/// The outboxes of the signaling connections, for the hub and the rooms to write to.
final class Outboxes: Sendable {
    private let outboxes = Mutex<[SessionID: ConnectionOutbox]>([:])

    subscript(session: SessionID) -> ConnectionOutbox? {
        outboxes.withLock { $0[session] }
    }

    func add(_ outbox: ConnectionOutbox, for session: SessionID) {
        outboxes.withLock { $0[session] = outbox }
    }

    @discardableResult
    func remove(_ session: SessionID) -> ConnectionOutbox? {
        outboxes.withLock { $0.removeValue(forKey: session) }
    }

    var count: Int { outboxes.withLock { $0.count } }

    /// Sends `event` to `sessions` that have an outbox, encoded once.
    func send(_ event: ServerEvent, to sessions: [SessionID], priority: MessagePriority = .normal) {
        guard !sessions.isEmpty else { return }
        let text = event.json.jsonText
        for session in sessions { self[session]?.push(text, priority: priority) }
    }

    var all: [ConnectionOutbox] { outboxes.withLock { Array($0.values) } }
}

/// How many of something (sessions, enters on their way) each user has in each room.
struct UserRooms {
    private var counts: [String: [String: Int]] = [:]

    /// The rooms `userId` has one or more in.
    func rooms(of userId: String) -> Set<String> {
        Set(counts[userId]?.keys ?? [:].keys)
    }

    /// Adds `change` (1 or -1) to `userId`'s count in `roomKey`; a count of 0 is forgotten.
    mutating func count(_ userId: String, in roomKey: String, by change: Int) {
        counts[userId, default: [:]][roomKey, default: 0] += change
        if counts[userId]?[roomKey] == 0 { counts[userId]?[roomKey] = nil }
        if counts[userId]?.isEmpty == true { counts[userId] = nil }
    }
}
