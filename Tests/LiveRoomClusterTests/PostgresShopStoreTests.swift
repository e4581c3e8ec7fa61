import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomStore
import Logging
import PostgresNIO
import PostgresTestSupport
import ShopStoreChecks
import TestTools
import Testing

import LiveRoomCluster
@testable import LiveRoomPostgres
import LiveRoomWebhooks

/// The PostgreSQL shop store against a real PostgreSQL server: the checks every shop store
/// passes, and what only a store shared by several nodes must do.
@Suite(.requires(.postgreSQL), .serialized, .timeLimit(.minutes(4))) struct PostgresShopStoreTests {
    let logger = Logger(label: "shop-test")

    /// Starts PostgreSQL, makes the cluster's tables (the outbox needs `liveroom_nodes`), runs `body`, stops it.
    func withDatabase(_ body: (ClusterDatabaseURL, PostgresClusterStore) async throws -> Void) async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let url = try ClusterDatabaseURL(database.url)
        let cluster = PostgresClusterStore(url: url, logger: logger)
        let pool = Task { await cluster.run() }
        defer { pool.cancel() }
        try await cluster.prepare()
        try await body(url, cluster)
    }

    /// A store for node `nodeId` with its pool running and its tables made, for `body`.
    func withStore<T>(
        _ url: ClusterDatabaseURL, nodeId: String = "n1", timeout: Duration = .seconds(20), _ body: (PostgresShopStore) async throws -> T
    ) async throws -> T {
        let store = PostgresShopStore(url: url, nodeId: nodeId, timeout: timeout, logger: logger)
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        try await store.prepare()
        // A second prepare (another node starting) finds the tables there.
        try await store.prepare()
        return try await body(store)
    }

    @Test func theChecksEveryShopStorePasses() async throws {
        try await withDatabase { url, cluster in
            // The checks' rooms are homed on this store's node, which expires their orders on time.
            for room in ["shop", "*7", "big", "small", "other", "a", "b", "c", "z"] { _ = try await cluster.claim(roomKey: room, candidate: "n1") }
            try await withStore(url) { store in
                for (name, check) in ShopStoreChecks.all {
                    // Each check starts from empty tables.
                    try await store.client.query(
                        """
                        DROP TABLE IF EXISTS liveroom_products, liveroom_popups, liveroom_replays, liveroom_orders, liveroom_pk_battle_amounts,
                            liveroom_pk_battle_sides, liveroom_pk_battles, liveroom_shop_owners CASCADE
                        """)
                    try await store.prepare()
                    do {
                        try await check(store)
                    } catch {
                        Issue.record("\(name): \(error)")
                    }
                }
            }
        }
    }

    static let tea = Product(itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 10)

    @Test func fiftyBuyersOnThreeNodesSellExactlyTheStock() async throws {
        try await withDatabase { url, _ in
            try await withStore(url, nodeId: "n1") { n1 in
                try await withStore(url, nodeId: "n2") { n2 in
                    try await withStore(url, nodeId: "n3") { n3 in
                        _ = try await n1.addProduct(Self.tea, room: "flash")
                        let nodes = [n1, n2, n3]
                        let codes = await withTaskGroup(of: Int.self) { group in
                            for n in 0..<50 {
                                group.addTask {
                                    await ShopStoreChecks.code {
                                        _ = try await nodes[n % 3].buy(
                                            itemNumber: 1, quantity: 1, userId: "buyer\(n)", requestId: "r\(n)", room: "flash", now: 1_000,
                                            reservation: .seconds(60))
                                    } ?? 0
                                }
                            }
                            return await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                        }
                        #expect(codes == [0: 10, ErrorCode.soldOut: 40], "\(codes)")
                        #expect(try await n2.product(1, room: "flash")?.stock == 0)
                        let orders = try await n3.orders(room: "flash", state: nil, offset: 0, limit: 100)
                        #expect(orders.total == 10 && Set(orders.orders.map(\.userId)).count == 10)
                    }
                }
            }
        }
    }

    @Test func oneRequestRacingOnTwoNodesMakesOneOrder() async throws {
        try await withDatabase { url, _ in
            try await withStore(url, nodeId: "n1") { n1 in
                try await withStore(url, nodeId: "n2") { n2 in
                    var product = Self.tea
                    product.stock = 100
                    _ = try await n1.addProduct(product, room: "shop")
                    let nodes = [n1, n2]
                    let answers = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                        for n in 0..<20 {
                            group.addTask {
                                let answer = try await nodes[n % 2].buy(
                                    itemNumber: 1, quantity: 3, userId: "fan", requestId: "same", room: "shop", now: 1_000, reservation: .seconds(60))
                                return (answer.order.orderId, answer.repeated)
                            }
                        }
                        return try await group.reduce(into: [(String, Bool)]()) { $0.append($1) }
                    }
                    #expect(Set(answers.map(\.0)).count == 1)
                    #expect(answers.filter { !$0.1 }.count == 1, "one answer made it, the others repeat it")
                    #expect(try await n2.product(1, room: "shop")?.stock == 97)
                }
            }
        }
    }

    @Test func twoNodesExpiringAtOnceReturnEachOrdersStockOnce() async throws {
        try await withDatabase { url, cluster in
            _ = try await cluster.claim(roomKey: "shop", candidate: "n1")
            try await withStore(url, nodeId: "n1") { n1 in
                try await withStore(url, nodeId: "n2") { n2 in
                    var product = Self.tea
                    product.stock = 1_000
                    _ = try await n1.addProduct(product, room: "shop")
                    for n in 0..<200 {
                        _ = try await (n % 2 == 0 ? n1 : n2).buy(
                            itemNumber: 1, quantity: 1, userId: "u\(n)", requestId: nil, room: "shop", now: 1_000, reservation: .seconds(60))
                    }
                    #expect(try await n1.product(1, room: "shop")?.stock == 800)
                    // The room's home (n1) expires its reservations on time; another node only
                    // once they are overdue by the grace.
                    #expect(try await n2.expireOrders(now: 61_000 + PostgresShopStore.foreignExpiryGraceMs - 1).isEmpty)
                    let nodes = [n1, n2]
                    let expired = try await withThrowingTaskGroup(of: [String].self) { group in
                        for n in 0..<6 {
                            group.addTask { try await nodes[n % 2].expireOrders(now: 100_000).map(\.order.orderId) }
                        }
                        return try await group.reduce(into: [String]()) { $0 += $1 }
                    }
                    #expect(expired.count == 200 && Set(expired).count == 200, "\(expired.count) expiries")
                    #expect(try await n2.product(1, room: "shop")?.stock == 1_000)
                    #expect(try await n1.orders(room: "shop", state: .expired, offset: 0, limit: 1).total == 200)
                }
            }
        }
    }

    @Test func hostileStringsAreStoredAsGivenOrRefusedWithACode() async throws {
        try await withDatabase { url, _ in
            try await withStore(url) { store in
                let room = "x'); DROP TABLE liveroom_products; --"
                var product = Self.tea
                product.title = "it's \"quoted\" \\ back; -- " + String(repeating: "長", count: 3_500)
                product.itemUrl = "https://s/?q='1'"
                _ = try await store.addProduct(product, room: room)
                #expect(try await store.product(1, room: room)?.title == product.title)
                #expect(try await store.products(room: room).first?.itemUrl == product.itemUrl)
                let order = try await store.buy(
                    itemNumber: 1, quantity: 1, userId: "o'brien", requestId: "'; --", room: room, now: 1, reservation: .seconds(1)).order
                #expect(try await store.order(order.orderId)?.userId == "o'brien")

                var nul = Self.tea
                nul.itemNumber = 2
                nul.title = "tea\u{0}"
                #expect(await ShopStoreChecks.code { _ = try await store.addProduct(nul, room: room) } == ErrorCode.invalidProduct)
                #expect(await ShopStoreChecks.code { _ = try await store.addProduct(Self.tea, room: "a\u{0}") } == ErrorCode.invalidProduct)
                #expect(
                    await ShopStoreChecks.code {
                        _ = try await store.buy(itemNumber: 1, quantity: 1, userId: "u\u{0}", requestId: nil, room: room, now: 1, reservation: .seconds(1))
                    } == ErrorCode.invalidPurchase)
                #expect(
                    await ShopStoreChecks.code {
                        _ = try await store.buy(itemNumber: 1, quantity: 1, userId: "u", requestId: "\u{0}", room: room, now: 1, reservation: .seconds(1))
                    } == ErrorCode.invalidPurchase)
                #expect(
                    await ShopStoreChecks.code {
                        try await store.setPopUp(PopUp(itemNumber: 1, userId: "h", data: "\u{0}", poppedAt: 1), room: room)
                    } == ErrorCode.invalidParameter)
                #expect(try await store.products(room: "a\u{0}").isEmpty)
                #expect(try await store.order("\u{0}") == nil)
                #expect(try await store.products(room: room).count == 1, "the table is still there")
            }
        }
    }

    func registration(_ id: String) -> NodeRegistration {
        NodeRegistration(nodeId: id, signalingURL: "http://127.0.0.1:1/\(id)", mediaAddresses: ["127.0.0.1:7882"])
    }

    @Test func aDeadNodesWebhooksAreTakenOverOnceByALiveNode() async throws {
        try await withDatabase { url, cluster in
            try await cluster.register(registration("n1"), load: NodeLoad())
            try await cluster.register(registration("n2"), load: NodeLoad())
            try await withStore(url, nodeId: "n1") { n1 in
                try await withStore(url, nodeId: "n2") { n2 in
                    let events: [(roomKey: String, body: [UInt8])] = (0..<3).map { ("room\($0 % 2)", Array("{\"n\":\($0)}".utf8) + [0, 255]) }
                    let (stored, dropped) = try await n1.storeWebhooks(events + events, maxPending: 3)
                    #expect(stored.count == 3 && dropped == 3)
                    #expect(try await n1.pendingWebhooks(after: 0, limit: 10) == stored)
                    #expect(try await n2.pendingWebhooks(after: 0, limit: 10).isEmpty, "a node delivers its own rows")
                    #expect(try await n1.pendingWebhookCount() == 3)
                    #expect(try await n2.pendingWebhookCount() == 0)
                    #expect(try await n2.adoptOrphanedWebhooks().isEmpty, "n1 is alive")

                    // n1 stops heartbeating; n2 goes on. Past the dead interval n2 adopts n1's rows, once.
                    let deadline = ContinuousClock.now + .seconds(3.5)
                    while ContinuousClock.now < deadline {
                        try await cluster.heartbeat(nodeId: "n2", load: NodeLoad())
                        try await Task.sleep(for: .milliseconds(500))
                    }
                    let adopted = try await withThrowingTaskGroup(of: [WebhookOutboxRow].self) { group in
                        for _ in 0..<3 { group.addTask { try await n2.adoptOrphanedWebhooks() } }
                        return try await group.reduce(into: [WebhookOutboxRow]()) { $0 += $1 }
                    }
                    #expect(adopted.sorted { $0.id < $1.id } == stored)
                    #expect(try await n2.pendingWebhooks(after: 0, limit: 10) == stored)
                    #expect(try await n1.pendingWebhooks(after: 0, limit: 10).isEmpty)
                    #expect(try await n2.webhookBody(stored[0].id) == events[0].body, "the exact bytes")
                    try await n2.deleteWebhook(stored[0].id)
                    #expect(try await n2.webhookBody(stored[0].id) == nil)
                    #expect(try await n2.pendingWebhookCount() == 2)
                }
            }
        }
    }

    @Test func roomHistoryIsSharedAndARoomReopenedElsewhereClosesTheLostLifetime() async throws {
        try await withDatabase { url, _ in
            try await withStore(url, nodeId: "n1") { n1 in
                try await withStore(url, nodeId: "n2") { n2 in
                    try await n1.append([
                        .roomCreated(roomId: "r1", at: 1000),
                        .userEntered(roomId: "r1", userId: "host", role: .anchor, at: 1000),
                        .userEntered(roomId: "r1", userId: "fan", role: .audience, at: 1100),
                        .roleChanged(roomId: "r1", userId: "fan", role: .anchor, at: 1200),
                        .userLeft(roomId: "r1", userId: "fan", at: 1300, reason: "exit"),
                        .userLeft(roomId: "r1", userId: "host", at: 1400, reason: "exit"),
                        .roomDissolved(roomId: "r1", at: 1400, reason: "empty"),
                        .roomCreated(roomId: "r1", at: 2000),
                        .userEntered(roomId: "r1", userId: "host", role: .anchor, at: 2000),
                    ])
                    var (total, rooms) = try await n2.roomHistory(from: 0, to: 10_000, roomId: nil, offset: 0, limit: 100)
                    #expect(total == 2 && rooms.map(\.createdAt) == [2000, 1000])
                    #expect(rooms[0].dissolvedAt == nil && rooms[1].dissolvedAt == 1400 && rooms[1].dissolveReason == "empty")
                    #expect(rooms[1].userIds == ["host", "fan"])
                    #expect(try await n1.roomHistory(from: 1500, to: 10_000, roomId: nil, offset: 0, limit: 100).total == 1)
                    #expect(try await n1.roomHistory(from: 0, to: 10_000, roomId: "other", offset: 0, limit: 100).total == 0)

                    // n1 dies with r1 open; the room opens again on n2.
                    try await n2.append([.roomCreated(roomId: "r1", at: 5000), .userEntered(roomId: "r1", userId: "fan", role: .audience, at: 5000)])
                    (total, rooms) = try await n1.roomHistory(from: 0, to: 10_000, roomId: "r1", offset: 0, limit: 100)
                    #expect(total == 3 && rooms.map(\.createdAt) == [5000, 2000, 1000])
                    #expect(rooms[0].dissolvedAt == nil && rooms[0].userIds == ["fan"])
                    #expect(rooms[1].dissolvedAt == 5000 && rooms[1].dissolveReason == PostgresShopStore.homeLostReason)
                    // A node restarting closes only what it left open.
                    try await n1.closeUnfinished(at: 6000, reason: "server restarted")
                    #expect(try await n1.roomHistory(from: 0, to: 10_000, roomId: "r1", offset: 0, limit: 1).rooms.first?.dissolvedAt == nil)
                    try await n2.closeUnfinished(at: 7000, reason: "server restarted")
                    #expect(try await n1.roomHistory(from: 0, to: 10_000, roomId: "r1", offset: 0, limit: 1).rooms.first?.dissolvedAt == 7000)
                }
            }
        }
    }
}

/// A shop database that does not answer gives -7307 within the store's timeout, not a hang.
@Suite(.timeLimit(.minutes(1))) struct UnreachableShopDatabaseTests {
    @Test func callsAnswerNoAnswerWithinTheTimeout() async throws {
        let port = try PostgresTestServer.freeLoopbackPort()
        let store = PostgresShopStore(
            url: try ClusterDatabaseURL("postgres://u@127.0.0.1:\(port)/d?sslmode=disable"), nodeId: "n1", timeout: .seconds(1),
            logger: Logger(label: "shop-test"))
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        for _ in 0..<2 {
            let start = ContinuousClock.now
            let code = await ShopStoreChecks.code {
                _ = try await store.buy(itemNumber: 1, quantity: 1, userId: "u", requestId: "r", room: "shop", now: 1, reservation: .seconds(1))
            }
            #expect(code == ErrorCode.shopStoreNoAnswer, "\(String(describing: code))")
            #expect(ContinuousClock.now - start < .seconds(3))
        }
        let start = ContinuousClock.now
        #expect(await ShopStoreChecks.code { _ = try await store.products(room: "shop") } == ErrorCode.shopStoreNoAnswer)
        #expect(ContinuousClock.now - start < .seconds(3))
    }
}
