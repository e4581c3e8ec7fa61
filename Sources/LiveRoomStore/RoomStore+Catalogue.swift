import GRDB
import LiveRoomCommerce
import LiveRoomProtocol

extension RoomStore: CatalogueStore {
    static func migrateCatalogue(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-catalogue") { db in
            try db.create(table: "product") { t in
                t.column("roomId", .text).notNull()
                t.column("itemNumber", .integer).notNull()
                t.column("title", .text).notNull()
                t.column("priceMinor", .integer).notNull()
                t.column("currency", .text).notNull()
                t.column("itemUrl", .text).notNull()
                t.column("imageUrl", .text).notNull()
                t.column("stock", .integer).notNull()
                t.column("limitPerUser", .integer)
                t.column("onShelf", .boolean).notNull()
                t.column("version", .integer).notNull()
                t.primaryKey(["roomId", "itemNumber"])
            }
            try db.create(table: "popUp") { t in
                t.primaryKey("roomId", .text)
                t.column("itemNumber", .integer).notNull()
                t.column("userId", .text).notNull()
                t.column("data", .text).notNull()
                t.column("poppedAt", .integer).notNull()
            }
        }
    }

    static func migrateReplays(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4-replays") { db in
            try db.create(table: "replay") { t in
                t.primaryKey("replayId", .text)
                t.column("roomId", .text).notNull()
                t.column("itemNumber", .integer).notNull()
                t.column("userId", .text).notNull()
                t.column("codec", .text).notNull()
                t.column("durationMs", .integer).notNull()
                t.column("bytes", .integer).notNull()
                t.column("createdAt", .integer).notNull()
            }
            try db.create(index: "replayProduct", on: "replay", columns: ["roomId", "itemNumber"])
        }
    }

    static func migrateShopOwners(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v7-shop-owners") { db in
            try db.create(table: "shopOwner") { t in
                t.column("roomId", .text).notNull()
                t.column("userId", .text).notNull()
                t.primaryKey(["roomId", "userId"])
            }
        }
    }

    public func shopOwners(room: String) async throws -> [String] {
        try await database.read { db in try Self.fetchOwners(room, db) }
    }

    public func claimShop(room: String, userId: String) async throws -> [String] {
        let owners = try ShopOwners.check([userId])
        return try await database.write { db in
            if try Self.fetchOwners(room, db).isEmpty {
                try db.execute(sql: "INSERT INTO shopOwner (roomId, userId) VALUES (?, ?)", arguments: [room, owners[0]])
            }
            return try Self.fetchOwners(room, db)
        }
    }

    public func setShopOwners(_ owners: [String], room: String) async throws -> [String] {
        let owners = try ShopOwners.check(owners)
        return try await database.write { db in
            try db.execute(sql: "DELETE FROM shopOwner WHERE roomId = ?", arguments: [room])
            for userId in owners {
                try db.execute(sql: "INSERT INTO shopOwner (roomId, userId) VALUES (?, ?)", arguments: [room, userId])
            }
            return owners
        }
    }

    private static func fetchOwners(_ room: String, _ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT userId FROM shopOwner WHERE roomId = ? ORDER BY userId LIMIT ?", arguments: [room, ShopOwners.maxPerRoom])
    }

    public func setPopUp(_ popUp: PopUp?, room: String) async throws {
        try await database.write { db in
            if let popUp {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO popUp (roomId, itemNumber, userId, data, poppedAt) VALUES (?, ?, ?, ?, ?)",
                    arguments: [room, popUp.itemNumber, popUp.userId, popUp.data, popUp.poppedAt])
            } else {
                try db.execute(sql: "DELETE FROM popUp WHERE roomId = ?", arguments: [room])
            }
        }
    }

    public func popUp(room: String) async throws -> PopUp? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM popUp WHERE roomId = ?", arguments: [room]).map { row in
                PopUp(itemNumber: row["itemNumber"], userId: row["userId"], data: row["data"], poppedAt: row["poppedAt"])
            }
        }
    }

    public func addProduct(_ product: Product, room: String) async throws -> Product {
        try await database.write { db in
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM product WHERE roomId = ?", arguments: [room]) ?? 0
            guard count < Product.maxPerRoom else {
                throw Product.catalogueFull
            }
            guard try Self.fetchProduct(product.itemNumber, room: room, db) == nil else {
                throw Product.alreadyInCatalogue(product.itemNumber)
            }
            var stored = product
            stored.version = 1
            try db.execute(
                sql: """
                    INSERT INTO product (roomId, itemNumber, title, priceMinor, currency, itemUrl, imageUrl, stock, limitPerUser, onShelf, version)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: StatementArguments(Self.arguments(stored, room: room)))
            return stored
        }
    }

    public func replaceProduct(_ product: Product, room: String) async throws -> Product {
        try await database.write { db in
            guard let current = try Self.fetchProduct(product.itemNumber, room: room, db) else {
                throw Purchase.productNotFound(product.itemNumber)
            }
            guard current.version == product.version else {
                throw Product.versionConflict(product.itemNumber, stored: current.version, given: product.version)
            }
            var stored = product
            stored.version = current.version + 1
            try db.execute(
                sql: """
                    UPDATE product SET title = ?, priceMinor = ?, currency = ?, itemUrl = ?, imageUrl = ?, stock = ?, limitPerUser = ?,
                    onShelf = ?, version = ? WHERE roomId = ? AND itemNumber = ?
                    """,
                arguments: StatementArguments(Array(Self.arguments(stored, room: room).dropFirst(2)) + [room, stored.itemNumber]))
            return stored
        }
    }

    @discardableResult
    public func removeProduct(_ itemNumber: Int, room: String) async throws -> [Replay] {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM product WHERE roomId = ? AND itemNumber = ?", arguments: [room, itemNumber])
            guard db.changesCount > 0 else { throw Purchase.productNotFound(itemNumber) }
            let replays = try Self.replays(of: itemNumber, room: room, db)
            try db.execute(sql: "DELETE FROM replay WHERE roomId = ? AND itemNumber = ?", arguments: [room, itemNumber])
            // Its reservations go with it, so a product added later under the same number
            // never gets their stock back.
            try db.execute(
                sql: "UPDATE purchase SET state = 'cancelled' WHERE roomId = ? AND itemNumber = ? AND state = 'reserved'", arguments: [room, itemNumber])
            return replays
        }
    }

    public func addReplay(_ replay: Replay, keep: Int) async throws -> (product: Product, dropped: [Replay]) {
        try await database.write { db in
            guard try Self.fetchProduct(replay.itemNumber, room: replay.roomId, db) != nil else { throw Purchase.productNotFound(replay.itemNumber) }
            try db.execute(
                sql: "INSERT INTO replay (replayId, roomId, itemNumber, userId, codec, durationMs, bytes, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    replay.replayId, replay.roomId, replay.itemNumber, replay.userId, replay.codec, replay.durationMs, replay.bytes, replay.createdAt,
                ])
            let all = try Self.replays(of: replay.itemNumber, room: replay.roomId, db)
            let dropped = Array(all.dropLast(max(keep, 0)))
            for old in dropped { try db.execute(sql: "DELETE FROM replay WHERE replayId = ?", arguments: [old.replayId]) }
            return (try Self.fetchProduct(replay.itemNumber, room: replay.roomId, db)!, dropped)
        }
    }

    public func removeReplay(_ replayId: String, room: String) async throws -> (replay: Replay, product: Product) {
        try await database.write { db in
            guard let replay = try Row.fetchOne(db, sql: "SELECT * FROM replay WHERE replayId = ? AND roomId = ?", arguments: [replayId, room]).map(Self.replay)
            else { throw Replay.notFound(replayId) }
            try db.execute(sql: "DELETE FROM replay WHERE replayId = ?", arguments: [replayId])
            guard let product = try Self.fetchProduct(replay.itemNumber, room: room, db) else { throw Purchase.productNotFound(replay.itemNumber) }
            return (replay, product)
        }
    }

    public func replay(_ replayId: String) async throws -> Replay? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM replay WHERE replayId = ?", arguments: [replayId]).map(Self.replay)
        }
    }

    public func replayFileNames() async throws -> Set<String> {
        try await database.read { db in
            Set(try Row.fetchAll(db, sql: "SELECT * FROM replay").map { Self.replay($0).fileName })
        }
    }

    public func product(_ itemNumber: Int, room: String) async throws -> Product? {
        try await database.read { db in try Self.fetchProduct(itemNumber, room: room, db) }
    }

    public func products(room: String) async throws -> [Product] {
        try await database.read { db in
            let replays = Dictionary(
                grouping: try Row.fetchAll(db, sql: "SELECT * FROM replay WHERE roomId = ? ORDER BY createdAt, replayId", arguments: [room]).map(Self.replay),
                by: \.itemNumber)
            return try Row.fetchAll(db, sql: "SELECT * FROM product WHERE roomId = ? ORDER BY itemNumber", arguments: [room]).map { row in
                var product = Self.product(row)
                product.replays = replays[product.itemNumber] ?? []
                return product
            }
        }
    }

    static func storedProduct(_ itemNumber: Int, room: String, _ db: Database) throws -> Product? {
        try fetchProduct(itemNumber, room: room, db)
    }

    private static func fetchProduct(_ itemNumber: Int, room: String, _ db: Database) throws -> Product? {
        guard var product = try Row.fetchOne(db, sql: "SELECT * FROM product WHERE roomId = ? AND itemNumber = ?", arguments: [room, itemNumber]).map(product)
        else { return nil }
        product.replays = try replays(of: itemNumber, room: room, db)
        return product
    }

    /// A product's replays, oldest first.
    private static func replays(of itemNumber: Int, room: String, _ db: Database) throws -> [Replay] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM replay WHERE roomId = ? AND itemNumber = ? ORDER BY createdAt, replayId", arguments: [room, itemNumber]
        ).map(replay)
    }

    private static func replay(_ row: Row) -> Replay {
        Replay(
            replayId: row["replayId"], roomId: row["roomId"], itemNumber: row["itemNumber"], userId: row["userId"], codec: row["codec"],
            durationMs: row["durationMs"], bytes: row["bytes"], createdAt: row["createdAt"])
    }

    private static func product(_ row: Row) -> Product {
        Product(
            itemNumber: row["itemNumber"], title: row["title"], price: Money(minorUnits: row["priceMinor"], currency: row["currency"]),
            itemUrl: row["itemUrl"], imageUrl: row["imageUrl"], stock: row["stock"], limitPerUser: row["limitPerUser"], onShelf: row["onShelf"],
            version: row["version"])
    }

    private static func arguments(_ product: Product, room: String) -> [DatabaseValueConvertible?] {
        [
            room, product.itemNumber, product.title, product.price.minorUnits, product.price.currency, product.itemUrl, product.imageUrl,
            product.stock, product.limitPerUser, product.onShelf, product.version,
        ]
    }
}
