import Foundation
import GRDB
import LiveRoomCommerce
import LiveRoomProtocol

extension RoomStore: OrderStore {
    static func migrateOrders(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-orders") { db in
            try db.create(table: "purchase") { t in
                t.primaryKey("orderId", .text)
                t.column("roomId", .text).notNull()
                t.column("itemNumber", .integer).notNull()
                t.column("userId", .text).notNull()
                t.column("quantity", .integer).notNull()
                t.column("amountMinor", .integer).notNull()
                t.column("currency", .text).notNull()
                t.column("state", .text).notNull()
                t.column("requestId", .text)
                t.column("createdAt", .integer).notNull()
                t.column("expiresAt", .integer).notNull()
                t.column("updatedAt", .integer).notNull()
            }
            try db.create(index: "purchaseRequest", on: "purchase", columns: ["roomId", "userId", "requestId"], unique: true)
            try db.create(index: "purchaseItem", on: "purchase", columns: ["roomId", "itemNumber", "userId", "state"])
            try db.create(index: "purchaseExpiry", on: "purchase", columns: ["state", "expiresAt"])
        }
    }

    public func buy(
        itemNumber: Int, quantity: Int, userId: String, requestId: String?, room: String, now: Int64, reservation: Duration
    ) async throws -> (order: Order, product: Product, repeated: Bool) {
        let purchase = PurchaseRequest(itemNumber: itemNumber, quantity: quantity, userId: userId, requestId: requestId)
        try Purchase.check(quantity: quantity, requestId: requestId)
        return try await database.write { db in try Self.buy(purchase, room: room, now: now, reservation: reservation, db) }
    }

    /// The batch in one write transaction, each purchase in a savepoint of its own: one
    /// refused (or failing) rolls back only itself, and the batch costs one commit.
    public func buy(_ purchases: [PurchaseRequest], room: String, now: Int64, reservation: Duration) async -> [PurchaseOutcome] {
        do {
            return try await database.write { db in
                purchases.map { purchase in
                    // A savepoint returns nothing: the outcome comes out through this.
                    var outcome: PurchaseOutcome = .failure(Purchase.productNotFound(purchase.itemNumber))
                    do {
                        try Purchase.check(quantity: purchase.quantity, requestId: purchase.requestId)
                        try db.inSavepoint {
                            outcome = .success(try Self.buy(purchase, room: room, now: now, reservation: reservation, db))
                            return .commit
                        }
                    } catch {
                        outcome = .failure(error)
                    }
                    return outcome
                }
            }
        } catch {
            return purchases.map { _ in .failure(error) }
        }
    }

    /// One purchase inside a write transaction: checks shelf, the user's limit and stock, takes
    /// the stock and stores the order; a request id seen before returns its order.
    private static func buy(
        _ purchase: PurchaseRequest, room: String, now: Int64, reservation: Duration, _ db: Database
    ) throws -> (order: Order, product: Product, repeated: Bool) {
        let (itemNumber, quantity, userId, requestId) = (purchase.itemNumber, purchase.quantity, purchase.userId, purchase.requestId)
        if let requestId,
            let row = try Row.fetchOne(
                db, sql: "SELECT * FROM purchase WHERE roomId = ? AND userId = ? AND requestId = ?", arguments: [room, userId, requestId])
        {
            // The same request again (a retry after a lost answer): the same order.
            let order = Self.order(row)
            guard let product = try Self.storedProduct(order.itemNumber, room: room, db) else { throw Purchase.productNotFound(order.itemNumber) }
            return (order, product, true)
        }
        var product = try Purchase.offered(try Self.storedProduct(itemNumber, room: room, db), itemNumber: itemNumber)
        if product.limitPerUser != nil {
            let held = try Int.fetchOne(
                db,
                sql: "SELECT COALESCE(SUM(quantity), 0) FROM purchase WHERE roomId = ? AND itemNumber = ? AND userId = ? AND state IN ('reserved', 'paid')",
                arguments: [room, itemNumber, userId]) ?? 0
            try Purchase.checkLimit(product, quantity: quantity, held: held)
        }
        try Purchase.checkStock(product.stock, quantity: quantity, itemNumber: itemNumber)
        try db.execute(
            sql: "UPDATE product SET stock = stock - ?, version = version + 1 WHERE roomId = ? AND itemNumber = ? AND stock >= ?",
            arguments: [quantity, room, itemNumber, quantity])
        guard db.changesCount == 1 else { throw Purchase.soldOut(itemNumber) }
        product.stock -= quantity
        product.version += 1
        let order = Order(
            orderId: Self.newOrderId(), roomId: room, itemNumber: itemNumber, userId: userId, quantity: quantity,
            amount: Money(minorUnits: product.price.minorUnits * Int64(quantity), currency: product.price.currency), state: .reserved,
            requestId: requestId, createdAt: now, expiresAt: now + Self.milliseconds(reservation), updatedAt: now)
        try db.execute(
            sql: """
                INSERT INTO purchase (orderId, roomId, itemNumber, userId, quantity, amountMinor, currency, state, requestId, createdAt, expiresAt, updatedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                order.orderId, room, itemNumber, userId, quantity, order.amount.minorUnits, order.amount.currency, order.state.rawValue,
                requestId, now, order.expiresAt, now,
            ])
        return (order, product, false)
    }

    public func orders(of itemNumber: Int, room: String, atMost: Int) async throws -> (product: Product?, orders: [Order])? {
        try await database.read { db in
            let orders = try Row.fetchAll(
                db, sql: "SELECT * FROM purchase WHERE roomId = ? AND itemNumber = ? LIMIT ?", arguments: [room, itemNumber, atMost + 1]
            ).map(Self.order)
            guard orders.count <= atMost else { return nil }
            return (try Self.storedProduct(itemNumber, room: room, db), orders)
        }
    }

    public func order(_ orderId: String) async throws -> Order? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM purchase WHERE orderId = ?", arguments: [orderId]).map(Self.order)
        }
    }

    public func orders(room: String, state: Order.State?, offset: Int, limit: Int) async throws -> (total: Int, orders: [Order]) {
        try await database.read { db in
            let filter = state == nil ? "" : " AND state = ?"
            var arguments: [DatabaseValueConvertible?] = [room]
            if let state { arguments.append(state.rawValue) }
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM purchase WHERE roomId = ?\(filter)", arguments: StatementArguments(arguments)) ?? 0
            let orders = try Row.fetchAll(
                db, sql: "SELECT * FROM purchase WHERE roomId = ?\(filter) ORDER BY createdAt DESC, orderId LIMIT ? OFFSET ?",
                arguments: StatementArguments(arguments + [limit, offset])
            ).map(Self.order)
            return (total, orders)
        }
    }

    public func settle(orderId: String, to state: Order.State, now: Int64) async throws -> (order: Order, product: Product?) {
        precondition(state == .paid || state == .cancelled, "orders are settled as paid or cancelled")
        return try await database.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM purchase WHERE orderId = ?", arguments: [orderId]) else {
                throw Order.notFound(orderId)
            }
            var order = Self.order(row)
            try order.checkReserved()
            order.state = state
            order.updatedAt = now
            try db.execute(sql: "UPDATE purchase SET state = ?, updatedAt = ? WHERE orderId = ?", arguments: [state.rawValue, now, orderId])
            guard state == .cancelled else { return (order, nil) }
            return (order, try Self.returnStock(of: order, db))
        }
    }

    public func expireOrders(now: Int64) async throws -> [(room: String, product: Product, order: Order)] {
        try await database.write { db in
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM purchase WHERE state = 'reserved' AND expiresAt <= ? LIMIT 1000", arguments: [now])
            var returned: [(String, Product, Order)] = []
            for var order in rows.map(Self.order) {
                try db.execute(sql: "UPDATE purchase SET state = 'expired', updatedAt = ? WHERE orderId = ?", arguments: [now, order.orderId])
                order.state = .expired
                order.updatedAt = now
                if let product = try Self.returnStock(of: order, db) { returned.append((order.roomId, product, order)) }
            }
            return returned
        }
    }

    /// Puts an order's quantity back on its product (if it still exists).
    private static func returnStock(of order: Order, _ db: Database) throws -> Product? {
        try db.execute(
            sql: "UPDATE product SET stock = stock + ?, version = version + 1 WHERE roomId = ? AND itemNumber = ?",
            arguments: [order.quantity, order.roomId, order.itemNumber])
        return try storedProduct(order.itemNumber, room: order.roomId, db)
    }

    private static func order(_ row: Row) -> Order {
        Order(
            orderId: row["orderId"], roomId: row["roomId"], itemNumber: row["itemNumber"], userId: row["userId"], quantity: row["quantity"],
            amount: Money(minorUnits: row["amountMinor"], currency: row["currency"]), state: Order.State(rawValue: row["state"]) ?? .cancelled,
            requestId: row["requestId"], createdAt: row["createdAt"], expiresAt: row["expiresAt"], updatedAt: row["updatedAt"])
    }

    private static func newOrderId() -> String {
        (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16).leftPadded() }.joined()
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

extension String {
    fileprivate func leftPadded() -> String { count == 1 ? "0" + self : self }
}
