import Foundation
import LiveRoomCore
import LiveRoomWebhooks
import NIOCore
import PostgresNIO

// MARK: Webhook outbox

/// In cluster mode the webhook outbox is one PostgreSQL table: each row carries the node that
/// stored it, each node delivers its own rows, and a node that is dead (no heartbeat for
/// ``ClusterRules/deadAfterMs``, or gone from `liveroom_nodes`) leaves its rows to the first
/// live node that adopts them, with one conditional update, so a stored webhook outlives its node.
extension PostgresShopStore: WebhookOutbox {
    public var isShared: Bool { true }

    public func storeWebhooks(_ events: [(roomKey: String, body: [UInt8])], maxPending: Int) async throws -> (stored: [WebhookOutboxRow], dropped: Int) {
        guard !events.isEmpty else { return ([], 0) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let nodeId = self.nodeId
        // Room keys are checked room ids; one with NUL (never made by the server) is stored without it.
        let batch = events.map { WebhookToStore(roomKey: $0.roomKey.replacingOccurrences(of: "\0", with: ""), body: $0.body) }
        let result = try await call { connection -> StoredWebhooks in
            var pending = 0
            for try await n in try await connection.query("SELECT count(*) FROM liveroom_webhooks WHERE node_id = \(nodeId)", logger: self.logger)
                .decode(Int.self)
            { pending = n }
            var stored: [WebhookOutboxRow] = []
            var dropped = 0
            for event in batch {
                guard pending < maxPending else {
                    dropped += 1
                    continue
                }
                let rows = try await connection.query(
                    """
                    INSERT INTO liveroom_webhooks (node_id, room_key, body, created_at) VALUES (\(nodeId), \(event.roomKey), \(ByteBuffer(bytes: event.body)), \(now))
                    RETURNING id
                    """, logger: self.logger)
                for try await id in rows.decode(Int64.self) { stored.append(WebhookOutboxRow(id: id, roomKey: event.roomKey)) }
                pending += 1
            }
            return StoredWebhooks(rows: stored, dropped: dropped)
        }
        return (result.rows, result.dropped)
    }

    public func pendingWebhooks(after afterId: Int64, limit: Int) async throws -> [WebhookOutboxRow] {
        let nodeId = self.nodeId
        let limit = min(max(limit, 0), Self.maxRows)
        return try await call { connection -> [WebhookOutboxRow] in
            try await Self.outboxRows(
                try await connection.query(
                    "SELECT id, room_key FROM liveroom_webhooks WHERE node_id = \(nodeId) AND id > \(afterId) ORDER BY id LIMIT \(limit)",
                    logger: self.logger))
        }
    }

    public func webhookBody(_ id: Int64) async throws -> [UInt8]? {
        try await call { connection -> [UInt8]? in
            for try await body in try await connection.query("SELECT body FROM liveroom_webhooks WHERE id = \(id)", logger: self.logger)
                .decode(ByteBuffer.self)
            {
                return Array(body.readableBytesView)
            }
            return nil
        }
    }

    public func deleteWebhook(_ id: Int64) async throws {
        try await call { connection -> Void in
            try await connection.query("DELETE FROM liveroom_webhooks WHERE id = \(id)", logger: self.logger)
        }
    }

    public func pendingWebhookCount() async throws -> Int {
        let nodeId = self.nodeId
        return try await call { connection -> Int in
            var count = 0
            for try await n in try await connection.query("SELECT count(*) FROM liveroom_webhooks WHERE node_id = \(nodeId)", logger: self.logger)
                .decode(Int.self)
            { count = n }
            return count
        }
    }

    public func adoptOrphanedWebhooks() async throws -> [WebhookOutboxRow] {
        let nodeId = self.nodeId
        return try await call { connection -> [WebhookOutboxRow] in
            // One conditional update: rows of a node without a live heartbeat become this
            // node's; two nodes adopting at once take each row once (the row lock, then the
            // condition checked again on the row as it is now).
            try await Self.outboxRows(
                try await connection.query(
                    """
                    UPDATE liveroom_webhooks w SET node_id = \(nodeId)
                    WHERE w.node_id <> \(nodeId) AND NOT EXISTS (
                        SELECT 1 FROM liveroom_nodes n
                        WHERE n.node_id = w.node_id AND n.heartbeat_at > now() - \(PostgresClusterStore.deadInterval)::interval)
                    RETURNING w.id, w.room_key
                    """, logger: self.logger)
            ).sorted { $0.id < $1.id }
        }
    }

    static func outboxRows(_ rows: PostgresRowSequence) async throws -> [WebhookOutboxRow] {
        var result: [WebhookOutboxRow] = []
        for try await (id, room) in rows.decode((Int64, String).self) { result.append(WebhookOutboxRow(id: id, roomKey: room)) }
        return result
    }
}

struct WebhookToStore: Sendable {
    var roomKey: String
    var body: [UInt8]
}

struct StoredWebhooks: Sendable {
    var rows: [WebhookOutboxRow]
    var dropped: Int
}

// MARK: Room history

/// Room history in PostgreSQL: each lifetime of a room is a row with the node it lived on. A
/// node writes the records of the rooms it is home of; when a room starts on a node, lifetimes
/// of it another node left open (it died) are closed as "home node lost".
extension PostgresShopStore: RoomHistoryStore {
    /// Why a lifetime ended when its node died and another node opened the room again.
    public static let homeLostReason = "home node lost"

    public func append(_ records: [RoomRecord]) async throws {
        guard !records.isEmpty else { return }
        let nodeId = self.nodeId
        try await call { connection -> Void in
            for record in records { try await self.apply(record, nodeId: nodeId, connection) }
        }
    }

    func apply(_ record: RoomRecord, nodeId: String, _ connection: PostgresConnection) async throws {
        func clean(_ text: String) -> String { text.replacingOccurrences(of: "\0", with: "") }
        switch record {
        case .roomCreated(let roomId, let at):
            let room = clean(roomId)
            try await connection.query(
                """
                UPDATE liveroom_room_sessions SET exited_at = \(at), exit_reason = \(Self.homeLostReason)
                WHERE exited_at IS NULL AND history_id IN (SELECT id FROM liveroom_room_history WHERE room_id = \(room) AND dissolved_at IS NULL)
                """, logger: logger)
            try await connection.query(
                """
                UPDATE liveroom_room_history SET dissolved_at = \(at), dissolve_reason = \(Self.homeLostReason)
                WHERE room_id = \(room) AND dissolved_at IS NULL
                """, logger: logger)
            try await connection.query(
                "INSERT INTO liveroom_room_history (room_id, node_id, created_at) VALUES (\(room), \(nodeId), \(at))", logger: logger)
        case .roomDissolved(let roomId, let at, let reason):
            try await connection.query(
                """
                UPDATE liveroom_room_history SET dissolved_at = \(at), dissolve_reason = \(clean(reason))
                WHERE room_id = \(clean(roomId)) AND node_id = \(nodeId) AND dissolved_at IS NULL
                """, logger: logger)
        case .userEntered(let roomId, let userId, let role, let at):
            try await connection.query(
                """
                INSERT INTO liveroom_room_sessions (history_id, user_id, role, entered_at)
                SELECT id, \(clean(userId)), \(role.rawValue), \(at) FROM liveroom_room_history
                WHERE room_id = \(clean(roomId)) AND node_id = \(nodeId) AND dissolved_at IS NULL ORDER BY id DESC LIMIT 1
                """, logger: logger)
        case .roleChanged(let roomId, let userId, let role, _):
            try await connection.query(
                """
                UPDATE liveroom_room_sessions SET role = \(role.rawValue) WHERE exited_at IS NULL AND user_id = \(clean(userId))
                AND history_id IN (SELECT id FROM liveroom_room_history WHERE room_id = \(clean(roomId)) AND node_id = \(nodeId) AND dissolved_at IS NULL)
                """, logger: logger)
        case .userLeft(let roomId, let userId, let at, let reason):
            try await connection.query(
                """
                UPDATE liveroom_room_sessions SET exited_at = \(at), exit_reason = \(clean(reason)) WHERE exited_at IS NULL AND user_id = \(clean(userId))
                AND history_id IN (SELECT id FROM liveroom_room_history WHERE room_id = \(clean(roomId)) AND node_id = \(nodeId) AND dissolved_at IS NULL)
                """, logger: logger)
        case .mediaChanged, .pkLinked, .pkUnlinked:
            break
        }
    }

    /// Closes the rooms and sessions this node left open in a previous run.
    public func closeUnfinished(at: Int64, reason: String) async throws {
        let nodeId = self.nodeId
        try await call { connection -> Void in
            try await connection.query(
                """
                UPDATE liveroom_room_sessions SET exited_at = \(at), exit_reason = \(reason)
                WHERE exited_at IS NULL AND history_id IN (SELECT id FROM liveroom_room_history WHERE node_id = \(nodeId) AND dissolved_at IS NULL)
                """, logger: self.logger)
            try await connection.query(
                "UPDATE liveroom_room_history SET dissolved_at = \(at), dissolve_reason = \(reason) WHERE node_id = \(nodeId) AND dissolved_at IS NULL",
                logger: self.logger)
        }
    }

    public func roomHistory(from: Int64, to: Int64, roomId: String?, offset: Int, limit: Int) async throws -> (total: Int, rooms: [RoomHistoryEntry]) {
        let limit = min(max(limit, 0), 1000)
        let offset = max(offset, 0)
        let room = roomId?.replacingOccurrences(of: "\0", with: "")
        let page = try await call { connection -> HistoryPage in
            var total = 0
            for try await n in try await connection.query(
                """
                SELECT count(*) FROM liveroom_room_history WHERE created_at >= \(from) AND created_at <= \(to)
                AND (\(room)::text IS NULL OR room_id = \(room))
                """, logger: self.logger
            ).decode(Int.self) { total = n }
            var entries: [RoomHistoryEntry] = []
            var ids: [Int64] = []
            for try await (id, room, created, dissolved, reason) in try await connection.query(
                """
                SELECT id, room_id, created_at, dissolved_at, dissolve_reason FROM liveroom_room_history
                WHERE created_at >= \(from) AND created_at <= \(to) AND (\(room)::text IS NULL OR room_id = \(room))
                ORDER BY created_at DESC, id DESC LIMIT \(limit) OFFSET \(offset)
                """, logger: self.logger
            ).decode((Int64, String, Int64, Int64?, String?).self) {
                ids.append(id)
                entries.append(RoomHistoryEntry(roomId: room, createdAt: created, dissolvedAt: dissolved, dissolveReason: reason, userIds: []))
            }
            for (index, id) in ids.enumerated() {
                for try await user in try await connection.query(
                    "SELECT user_id FROM liveroom_room_sessions WHERE history_id = \(id) GROUP BY user_id ORDER BY min(id) LIMIT 10000", logger: self.logger
                ).decode(String.self) { entries[index].userIds.append(user) }
            }
            return HistoryPage(total: total, rooms: entries)
        }
        return (page.total, page.rooms)
    }
}

struct HistoryPage: Sendable {
    var total: Int
    var rooms: [RoomHistoryEntry]
}
