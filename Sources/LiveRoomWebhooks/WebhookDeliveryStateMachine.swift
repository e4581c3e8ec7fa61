/// Which stored webhook goes out next: each room's events one at a time and in order (the
/// next only after the previous was answered 2xx), different rooms side by side up to a
/// limit, failures retried after a backoff for as long as it takes.
///
/// A pure state machine: events in, ``Action``s out; the sender does the I/O and the sleeping.
public struct WebhookDeliveryStateMachine: Sendable {
    /// One stored event: its outbox row and its room.
    public struct Entry: Sendable, Hashable {
        public var id: Int64
        public var roomKey: String
        public init(id: Int64, roomKey: String) {
            self.id = id
            self.roomKey = roomKey
        }
    }

    public enum Action: Sendable, Hashable {
        /// Post the row now (its room has nothing else in flight).
        case send(Entry, attempt: Int)
        /// Delete the delivered row.
        case delete(id: Int64)
        /// Call ``retryDue(_:)`` for the room after this wait.
        case retry(roomKey: String, after: Duration)
    }

    private enum RoomState: Sendable {
        /// Waits for a free slot (it is in ``ready``).
        case ready
        case sending
        /// Failed `failures` times in a row; waits for its retry.
        case backingOff(failures: Int)
    }

    private struct Room: Sendable {
        var queue: [Int64] = []
        /// The index of the queue's head in ``queue`` (items before it are delivered).
        var head = 0
        var state: RoomState = .ready
        var failures = 0
        var pending: ArraySlice<Int64> { queue[head...] }
    }

    public let maxInFlight: Int
    public let backoff: WebhookBackoff
    private var rooms: [String: Room] = [:]
    /// Rooms waiting for a slot, first come first served.
    private var ready: [String] = []
    private var readyHead = 0
    public private(set) var inFlight = 0
    /// The highest row id seen, so rows loaded twice are not queued twice.
    private var lastId: Int64 = 0
    public private(set) var pendingCount = 0

    public init(maxInFlight: Int = 8, backoff: WebhookBackoff = WebhookBackoff()) {
        precondition(maxInFlight > 0)
        self.maxInFlight = maxInFlight
        self.backoff = backoff
    }

    /// Rows were stored (or found at start), in id order.
    public mutating func stored(_ entries: [Entry]) -> [Action] {
        for entry in entries where entry.id > lastId {
            lastId = entry.id
            pendingCount += 1
            // A room that is known has rows pending and is waiting, sending or backing off already.
            if rooms[entry.roomKey] != nil {
                rooms[entry.roomKey]!.queue.append(entry.id)
            } else {
                rooms[entry.roomKey] = Room(queue: [entry.id])
                ready.append(entry.roomKey)
            }
        }
        return pump()
    }

    /// The room's row in flight was answered 2xx.
    public mutating func delivered(roomKey: String) -> [Action] {
        guard var room = rooms[roomKey], case .sending = room.state else { return [] }
        let id = room.queue[room.head]
        room.head += 1
        room.failures = 0
        inFlight -= 1
        pendingCount -= 1
        if room.pending.isEmpty {
            rooms[roomKey] = nil
        } else {
            if room.head > 64 { room.queue.removeFirst(room.head); room.head = 0 }
            room.state = .ready
            rooms[roomKey] = room
            ready.append(roomKey)
        }
        return [.delete(id: id)] + pump()
    }

    /// The room's row in flight failed (no connection, no answer in time, not 2xx).
    /// `random` in 0...1 picks the backoff's jitter.
    public mutating func failed(roomKey: String, random: Double) -> [Action] {
        guard var room = rooms[roomKey], case .sending = room.state else { return [] }
        room.failures += 1
        room.state = .backingOff(failures: room.failures)
        rooms[roomKey] = room
        inFlight -= 1
        return [.retry(roomKey: roomKey, after: backoff.delay(afterFailures: room.failures, random: random))] + pump()
    }

    /// A room's backoff is over: it may send again when a slot is free.
    public mutating func retryDue(_ roomKey: String) -> [Action] {
        guard var room = rooms[roomKey], case .backingOff = room.state else { return [] }
        room.state = .ready
        rooms[roomKey] = room
        ready.append(roomKey)
        return pump()
    }

    private mutating func pump() -> [Action] {
        var actions: [Action] = []
        while inFlight < maxInFlight, readyHead < ready.count {
            let key = ready[readyHead]
            readyHead += 1
            guard var room = rooms[key], case .ready = room.state, !room.pending.isEmpty else { continue }
            room.state = .sending
            rooms[key] = room
            inFlight += 1
            actions.append(.send(Entry(id: room.queue[room.head], roomKey: key), attempt: room.failures + 1))
        }
        if readyHead > 1024, readyHead * 2 > ready.count {
            ready.removeFirst(readyHead)
            readyHead = 0
        }
        return actions
    }
}
