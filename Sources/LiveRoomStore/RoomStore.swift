import Foundation
import GRDB
import LiveRoomCore

/// The server's SQLite database (GRDB): settings, room history and catalogues.
///
/// Writes are transactions, so a crash loses at most the record being written; the schema
/// is migrated forward on open and never dropped.
public final class RoomStore: Sendable {
    let database: DatabaseQueue

    /// Opens (creating if needed) the database file at `path`. The file holds the development
    /// secret key, so it is readable by the server's user only (0600), and so are the journal
    /// files SQLite makes beside it, which take the database file's mode.
    public init(path: String) throws {
        let files = FileManager.default
        if files.fileExists(atPath: path) {
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        } else if !files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        // GRDB's writer runs at user-initiated priority by default: on Linux nice -4, above the
        // server's other threads, so a flash sale's writes took the CPU from every room's
        // messages. At the default priority (nice 0) it shares with them, below the signaling
        // threads (``--signaling-nice``); at utility (nice 4) a sale's first 100 orders took
        // over 5 s beside an encoding anchor in a debug build.
        configuration.qos = .default
        database = try DatabaseQueue(path: path, configuration: configuration)
        try Self.migrator.migrate(database)
    }

    /// An in-memory database, for tests.
    public init() throws {
        database = try DatabaseQueue()
        try Self.migrator.migrate(database)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "setting") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
            try db.create(table: "room") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("roomId", .text).notNull().indexed()
                t.column("createdAt", .integer).notNull().indexed()
                t.column("dissolvedAt", .integer)
                t.column("dissolveReason", .text)
            }
            try db.create(table: "roomSession") { t in
                t.autoIncrementedPrimaryKey("id")
                t.belongsTo("room").notNull()
                t.column("userId", .text).notNull()
                t.column("role", .text).notNull()
                t.column("enteredAt", .integer).notNull()
                t.column("exitedAt", .integer)
                t.column("exitReason", .text)
            }
        }
        migrateCatalogue(&migrator)
        migrateOrders(&migrator)
        migrateReplays(&migrator)
        migrateBattles(&migrator)
        migrateWebhooks(&migrator)
        migrateShopOwners(&migrator)
        return migrator
    }

    // MARK: Settings

    public func setting(_ key: String) throws -> String? {
        try database.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key])
        }
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }

    /// The stored value for `key`, or `make()`'s value stored now. One transaction, so two
    /// servers on one data directory agree.
    public func setting(_ key: String, orInsert make: () -> String) throws -> String {
        try database.write { db in
            if let value = try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key]) {
                return value
            }
            let value = make()
            try db.execute(sql: "INSERT INTO setting (key, value) VALUES (?, ?)", arguments: [key, value])
            return value
        }
    }

    // MARK: Room history

    /// Appends records in order, in one transaction.
    public func append(_ records: [RoomRecord]) throws {
        guard !records.isEmpty else { return }
        try database.write { db in
            for record in records {
                try Self.apply(record, db)
            }
        }
    }

    private static func apply(_ record: RoomRecord, _ db: Database) throws {
        switch record {
        case .roomCreated(let roomId, let at):
            try db.execute(sql: "INSERT INTO room (roomId, createdAt) VALUES (?, ?)", arguments: [roomId, at])
        case .roomDissolved(let roomId, let at, let reason):
            try db.execute(
                sql: "UPDATE room SET dissolvedAt = ?, dissolveReason = ? WHERE roomId = ? AND dissolvedAt IS NULL",
                arguments: [at, reason, roomId])
        case .userEntered(let roomId, let userId, let role, let at):
            try db.execute(
                sql: """
                    INSERT INTO roomSession (roomId, userId, role, enteredAt)
                    SELECT id, ?, ?, ? FROM room WHERE roomId = ? AND dissolvedAt IS NULL ORDER BY id DESC LIMIT 1
                    """,
                arguments: [userId, role.rawValue, at, roomId])
        case .roleChanged(let roomId, let userId, let role, _):
            try db.execute(
                sql: """
                    UPDATE roomSession SET role = ? WHERE exitedAt IS NULL AND userId = ?
                    AND roomId IN (SELECT id FROM room WHERE roomId = ? AND dissolvedAt IS NULL)
                    """,
                arguments: [role.rawValue, userId, roomId])
        case .userLeft(let roomId, let userId, let at, let reason):
            try db.execute(
                sql: """
                    UPDATE roomSession SET exitedAt = ?, exitReason = ? WHERE exitedAt IS NULL AND userId = ?
                    AND roomId IN (SELECT id FROM room WHERE roomId = ? AND dissolvedAt IS NULL)
                    """,
                arguments: [at, reason, userId, roomId])
        case .mediaChanged, .pkLinked, .pkUnlinked:
            break
        }
    }

    /// Closes rooms and sessions a previous run left open (the server stopped with users in rooms).
    public func closeUnfinished(at: Int64, reason: String) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE roomSession SET exitedAt = ?, exitReason = ? WHERE exitedAt IS NULL", arguments: [at, reason])
            try db.execute(sql: "UPDATE room SET dissolvedAt = ?, dissolveReason = ? WHERE dissolvedAt IS NULL", arguments: [at, reason])
        }
    }

    /// Rooms created between `from` and `to` (milliseconds since 1970), newest first.
    public func roomHistory(from: Int64, to: Int64, roomId: String? = nil, offset: Int = 0, limit: Int = 100) throws -> (total: Int, rooms: [RoomHistoryEntry]) {
        try database.read { db in
            var filter = "createdAt >= ? AND createdAt <= ?"
            var arguments: StatementArguments = [from, to]
            if let roomId {
                filter += " AND roomId = ?"
                _ = arguments.append(contentsOf: [roomId])
            }
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM room WHERE \(filter)", arguments: arguments) ?? 0
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM room WHERE \(filter) ORDER BY createdAt DESC, id DESC LIMIT ? OFFSET ?",
                arguments: arguments + [limit, offset])
            return (total, try rows.map { row in
                let id: Int64 = row["id"]
                let users = try String.fetchAll(
                    db, sql: "SELECT userId FROM roomSession WHERE roomId = ? GROUP BY userId ORDER BY MIN(id)", arguments: [id])
                return RoomHistoryEntry(
                    roomId: row["roomId"], createdAt: row["createdAt"], dissolvedAt: row["dissolvedAt"],
                    dissolveReason: row["dissolveReason"], userIds: users)
            })
        }
    }
}

extension RoomStore: RoomHistoryStore {}
