/// One room's lifetime as the history keeps it.
public struct RoomHistoryEntry: Sendable, Hashable {
    /// The room's key (`RoomID.key`: a string room's id, `*123` for numeric room 123).
    public var roomId: String
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var dissolvedAt: Int64?
    public var dissolveReason: String?
    /// Every user who entered, in order.
    public var userIds: [String]

    public init(roomId: String, createdAt: Int64, dissolvedAt: Int64?, dissolveReason: String?, userIds: [String]) {
        self.roomId = roomId
        self.createdAt = createdAt
        self.dissolvedAt = dissolvedAt
        self.dissolveReason = dissolveReason
        self.userIds = userIds
    }
}

/// Where room history lives: this node's SQLite database (``RoomStore``), or in cluster mode
/// PostgreSQL, shared by the nodes.
public protocol RoomHistoryStore: Sendable {
    /// Appends records in order, in one transaction.
    func append(_ records: [RoomRecord]) async throws
    /// Rooms created between `from` and `to` (milliseconds since 1970), newest first.
    func roomHistory(from: Int64, to: Int64, roomId: String?, offset: Int, limit: Int) async throws -> (total: Int, rooms: [RoomHistoryEntry])
}
