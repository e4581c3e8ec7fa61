import Foundation
import GRDB
import LiveRoomWebhooks

extension RoomStore {
    static func migrateWebhooks(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6-webhook-outbox") { db in
            // Each event's exact signed body, kept until the receiver answered 2xx.
            try db.create(table: "webhookOutbox") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("roomKey", .text).notNull()
                t.column("body", .blob).notNull()
                t.column("createdAt", .integer).notNull()
            }
        }
    }

    /// Stores webhook bodies in order, in one transaction, as long as fewer than `maxPending`
    /// rows wait; the rest are not stored. Returns the rows stored and how many were not.
    public func storeWebhooks(_ events: [(roomKey: String, body: [UInt8])], maxPending: Int) async throws -> (stored: [WebhookOutboxRow], dropped: Int) {
        guard !events.isEmpty else { return ([], 0) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return try await database.write { db in
            var pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM webhookOutbox") ?? 0
            var stored: [WebhookOutboxRow] = []
            var dropped = 0
            for event in events {
                guard pending < maxPending else {
                    dropped += 1
                    continue
                }
                try db.execute(
                    sql: "INSERT INTO webhookOutbox (roomKey, body, createdAt) VALUES (?, ?, ?)",
                    arguments: [event.roomKey, Data(event.body), now])
                stored.append(WebhookOutboxRow(id: db.lastInsertedRowID, roomKey: event.roomKey))
                pending += 1
            }
            return (stored, dropped)
        }
    }

    /// Waiting webhooks after row `afterId`, oldest first.
    public func pendingWebhooks(after afterId: Int64 = 0, limit: Int = 10_000) async throws -> [WebhookOutboxRow] {
        try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, roomKey FROM webhookOutbox WHERE id > ? ORDER BY id LIMIT ?", arguments: [afterId, limit])
                .map { WebhookOutboxRow(id: $0["id"], roomKey: $0["roomKey"]) }
        }
    }

    /// The stored body of a waiting webhook.
    public func webhookBody(_ id: Int64) async throws -> [UInt8]? {
        try await database.read { db in
            try Data.fetchOne(db, sql: "SELECT body FROM webhookOutbox WHERE id = ?", arguments: [id]).map { Array($0) }
        }
    }

    /// Forgets a delivered webhook.
    public func deleteWebhook(_ id: Int64) async throws {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM webhookOutbox WHERE id = ?", arguments: [id])
        }
    }

    /// How many webhooks wait.
    public func pendingWebhookCount() async throws -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM webhookOutbox") ?? 0 }
    }
}

extension RoomStore: WebhookOutbox {
    public var isShared: Bool { false }
    /// One node's database: no other node leaves rows in it.
    public func adoptOrphanedWebhooks() async throws -> [WebhookOutboxRow] { [] }
}
