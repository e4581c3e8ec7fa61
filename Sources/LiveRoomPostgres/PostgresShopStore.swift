import Foundation
import LiveRoomCommerce
import LiveRoomProtocol
import Logging
import NIOSSL
import PostgresNIO
import Synchronization

/// Rooms' shops in PostgreSQL, shared by every node of a cluster: catalogues, pop-ups, replays'
/// rows, orders and PK sales battles, with the semantics and error codes of the SQLite store
/// (`LiveRoomStore.RoomStore`).
///
/// Every call is one transaction (READ COMMITTED). What must be exactly-once across nodes is
/// one conditional write, so it needs no lock beyond the row's:
///
/// - a purchase takes stock with `UPDATE … SET stock = stock - q WHERE … AND stock >= q`, so
///   buyers on several nodes never oversell; a buyer's limit is counted after that update,
///   while the product's row is locked, so two purchases of one product are judged one after
///   the other;
/// - a `requestId` is unique per room and buyer (a unique index): of two identical requests
///   racing, one stores its order and the other rolls back and returns it (`repeated`);
/// - settling and expiring move an order only from `reserved` (`… WHERE state = 'reserved'`),
///   so two nodes expiring at once return each order's stock once.
///
/// Each call answers within ``timeout``: a database that does not answer by then gives
/// ``ErrorCode/shopStoreNoAnswer`` (-7307), and the call is cancelled.
public final class PostgresShopStore: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// The node whose files the replays this store adds are (the replay rows carry it).
    public let nodeId: String
    /// How long one call may take, the wait for a connection included.
    public let timeout: Duration
    /// Most rows one read returns: a bound on what a hostile or broken table costs.
    public static let maxRows = 100_000
    /// How long a call may take by default.
    public static let defaultTimeout = Duration.seconds(5)

    public init(url: ClusterDatabaseURL, nodeId: String, timeout: Duration = PostgresShopStore.defaultTimeout, maxConnections: Int = 16, logger: Logger) {
        self.client = PostgresClient(
            configuration: url.clientConfiguration(connectTimeout: .seconds(max(1, timeout.components.seconds)), maxConnections: maxConnections),
            backgroundLogger: logger)
        self.logger = logger
        self.nodeId = nodeId
        self.timeout = timeout
    }

    /// Runs the connection pool until the task is cancelled; every other call needs it running.
    public func run() async {
        await client.run()
    }

    /// Creates the tables when missing, under the advisory lock the cluster store migrates under.
    public func prepare() async throws {
        try await call { connection -> Void in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(unescaped: String(PostgresClusterStore.migrationLock)))", logger: self.logger)
            for statement in Self.schema {
                _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
            }
        }
    }

    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS liveroom_products (
            room_id text NOT NULL, item_number bigint NOT NULL, title text NOT NULL, price_minor bigint NOT NULL, currency text NOT NULL,
            item_url text NOT NULL, image_url text NOT NULL, stock bigint NOT NULL CHECK (stock >= 0), limit_per_user bigint,
            on_shelf boolean NOT NULL, version bigint NOT NULL,
            PRIMARY KEY (room_id, item_number))
        """,
        """
        CREATE TABLE IF NOT EXISTS liveroom_shop_owners (room_id text NOT NULL, user_id text NOT NULL, PRIMARY KEY (room_id, user_id))
        """,
        """
        CREATE TABLE IF NOT EXISTS liveroom_popups (
            room_id text PRIMARY KEY, item_number bigint NOT NULL, user_id text NOT NULL, data text NOT NULL, popped_at bigint NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS liveroom_replays (
            replay_id text PRIMARY KEY, room_id text NOT NULL, item_number bigint NOT NULL, user_id text NOT NULL, codec text NOT NULL,
            duration_ms bigint NOT NULL, bytes bigint NOT NULL, created_at bigint NOT NULL, node_id text NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS liveroom_replays_product ON liveroom_replays (room_id, item_number)",
        """
        CREATE TABLE IF NOT EXISTS liveroom_orders (
            order_id text PRIMARY KEY, room_id text NOT NULL, item_number bigint NOT NULL, user_id text NOT NULL, quantity bigint NOT NULL,
            amount_minor bigint NOT NULL, currency text NOT NULL, state text NOT NULL, request_id text, created_at bigint NOT NULL,
            expires_at bigint NOT NULL, updated_at bigint NOT NULL)
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS liveroom_orders_request ON liveroom_orders (room_id, user_id, request_id)",
        "CREATE INDEX IF NOT EXISTS liveroom_orders_item ON liveroom_orders (room_id, item_number, user_id, state)",
        "CREATE INDEX IF NOT EXISTS liveroom_orders_expiry ON liveroom_orders (state, expires_at)",
        "CREATE INDEX IF NOT EXISTS liveroom_orders_room_time ON liveroom_orders (room_id, created_at)",
        """
        CREATE TABLE IF NOT EXISTS liveroom_pk_battles (
            battle_id text PRIMARY KEY, started_at bigint NOT NULL, ends_at bigint NOT NULL, ended_at bigint, winner_room_id text)
        """,
        "CREATE INDEX IF NOT EXISTS liveroom_pk_battles_unfinished ON liveroom_pk_battles (ended_at, ends_at)",
        """
        CREATE TABLE IF NOT EXISTS liveroom_pk_battle_sides (
            battle_id text NOT NULL REFERENCES liveroom_pk_battles ON DELETE CASCADE, position bigint NOT NULL, room_id text NOT NULL,
            user_id text NOT NULL, units bigint,
            PRIMARY KEY (battle_id, room_id))
        """,
        "CREATE INDEX IF NOT EXISTS liveroom_pk_battle_sides_room ON liveroom_pk_battle_sides (room_id)",
        """
        CREATE TABLE IF NOT EXISTS liveroom_pk_battle_amounts (
            battle_id text NOT NULL REFERENCES liveroom_pk_battles ON DELETE CASCADE, room_id text NOT NULL, currency text NOT NULL,
            amount_minor bigint NOT NULL,
            PRIMARY KEY (battle_id, room_id, currency))
        """,
        // Each webhook's exact signed body, kept until the receiver answered 2xx, with the node
        // that delivers it.
        """
        CREATE TABLE IF NOT EXISTS liveroom_webhooks (
            id bigserial PRIMARY KEY, node_id text NOT NULL, room_key text NOT NULL, body bytea NOT NULL, created_at bigint NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS liveroom_webhooks_node ON liveroom_webhooks (node_id, id)",
        // Room history: a room's lifetimes (each with the node that was its home) and sessions.
        """
        CREATE TABLE IF NOT EXISTS liveroom_room_history (
            id bigserial PRIMARY KEY, room_id text NOT NULL, node_id text NOT NULL, created_at bigint NOT NULL, dissolved_at bigint,
            dissolve_reason text)
        """,
        "CREATE INDEX IF NOT EXISTS liveroom_room_history_room ON liveroom_room_history (room_id, dissolved_at)",
        "CREATE INDEX IF NOT EXISTS liveroom_room_history_created ON liveroom_room_history (created_at)",
        """
        CREATE TABLE IF NOT EXISTS liveroom_room_sessions (
            id bigserial PRIMARY KEY, history_id bigint NOT NULL REFERENCES liveroom_room_history ON DELETE CASCADE, user_id text NOT NULL,
            role text NOT NULL, entered_at bigint NOT NULL, exited_at bigint, exit_reason text)
        """,
        "CREATE INDEX IF NOT EXISTS liveroom_room_sessions_history ON liveroom_room_sessions (history_id)",
    ]

    // MARK: Calls: bounded in time, one transaction each

    /// Runs `body` in a task of its own and answers within ``timeout``: past it the task is
    /// cancelled and the caller hears -7307 (the database may or may not have carried it out).
    func bounded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let timeout = self.timeout
        let answer = OneAnswer<T>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.set(continuation)
            let work = Task {
                do { _ = answer.finish(.success(try await body())) } catch { _ = answer.finish(.failure(error)) }
            }
            // The deadline is kept by an event loop's timer, not by a task in the shared pool:
            // when the pool is busy (a flash sale) a sleeping task wakes late, and so would the
            // answer. The timer ends the wait itself; the work is cancelled.
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            let timer = PostgresClient.defaultEventLoopGroup.any().scheduleTask(in: .nanoseconds(nanoseconds)) {
                if answer.finish(.failure(Self.noAnswer(timeout))) { work.cancel() }
            }
            Task {
                _ = await work.result
                timer.cancel()
            }
        }
    }

    static func noAnswer(_ timeout: Duration) -> LiveRoomError {
        LiveRoomError(
            ErrorCode.shopStoreNoAnswer,
            "the shop's database did not answer within \(timeout.components.seconds) s; the request may or may not have been carried out: "
                + "list again, and retry a purchase with the same requestId")
    }

    /// One transaction: committed when `body` returns, rolled back when it throws (its error
    /// is thrown as it is).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: self.logger)
            let value: T
            do {
                value = try await body(connection)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
            do {
                try await connection.query("COMMIT", logger: self.logger)
            } catch {
                // Whether the commit took effect is unknown: the client must not be told "nothing changed".
                throw LiveRoomError(
                    ErrorCode.shopStoreNoAnswer,
                    "the shop's database failed while committing (\(String(describing: error).prefix(200))); the request may or may not have "
                        + "been carried out: list again, and retry a purchase with the same requestId")
            }
            return value
        }
    }

    /// ``transaction(_:)`` within ``timeout``.
    func call<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await bounded { try await self.transaction(body) }
    }

    /// PostgreSQL text cannot hold NUL: such a string is refused with `code`, never cut.
    static func refuseNUL(_ strings: [String], code: Int, _ what: String) throws {
        if strings.contains(where: { $0.utf8.contains(0) }) {
            throw LiveRoomError(code, "\(what) must not contain NUL characters")
        }
    }

    // MARK: Rows

    static let productColumns = "item_number, title, price_minor, currency, item_url, image_url, stock, limit_per_user, on_shelf, version"
    static let replayColumns = "replay_id, room_id, item_number, user_id, codec, duration_ms, bytes, created_at"
    static let orderColumns = "order_id, room_id, item_number, user_id, quantity, amount_minor, currency, state, request_id, created_at, expires_at, updated_at"

    static func products(_ rows: PostgresRowSequence) async throws -> [Product] {
        var products: [Product] = []
        for try await (item, title, price, currency, itemURL, imageURL, stock, limit, onShelf, version) in rows.decode(
            (Int, String, Int64, String, String, String, Int, Int?, Bool, Int).self)
        {
            products.append(
                Product(
                    itemNumber: item, title: title, price: Money(minorUnits: price, currency: currency), itemUrl: itemURL, imageUrl: imageURL,
                    stock: stock, limitPerUser: limit, onShelf: onShelf, version: version))
        }
        return products
    }

    static func replays(_ rows: PostgresRowSequence) async throws -> [Replay] {
        var replays: [Replay] = []
        for try await (id, room, item, user, codec, duration, bytes, created) in rows.decode(
            (String, String, Int, String, String, Int64, Int64, Int64).self)
        {
            replays.append(
                Replay(replayId: id, roomId: room, itemNumber: item, userId: user, codec: codec, durationMs: duration, bytes: bytes, createdAt: created))
        }
        return replays
    }

    static func orders(_ rows: PostgresRowSequence) async throws -> [Order] {
        var orders: [Order] = []
        for try await (id, room, item, user, quantity, amount, currency, state, request, created, expires, updated) in rows.decode(
            (String, String, Int, String, Int, Int64, String, String, String?, Int64, Int64, Int64).self)
        {
            orders.append(
                Order(
                    orderId: id, roomId: room, itemNumber: item, userId: user, quantity: quantity, amount: Money(minorUnits: amount, currency: currency),
                    state: Order.State(rawValue: state) ?? .cancelled, requestId: request, createdAt: created, expiresAt: expires, updatedAt: updated))
        }
        return orders
    }

    func fetchProduct(_ itemNumber: Int, room: String, lock: Bool = false, _ connection: PostgresConnection) async throws -> Product? {
        let rows = try await connection.query(
            "SELECT \(unescaped: Self.productColumns) FROM liveroom_products WHERE room_id = \(room) AND item_number = \(itemNumber)\(unescaped: lock ? " FOR UPDATE" : "")",
            logger: logger)
        guard var product = try await Self.products(rows).first else { return nil }
        product.replays = try await replays(of: itemNumber, room: room, connection)
        return product
    }

    /// A product's replays, oldest first.
    func replays(of itemNumber: Int, room: String, _ connection: PostgresConnection) async throws -> [Replay] {
        try await Self.replays(
            try await connection.query(
                """
                SELECT \(unescaped: Self.replayColumns) FROM liveroom_replays WHERE room_id = \(room) AND item_number = \(itemNumber)
                ORDER BY created_at, replay_id
                """, logger: logger))
    }

    static func checkProduct(_ product: Product, room: String) throws {
        try refuseNUL([room, product.title, product.price.currency, product.itemUrl, product.imageUrl], code: ErrorCode.invalidProduct, "a product's fields")
    }
}

// MARK: Catalogue

extension PostgresShopStore: CatalogueStore {
    public func addProduct(_ product: Product, room: String) async throws -> Product {
        try Self.checkProduct(product, room: room)
        var stored = product
        stored.version = 1
        stored.replays = []
        let toStore = stored
        return try await call { connection -> Product in
            // The room's catalogue is counted with its rows locked against another add racing.
            _ = try await connection.query("SELECT pg_advisory_xact_lock(1600017, hashtext(\(room)))", logger: self.logger)
            var count = 0
            for try await n in try await connection.query("SELECT count(*) FROM liveroom_products WHERE room_id = \(room)", logger: self.logger)
                .decode(Int.self)
            { count = n }
            guard count < Product.maxPerRoom else {
                throw Product.catalogueFull
            }
            let p = toStore
            let inserted = try await connection.query(
                """
                INSERT INTO liveroom_products (room_id, item_number, title, price_minor, currency, item_url, image_url, stock, limit_per_user, on_shelf, version)
                VALUES (\(room), \(p.itemNumber), \(p.title), \(p.price.minorUnits), \(p.price.currency), \(p.itemUrl), \(p.imageUrl), \(p.stock),
                    \(p.limitPerUser), \(p.onShelf), 1)
                ON CONFLICT (room_id, item_number) DO NOTHING RETURNING item_number
                """, logger: self.logger)
            var added = false
            for try await _ in inserted.decode(Int.self) { added = true }
            guard added else { throw Product.alreadyInCatalogue(p.itemNumber) }
            return p
        }
    }

    public func replaceProduct(_ product: Product, room: String) async throws -> Product {
        try Self.checkProduct(product, room: room)
        return try await call { connection -> Product in
            let p = product
            // One conditional write: only the version the edit was based on is replaced.
            let updated = try await connection.query(
                """
                UPDATE liveroom_products SET title = \(p.title), price_minor = \(p.price.minorUnits), currency = \(p.price.currency),
                    item_url = \(p.itemUrl), image_url = \(p.imageUrl), stock = \(p.stock), limit_per_user = \(p.limitPerUser), on_shelf = \(p.onShelf),
                    version = version + 1
                WHERE room_id = \(room) AND item_number = \(p.itemNumber) AND version = \(p.version)
                RETURNING item_number
                """, logger: self.logger)
            var replaced = false
            for try await _ in updated.decode(Int.self) { replaced = true }
            guard replaced else {
                guard let current = try await self.fetchProduct(p.itemNumber, room: room, connection) else { throw Purchase.productNotFound(p.itemNumber) }
                throw Product.versionConflict(p.itemNumber, stored: current.version, given: p.version)
            }
            return try await self.fetchProduct(p.itemNumber, room: room, connection)!
        }
    }

    @discardableResult
    public func removeProduct(_ itemNumber: Int, room: String) async throws -> [Replay] {
        try Self.refuseNUL([room], code: ErrorCode.invalidProduct, "a room id")
        return try await call { connection -> [Replay] in
            var removed = false
            for try await _ in try await connection.query(
                "DELETE FROM liveroom_products WHERE room_id = \(room) AND item_number = \(itemNumber) RETURNING item_number", logger: self.logger
            ).decode(Int.self) { removed = true }
            guard removed else { throw Purchase.productNotFound(itemNumber) }
            let replays = try await Self.replays(
                try await connection.query(
                    "DELETE FROM liveroom_replays WHERE room_id = \(room) AND item_number = \(itemNumber) RETURNING \(unescaped: Self.replayColumns)",
                    logger: self.logger)
            ).sorted { ($0.createdAt, $0.replayId) < ($1.createdAt, $1.replayId) }
            // Its reservations go with it, so a product added later under the same number never
            // gets their stock back.
            try await connection.query(
                "UPDATE liveroom_orders SET state = 'cancelled' WHERE room_id = \(room) AND item_number = \(itemNumber) AND state = 'reserved'",
                logger: self.logger)
            return replays
        }
    }

    public func product(_ itemNumber: Int, room: String) async throws -> Product? {
        guard !room.utf8.contains(0) else { return nil }
        return try await call { connection in try await self.fetchProduct(itemNumber, room: room, connection) }
    }

    public func products(room: String) async throws -> [Product] {
        guard !room.utf8.contains(0) else { return [] }
        return try await call { connection -> [Product] in
            let replays = Dictionary(
                grouping: try await Self.replays(
                    try await connection.query(
                        "SELECT \(unescaped: Self.replayColumns) FROM liveroom_replays WHERE room_id = \(room) ORDER BY created_at, replay_id LIMIT \(Self.maxRows)",
                        logger: self.logger)),
                by: \.itemNumber)
            return try await Self.products(
                try await connection.query(
                    "SELECT \(unescaped: Self.productColumns) FROM liveroom_products WHERE room_id = \(room) ORDER BY item_number LIMIT \(Self.maxRows)",
                    logger: self.logger)
            ).map { product in
                var product = product
                product.replays = replays[product.itemNumber] ?? []
                return product
            }
        }
    }

    public func addReplay(_ replay: Replay, keep: Int) async throws -> (product: Product, dropped: [Replay]) {
        try Self.refuseNUL([replay.replayId, replay.roomId, replay.userId, replay.codec], code: ErrorCode.invalidParameter, "a replay's fields")
        let nodeId = self.nodeId
        let result = try await call { connection -> ProductAndReplays in
            let r = replay
            // The product's row is locked, so two replays added at once keep `keep` between them.
            guard try await self.fetchProduct(r.itemNumber, room: r.roomId, lock: true, connection) != nil else {
                throw Purchase.productNotFound(r.itemNumber)
            }
            try await connection.query(
                """
                INSERT INTO liveroom_replays (replay_id, room_id, item_number, user_id, codec, duration_ms, bytes, created_at, node_id)
                VALUES (\(r.replayId), \(r.roomId), \(r.itemNumber), \(r.userId), \(r.codec), \(r.durationMs), \(r.bytes), \(r.createdAt), \(nodeId))
                """, logger: self.logger)
            let all = try await self.replays(of: r.itemNumber, room: r.roomId, connection)
            let dropped = Array(all.dropLast(max(keep, 0)))
            let ids = dropped.map(\.replayId)
            if !ids.isEmpty { try await connection.query("DELETE FROM liveroom_replays WHERE replay_id = ANY(\(ids))", logger: self.logger) }
            return ProductAndReplays(product: try await self.fetchProduct(r.itemNumber, room: r.roomId, connection)!, replays: dropped)
        }
        return (result.product, result.replays)
    }

    public func removeReplay(_ replayId: String, room: String) async throws -> (replay: Replay, product: Product) {
        guard !replayId.utf8.contains(0), !room.utf8.contains(0) else {
            throw Replay.notFound(replayId)
        }
        let result = try await call { connection -> ProductAndReplays in
            guard
                let replay = try await Self.replays(
                    try await connection.query(
                        "DELETE FROM liveroom_replays WHERE replay_id = \(replayId) AND room_id = \(room) RETURNING \(unescaped: Self.replayColumns)",
                        logger: self.logger)
                ).first
            else { throw Replay.notFound(replayId) }
            guard let product = try await self.fetchProduct(replay.itemNumber, room: room, connection) else {
                throw Purchase.productNotFound(replay.itemNumber)
            }
            return ProductAndReplays(product: product, replays: [replay])
        }
        return (result.replays[0], result.product)
    }

    public func replay(_ replayId: String) async throws -> Replay? {
        try await replayAndNode(replayId)?.replay
    }

    /// A replay by id and the node that holds its file.
    public func replayAndNode(_ replayId: String) async throws -> (replay: Replay, nodeId: String)? {
        guard !replayId.utf8.contains(0) else { return nil }
        let found = try await call { connection -> ReplayAndNode? in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.replayColumns), node_id FROM liveroom_replays WHERE replay_id = \(replayId)", logger: self.logger)
            for try await (id, room, item, user, codec, duration, bytes, created, node) in rows.decode(
                (String, String, Int, String, String, Int64, Int64, Int64, String).self)
            {
                return ReplayAndNode(
                    replay: Replay(
                        replayId: id, roomId: room, itemNumber: item, userId: user, codec: codec, durationMs: duration, bytes: bytes, createdAt: created),
                    nodeId: node)
            }
            return nil
        }
        return found.map { ($0.replay, $0.nodeId) }
    }

    /// The file names of this node's replays (the files in its replay directory); other nodes'
    /// replays have their files elsewhere.
    public func replayFileNames() async throws -> Set<String> {
        let nodeId = self.nodeId
        return try await call { connection -> Set<String> in
            Set(
                try await Self.replays(
                    try await connection.query(
                        "SELECT \(unescaped: Self.replayColumns) FROM liveroom_replays WHERE node_id = \(nodeId) LIMIT \(Self.maxRows)", logger: self.logger)
                ).map(\.fileName))
        }
    }

    public func setPopUp(_ popUp: PopUp?, room: String) async throws {
        if let popUp { try Self.refuseNUL([room, popUp.userId, popUp.data], code: ErrorCode.invalidParameter, "a pop-up's fields") }
        try await call { connection -> Void in
            if let popUp {
                try await connection.query(
                    """
                    INSERT INTO liveroom_popups (room_id, item_number, user_id, data, popped_at)
                    VALUES (\(room), \(popUp.itemNumber), \(popUp.userId), \(popUp.data), \(popUp.poppedAt))
                    ON CONFLICT (room_id) DO UPDATE SET item_number = EXCLUDED.item_number, user_id = EXCLUDED.user_id, data = EXCLUDED.data,
                        popped_at = EXCLUDED.popped_at
                    """, logger: self.logger)
            } else {
                try await connection.query("DELETE FROM liveroom_popups WHERE room_id = \(room)", logger: self.logger)
            }
        }
    }

    public func shopOwners(room: String) async throws -> [String] {
        guard !room.utf8.contains(0) else { return [] }
        return try await call { connection in try await self.owners(room, connection) }
    }

    public func claimShop(room: String, userId: String) async throws -> [String] {
        let owners = try ShopOwners.check([userId])
        try Self.refuseNUL([room], code: ErrorCode.invalidParameter, "a room id")
        return try await transaction { connection in
            // One claim at a time per room, on any node: the lock ends with the transaction.
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(room)))", logger: self.logger)
            if try await self.owners(room, connection).isEmpty {
                try await connection.query("INSERT INTO liveroom_shop_owners (room_id, user_id) VALUES (\(room), \(owners[0]))", logger: self.logger)
            }
            return try await self.owners(room, connection)
        }
    }

    public func setShopOwners(_ owners: [String], room: String) async throws -> [String] {
        let owners = try ShopOwners.check(owners)
        try Self.refuseNUL([room], code: ErrorCode.invalidParameter, "a room id")
        return try await transaction { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(room)))", logger: self.logger)
            try await connection.query("DELETE FROM liveroom_shop_owners WHERE room_id = \(room)", logger: self.logger)
            for userId in owners {
                try await connection.query("INSERT INTO liveroom_shop_owners (room_id, user_id) VALUES (\(room), \(userId))", logger: self.logger)
            }
            return owners
        }
    }

    private func owners(_ room: String, _ connection: PostgresConnection) async throws -> [String] {
        let rows = try await connection.query(
            "SELECT user_id FROM liveroom_shop_owners WHERE room_id = \(room) ORDER BY user_id LIMIT \(ShopOwners.maxPerRoom)", logger: logger)
        var owners: [String] = []
        for try await userId in rows.decode(String.self) { owners.append(userId) }
        return owners
    }

    public func popUp(room: String) async throws -> PopUp? {
        guard !room.utf8.contains(0) else { return nil }
        return try await call { connection -> PopUp? in
            let rows = try await connection.query(
                "SELECT item_number, user_id, data, popped_at FROM liveroom_popups WHERE room_id = \(room)", logger: self.logger)
            for try await (item, user, data, at) in rows.decode((Int, String, String, Int64).self) {
                return PopUp(itemNumber: item, userId: user, data: data, poppedAt: at)
            }
            return nil
        }
    }
}

/// Results carried out of a transaction (tuples are not Sendable).
struct ProductAndReplays: Sendable {
    var product: Product
    var replays: [Replay]
}

struct ReplayAndNode: Sendable {
    var replay: Replay
    var nodeId: String
}

struct OrderAndProduct: Sendable {
    var order: Order
    var product: Product?
    var repeated = false
}

/// A purchase rolled back because an identical request stored its order first.
struct RepeatedRequest: Error {}

// MARK: Orders

extension PostgresShopStore: OrderStore {
    public func buy(
        itemNumber: Int, quantity: Int, userId: String, requestId: String?, room: String, now: Int64, reservation: Duration
    ) async throws -> (order: Order, product: Product, repeated: Bool) {
        try Purchase.check(quantity: quantity, requestId: requestId)
        try Self.refuseNUL([userId, room, requestId ?? ""], code: ErrorCode.invalidPurchase, "a purchase's user, room and requestId")
        let reservationMs = reservation.components.seconds * 1000 + reservation.components.attoseconds / 1_000_000_000_000_000
        let result = try await bounded {
            do {
                return try await self.transaction { connection -> OrderAndProduct in
                    if let requestId, let repeated = try await self.repeatedOrder(requestId, userId: userId, room: room, connection) {
                        return repeated
                    }
                    // The one conditional write that takes the stock: buyers on every node
                    // queue on the product's row, and none takes what is not there.
                    let taken = try await Self.products(
                        try await connection.query(
                            """
                            UPDATE liveroom_products SET stock = stock - \(quantity), version = version + 1
                            WHERE room_id = \(room) AND item_number = \(itemNumber) AND on_shelf AND stock >= \(quantity)
                            RETURNING \(unescaped: Self.productColumns)
                            """, logger: self.logger))
                    guard var product = taken.first else {
                        // Nothing taken: say why, in the SQLite store's order.
                        let product = try Purchase.offered(try await self.fetchProduct(itemNumber, room: room, connection), itemNumber: itemNumber)
                        try await self.checkLimit(product, quantity: quantity, userId: userId, room: room, connection)
                        try Purchase.checkStock(product.stock, quantity: quantity, itemNumber: itemNumber)
                        throw Purchase.soldOut(itemNumber)
                    }
                    // Counted while the product's row is locked (by the update): this buyer's
                    // other purchases of it are committed or wait behind this one.
                    try await self.checkLimit(product, quantity: quantity, userId: userId, room: room, connection)
                    product.replays = try await self.replays(of: itemNumber, room: room, connection)
                    let order = Order(
                        orderId: Self.newOrderId(), roomId: room, itemNumber: itemNumber, userId: userId, quantity: quantity,
                        amount: Money(minorUnits: product.price.minorUnits * Int64(quantity), currency: product.price.currency), state: .reserved,
                        requestId: requestId, createdAt: now, expiresAt: now + reservationMs, updatedAt: now)
                    let inserted = try await connection.query(
                        """
                        INSERT INTO liveroom_orders (order_id, room_id, item_number, user_id, quantity, amount_minor, currency, state, request_id,
                            created_at, expires_at, updated_at)
                        VALUES (\(order.orderId), \(room), \(itemNumber), \(userId), \(quantity), \(order.amount.minorUnits), \(order.amount.currency),
                            'reserved', \(requestId), \(now), \(order.expiresAt), \(now))
                        ON CONFLICT (room_id, user_id, request_id) DO NOTHING RETURNING order_id
                        """, logger: self.logger)
                    var stored = false
                    for try await _ in inserted.decode(String.self) { stored = true }
                    // The same request committed its order meanwhile: give this stock back.
                    guard stored else { throw RepeatedRequest() }
                    return OrderAndProduct(order: order, product: product)
                }
            } catch is RepeatedRequest {
                return try await self.transaction { connection -> OrderAndProduct in
                    guard let requestId, let repeated = try await self.repeatedOrder(requestId, userId: userId, room: room, connection) else {
                        throw LiveRoomError(ErrorCode.catalogueUnavailable, "the request's order could not be read back")
                    }
                    return repeated
                }
            }
        }
        guard let product = result.product else { throw Purchase.productNotFound(result.order.itemNumber) }
        return (result.order, product, result.repeated)
    }

    /// The order a request stored before, with its product now.
    func repeatedOrder(_ requestId: String, userId: String, room: String, _ connection: PostgresConnection) async throws -> OrderAndProduct? {
        guard
            let order = try await Self.orders(
                try await connection.query(
                    """
                    SELECT \(unescaped: Self.orderColumns) FROM liveroom_orders WHERE room_id = \(room) AND user_id = \(userId) AND request_id = \(requestId)
                    """, logger: logger)
            ).first
        else { return nil }
        guard let product = try await fetchProduct(order.itemNumber, room: room, connection) else { throw Purchase.productNotFound(order.itemNumber) }
        return OrderAndProduct(order: order, product: product, repeated: true)
    }

    func checkLimit(_ product: Product, quantity: Int, userId: String, room: String, _ connection: PostgresConnection) async throws {
        guard product.limitPerUser != nil else { return }
        var held = 0
        for try await n in try await connection.query(
            """
            SELECT COALESCE(SUM(quantity), 0)::bigint FROM liveroom_orders
            WHERE room_id = \(room) AND item_number = \(product.itemNumber) AND user_id = \(userId) AND state IN ('reserved', 'paid')
            """, logger: logger
        ).decode(Int.self) { held = n }
        try Purchase.checkLimit(product, quantity: quantity, held: held)
    }

    public func orders(of itemNumber: Int, room: String, atMost: Int) async throws -> (product: Product?, orders: [Order])? {
        guard !room.utf8.contains(0) else { return (nil, []) }
        return try await call { connection -> (product: Product?, orders: [Order])? in
            let orders = try await Self.orders(
                try await connection.query(
                    """
                    SELECT \(unescaped: Self.orderColumns) FROM liveroom_orders WHERE room_id = \(room) AND item_number = \(itemNumber) LIMIT \(atMost + 1)
                    """, logger: self.logger))
            guard orders.count <= atMost else { return nil }
            return (try await self.fetchProduct(itemNumber, room: room, connection), orders)
        }
    }

    public func order(_ orderId: String) async throws -> Order? {
        guard !orderId.utf8.contains(0) else { return nil }
        return try await call { connection -> Order? in
            try await Self.orders(
                try await connection.query("SELECT \(unescaped: Self.orderColumns) FROM liveroom_orders WHERE order_id = \(orderId)", logger: self.logger)
            ).first
        }
    }

    public func orders(room: String, state: Order.State?, offset: Int, limit: Int) async throws -> (total: Int, orders: [Order]) {
        guard !room.utf8.contains(0) else { return (0, []) }
        let limit = min(max(limit, 0), Self.maxRows)
        let offset = max(offset, 0)
        let page = try await call { connection -> OrdersPage in
            let filter: PostgresQuery
            if let state {
                filter = "SELECT count(*) FROM liveroom_orders WHERE room_id = \(room) AND state = \(state.rawValue)"
            } else {
                filter = "SELECT count(*) FROM liveroom_orders WHERE room_id = \(room)"
            }
            var total = 0
            for try await n in try await connection.query(filter, logger: self.logger).decode(Int.self) { total = n }
            let rows: PostgresRowSequence
            if let state {
                rows = try await connection.query(
                    """
                    SELECT \(unescaped: Self.orderColumns) FROM liveroom_orders WHERE room_id = \(room) AND state = \(state.rawValue)
                    ORDER BY created_at DESC, order_id LIMIT \(limit) OFFSET \(offset)
                    """, logger: self.logger)
            } else {
                rows = try await connection.query(
                    """
                    SELECT \(unescaped: Self.orderColumns) FROM liveroom_orders WHERE room_id = \(room)
                    ORDER BY created_at DESC, order_id LIMIT \(limit) OFFSET \(offset)
                    """, logger: self.logger)
            }
            return OrdersPage(total: total, orders: try await Self.orders(rows))
        }
        return (page.total, page.orders)
    }

    public func settle(orderId: String, to state: Order.State, now: Int64) async throws -> (order: Order, product: Product?) {
        precondition(state == .paid || state == .cancelled, "orders are settled as paid or cancelled")
        guard !orderId.utf8.contains(0) else { throw Order.notFound(orderId) }
        let result = try await call { connection -> OrderAndProduct in
            // Only a reserved order moves: of two nodes settling (or expiring) it at once, one does.
            guard
                let order = try await Self.orders(
                    try await connection.query(
                        """
                        UPDATE liveroom_orders SET state = \(state.rawValue), updated_at = \(now) WHERE order_id = \(orderId) AND state = 'reserved'
                        RETURNING \(unescaped: Self.orderColumns)
                        """, logger: self.logger)
                ).first
            else {
                guard
                    let order = try await Self.orders(
                        try await connection.query("SELECT \(unescaped: Self.orderColumns) FROM liveroom_orders WHERE order_id = \(orderId)", logger: self.logger)
                    ).first
                else { throw Order.notFound(orderId) }
                throw Order.notReserved(order)
            }
            guard state == .cancelled else { return OrderAndProduct(order: order, product: nil) }
            return OrderAndProduct(order: order, product: try await self.returnStock(of: order, connection))
        }
        return (result.order, result.product)
    }

    /// How late a reservation of a room homed on another node is expired here: its home
    /// expires it on time (and its clients hear the stock come back); past this the home is
    /// taken to be gone (or the room empty) and any node does it.
    public static let foreignExpiryGraceMs: Int64 = 10_000

    public func expireOrders(now: Int64) async throws -> [(room: String, product: Product, order: Order)] {
        let nodeId = self.nodeId
        let late = now - Self.foreignExpiryGraceMs
        let returned = try await call { connection -> [OrderAndProduct] in
            // Rows another node is expiring right now are skipped (it returns their stock), and
            // the state is checked again as it is written: each order's stock comes back once.
            // A node expires its own rooms' reservations on time, other rooms' ones late.
            let expired = try await Self.orders(
                try await connection.query(
                    """
                    UPDATE liveroom_orders SET state = 'expired', updated_at = \(now)
                    WHERE order_id IN (
                        SELECT o.order_id FROM liveroom_orders o WHERE o.state = 'reserved' AND o.expires_at <= \(now)
                        AND (o.expires_at <= \(late)
                            OR EXISTS (SELECT 1 FROM liveroom_rooms r WHERE r.room_key = o.room_id AND r.home_node = \(nodeId)))
                        ORDER BY o.expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED)
                    AND state = 'reserved'
                    RETURNING \(unescaped: Self.orderColumns)
                    """, logger: self.logger))
            var returned: [OrderAndProduct] = []
            for order in expired.sorted(by: { ($0.expiresAt, $0.orderId) < ($1.expiresAt, $1.orderId) }) {
                if let product = try await self.returnStock(of: order, connection) { returned.append(OrderAndProduct(order: order, product: product)) }
            }
            return returned
        }
        return returned.map { ($0.order.roomId, $0.product!, $0.order) }
    }

    /// Puts an order's quantity back on its product (if it still exists).
    func returnStock(of order: Order, _ connection: PostgresConnection) async throws -> Product? {
        try await connection.query(
            """
            UPDATE liveroom_products SET stock = stock + \(order.quantity), version = version + 1
            WHERE room_id = \(order.roomId) AND item_number = \(order.itemNumber)
            """, logger: logger)
        return try await fetchProduct(order.itemNumber, room: order.roomId, connection)
    }

    static func newOrderId() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// A continuation resumed once, by whichever of the work and the timer comes first.
final class OneAnswer<T: Sendable>: Sendable {
    private let state = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0 = continuation } }

    /// Resumes the continuation unless it was resumed before; returns whether it did.
    func finish(_ result: Result<T, any Error>) -> Bool {
        guard let continuation = state.withLock({ value -> CheckedContinuation<T, any Error>? in
            defer { value = nil }
            return value
        }) else { return false }
        continuation.resume(with: result)
        return true
    }
}

struct OrdersPage: Sendable {
    var total: Int
    var orders: [Order]
}

// MARK: Battles

extension PostgresShopStore: BattleStore {
    public func startBattle(_ battle: PKBattle) async throws {
        precondition(battle.endedAt == nil && battle.results == nil && battle.winnerRoomId == nil, "a battle starts without a result")
        try battle.checkNew()
        try Self.refuseNUL([battle.battleId] + battle.rooms.flatMap { [$0.roomId, $0.userId] }, code: ErrorCode.invalidParameter, "a battle's ids")
        try await call { connection -> Void in
            var inserted = false
            for try await _ in try await connection.query(
                """
                INSERT INTO liveroom_pk_battles (battle_id, started_at, ends_at) VALUES (\(battle.battleId), \(battle.startedAt), \(battle.endsAt))
                ON CONFLICT (battle_id) DO NOTHING RETURNING battle_id
                """, logger: self.logger
            ).decode(String.self) { inserted = true }
            guard inserted else { throw PKBattle.alreadyExists(battle.battleId) }
            for (position, side) in battle.rooms.enumerated() {
                try await connection.query(
                    """
                    INSERT INTO liveroom_pk_battle_sides (battle_id, position, room_id, user_id)
                    VALUES (\(battle.battleId), \(position), \(side.roomId), \(side.userId))
                    """, logger: self.logger)
            }
        }
    }

    public func sales(room: String, from: Int64, to: Int64) async throws -> PKBattle.Score {
        guard !room.utf8.contains(0) else { return PKBattle.Score(roomId: room, units: 0, amounts: [:]) }
        return try await call { connection in try await self.sales(room: room, from: from, to: to, connection) }
    }

    func sales(room: String, from: Int64, to: Int64, _ connection: PostgresConnection) async throws -> PKBattle.Score {
        let rows = try await connection.query(
            """
            SELECT currency, SUM(quantity)::bigint, SUM(amount_minor)::bigint FROM liveroom_orders
            WHERE room_id = \(room) AND created_at >= \(from) AND created_at < \(to) AND state IN ('reserved', 'paid') GROUP BY currency
            """, logger: logger)
        var score = PKBattle.Score(roomId: room, units: 0, amounts: [:])
        for try await (currency, units, amount) in rows.decode((String, Int, Int64).self) {
            score.units += units
            score.amounts[currency] = amount
        }
        return score
    }

    public func finishBattle(_ battleId: String, endedAt: Int64) async throws -> PKBattle {
        guard !battleId.utf8.contains(0) else { throw PKBattle.notFound(battleId) }
        return try await call { connection -> PKBattle in
            // Locked: two nodes finishing it at once store one result.
            guard var battle = try await self.storedBattle(battleId, lock: true, connection) else { throw PKBattle.notFound(battleId) }
            guard !battle.isFinished else { return battle }
            let to = max(battle.startedAt, min(battle.endsAt, endedAt))
            var results: [PKBattle.Score] = []
            for side in battle.rooms { results.append(try await self.sales(room: side.roomId, from: battle.startedAt, to: to, connection)) }
            battle.endedAt = endedAt
            battle.results = results
            battle.winnerRoomId = PKBattle.winner(of: results)
            try await connection.query(
                "UPDATE liveroom_pk_battles SET ended_at = \(endedAt), winner_room_id = \(battle.winnerRoomId) WHERE battle_id = \(battleId)",
                logger: self.logger)
            for score in results {
                try await connection.query(
                    "UPDATE liveroom_pk_battle_sides SET units = \(score.units) WHERE battle_id = \(battleId) AND room_id = \(score.roomId)",
                    logger: self.logger)
                for (currency, amount) in score.amounts {
                    try await connection.query(
                        """
                        INSERT INTO liveroom_pk_battle_amounts (battle_id, room_id, currency, amount_minor)
                        VALUES (\(battleId), \(score.roomId), \(currency), \(amount))
                        """, logger: self.logger)
                }
            }
            return battle
        }
    }

    public func battle(_ battleId: String) async throws -> PKBattle? {
        guard !battleId.utf8.contains(0) else { return nil }
        return try await call { connection in try await self.storedBattle(battleId, connection) }
    }

    public func battles(room: String, limit: Int) async throws -> [PKBattle] {
        guard !room.utf8.contains(0) else { return [] }
        let limit = min(max(limit, 0), Self.maxRows)
        return try await call { connection -> [PKBattle] in
            var ids: [String] = []
            for try await id in try await connection.query(
                """
                SELECT b.battle_id FROM liveroom_pk_battles b JOIN liveroom_pk_battle_sides s ON s.battle_id = b.battle_id
                WHERE s.room_id = \(room) ORDER BY b.started_at DESC, b.battle_id LIMIT \(limit)
                """, logger: self.logger
            ).decode(String.self) { ids.append(id) }
            var battles: [PKBattle] = []
            for id in ids { if let battle = try await self.storedBattle(id, connection) { battles.append(battle) } }
            return battles
        }
    }

    public func unfinishedBattles() async throws -> [PKBattle] {
        try await call { connection -> [PKBattle] in
            var ids: [String] = []
            for try await id in try await connection.query(
                "SELECT battle_id FROM liveroom_pk_battles WHERE ended_at IS NULL ORDER BY ends_at, battle_id LIMIT \(Self.maxRows)", logger: self.logger
            ).decode(String.self) { ids.append(id) }
            var battles: [PKBattle] = []
            for id in ids { if let battle = try await self.storedBattle(id, connection) { battles.append(battle) } }
            return battles
        }
    }

    func storedBattle(_ battleId: String, lock: Bool = false, _ connection: PostgresConnection) async throws -> PKBattle? {
        var found: (Int64, Int64, Int64?, String?)?
        for try await row in try await connection.query(
            """
            SELECT started_at, ends_at, ended_at, winner_room_id FROM liveroom_pk_battles WHERE battle_id = \(battleId)\(unescaped: lock ? " FOR UPDATE" : "")
            """, logger: logger
        ).decode((Int64, Int64, Int64?, String?).self) { found = row }
        guard let (startedAt, endsAt, endedAt, winner) = found else { return nil }
        var sides: [(roomId: String, userId: String, units: Int?)] = []
        for try await (room, user, units) in try await connection.query(
            "SELECT room_id, user_id, units FROM liveroom_pk_battle_sides WHERE battle_id = \(battleId) ORDER BY position", logger: logger
        ).decode((String, String, Int?).self) { sides.append((room, user, units)) }
        var battle = PKBattle(
            battleId: battleId, rooms: sides.map { PKBattle.Side(roomId: $0.roomId, userId: $0.userId) }, startedAt: startedAt, endsAt: endsAt,
            endedAt: endedAt, winnerRoomId: winner)
        guard battle.isFinished else { return battle }
        var amounts: [String: [String: Int64]] = [:]
        for try await (room, currency, amount) in try await connection.query(
            "SELECT room_id, currency, amount_minor FROM liveroom_pk_battle_amounts WHERE battle_id = \(battleId)", logger: logger
        ).decode((String, String, Int64).self) { amounts[room, default: [:]][currency] = amount }
        battle.results = sides.map { PKBattle.Score(roomId: $0.roomId, units: $0.units ?? 0, amounts: amounts[$0.roomId] ?? [:]) }
        return battle
    }
}
