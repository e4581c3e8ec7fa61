import GRDB
import LiveRoomCommerce
import LiveRoomProtocol

extension RoomStore: BattleStore {
    static func migrateBattles(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-pk-battles") { db in
            try db.create(table: "pkBattle") { t in
                t.primaryKey("battleId", .text)
                t.column("startedAt", .integer).notNull()
                t.column("endsAt", .integer).notNull()
                t.column("endedAt", .integer)
                t.column("winnerRoomId", .text)
            }
            try db.create(index: "pkBattleUnfinished", on: "pkBattle", columns: ["endedAt", "endsAt"])
            // One row per room; units are null until the battle is finished.
            try db.create(table: "pkBattleSide") { t in
                t.column("battleId", .text).notNull().references("pkBattle", onDelete: .cascade)
                t.column("position", .integer).notNull()
                t.column("roomId", .text).notNull()
                t.column("userId", .text).notNull()
                t.column("units", .integer)
                t.primaryKey(["battleId", "roomId"])
            }
            try db.create(index: "pkBattleSideRoom", on: "pkBattleSide", columns: ["roomId"])
            // A finished side's amount in each currency it sold in.
            try db.create(table: "pkBattleAmount") { t in
                t.column("battleId", .text).notNull().references("pkBattle", onDelete: .cascade)
                t.column("roomId", .text).notNull()
                t.column("currency", .text).notNull()
                t.column("amountMinor", .integer).notNull()
                t.primaryKey(["battleId", "roomId", "currency"])
            }
            // A room's orders in a time window: what a battle's score counts.
            try db.create(index: "purchaseRoomTime", on: "purchase", columns: ["roomId", "createdAt"], ifNotExists: true)
        }
    }

    public func startBattle(_ battle: PKBattle) async throws {
        precondition(battle.endedAt == nil && battle.results == nil && battle.winnerRoomId == nil, "a battle starts without a result")
        try battle.checkNew()
        try await database.write { db in
            guard try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM pkBattle WHERE battleId = ?)", arguments: [battle.battleId])! else {
                throw PKBattle.alreadyExists(battle.battleId)
            }
            try db.execute(
                sql: "INSERT INTO pkBattle (battleId, startedAt, endsAt) VALUES (?, ?, ?)",
                arguments: [battle.battleId, battle.startedAt, battle.endsAt])
            for (position, side) in battle.rooms.enumerated() {
                try db.execute(
                    sql: "INSERT INTO pkBattleSide (battleId, position, roomId, userId) VALUES (?, ?, ?, ?)",
                    arguments: [battle.battleId, position, side.roomId, side.userId])
            }
        }
    }

    public func sales(room: String, from: Int64, to: Int64) async throws -> PKBattle.Score {
        try await database.read { db in try Self.sales(room: room, from: from, to: to, db) }
    }

    public func finishBattle(_ battleId: String, endedAt: Int64) async throws -> PKBattle {
        try await database.write { db in
            guard var battle = try Self.storedBattle(battleId, db) else { throw PKBattle.notFound(battleId) }
            guard !battle.isFinished else { return battle }
            let to = max(battle.startedAt, min(battle.endsAt, endedAt))
            let results = try battle.rooms.map { try Self.sales(room: $0.roomId, from: battle.startedAt, to: to, db) }
            battle.endedAt = endedAt
            battle.results = results
            battle.winnerRoomId = PKBattle.winner(of: results)
            try db.execute(
                sql: "UPDATE pkBattle SET endedAt = ?, winnerRoomId = ? WHERE battleId = ?", arguments: [endedAt, battle.winnerRoomId, battleId])
            for score in results {
                try db.execute(
                    sql: "UPDATE pkBattleSide SET units = ? WHERE battleId = ? AND roomId = ?", arguments: [score.units, battleId, score.roomId])
                for (currency, amount) in score.amounts {
                    try db.execute(
                        sql: "INSERT INTO pkBattleAmount (battleId, roomId, currency, amountMinor) VALUES (?, ?, ?, ?)",
                        arguments: [battleId, score.roomId, currency, amount])
                }
            }
            return battle
        }
    }

    public func battle(_ battleId: String) async throws -> PKBattle? {
        try await database.read { db in try Self.storedBattle(battleId, db) }
    }

    public func battles(room: String, limit: Int) async throws -> [PKBattle] {
        try await database.read { db in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT pkBattle.battleId FROM pkBattle JOIN pkBattleSide ON pkBattleSide.battleId = pkBattle.battleId
                    WHERE pkBattleSide.roomId = ? ORDER BY pkBattle.startedAt DESC, pkBattle.battleId LIMIT ?
                    """,
                arguments: [room, limit])
            return try ids.compactMap { try Self.storedBattle($0, db) }
        }
    }

    public func unfinishedBattles() async throws -> [PKBattle] {
        try await database.read { db in
            let ids = try String.fetchAll(db, sql: "SELECT battleId FROM pkBattle WHERE endedAt IS NULL ORDER BY endsAt, battleId")
            return try ids.compactMap { try Self.storedBattle($0, db) }
        }
    }

    /// What `room` sold in [from, to): its reserved and paid orders.
    private static func sales(room: String, from: Int64, to: Int64, _ db: Database) throws -> PKBattle.Score {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT currency, SUM(quantity) AS units, SUM(amountMinor) AS amountMinor FROM purchase
                WHERE roomId = ? AND createdAt >= ? AND createdAt < ? AND state IN ('reserved', 'paid') GROUP BY currency
                """,
            arguments: [room, from, to])
        var score = PKBattle.Score(roomId: room, units: 0, amounts: [:])
        for row in rows {
            score.units += row["units"] as Int
            score.amounts[row["currency"]] = row["amountMinor"]
        }
        return score
    }

    private static func storedBattle(_ battleId: String, _ db: Database) throws -> PKBattle? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM pkBattle WHERE battleId = ?", arguments: [battleId]) else { return nil }
        let sides = try Row.fetchAll(db, sql: "SELECT * FROM pkBattleSide WHERE battleId = ? ORDER BY position", arguments: [battleId])
        var battle = PKBattle(
            battleId: battleId, rooms: sides.map { PKBattle.Side(roomId: $0["roomId"], userId: $0["userId"]) }, startedAt: row["startedAt"],
            endsAt: row["endsAt"], endedAt: row["endedAt"], winnerRoomId: row["winnerRoomId"])
        guard battle.isFinished else { return battle }
        var amounts: [String: [String: Int64]] = [:]
        for amount in try Row.fetchAll(db, sql: "SELECT * FROM pkBattleAmount WHERE battleId = ?", arguments: [battleId]) {
            amounts[amount["roomId"], default: [:]][amount["currency"]] = amount["amountMinor"]
        }
        battle.results = sides.map { side in
            PKBattle.Score(roomId: side["roomId"], units: side["units"] ?? 0, amounts: amounts[side["roomId"]] ?? [:])
        }
        return battle
    }

}
