import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import ShopStoreChecks
import Testing

@testable import LiveRoomStore

@Suite struct RoomStoreTests {
    @Test func historyFollowsRecords() throws {
        let store = try RoomStore()
        try store.append([
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
        let (total, rooms) = try store.roomHistory(from: 0, to: 10_000)
        #expect(total == 2)
        #expect(rooms.map(\.createdAt) == [2000, 1000])
        #expect(rooms[0].dissolvedAt == nil)
        #expect(rooms[1].dissolvedAt == 1400)
        #expect(rooms[1].dissolveReason == "empty")
        #expect(rooms[1].userIds == ["host", "fan"])
        #expect(try store.roomHistory(from: 1500, to: 10_000).total == 1)
        #expect(try store.roomHistory(from: 0, to: 10_000, roomId: "other").total == 0)
    }

    @Test func restartClosesOpenRoomsAndKeepsSettings() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("db.sqlite").path
        do {
            let store = try RoomStore(path: path)
            #expect(try store.setting("k", orInsert: { "first" }) == "first")
            try store.append([.roomCreated(roomId: "r", at: 1), .userEntered(roomId: "r", userId: "u", role: .anchor, at: 1)])
        }
        let reopened = try RoomStore(path: path)
        #expect(try reopened.setting("k", orInsert: { "second" }) == "first")
        try reopened.closeUnfinished(at: 50, reason: "server restarted")
        let room = try reopened.roomHistory(from: 0, to: 100).rooms.first
        #expect(room?.dissolvedAt == 50)
        #expect(room?.dissolveReason == "server restarted")
    }
}

@Suite struct CatalogueStoreTests {
    let tea = Product(itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 100)

    @Test func productsAreAddedEditedByVersionAndRemovedPerRoom() async throws {
        let store = try RoomStore()
        #expect(try await store.addProduct(tea, room: "shop").version == 1)
        await #expect(throws: LiveRoomError.self) { try await store.addProduct(tea, room: "shop") }
        _ = try await store.addProduct(tea, room: "*7")
        #expect(try await store.products(room: "shop") == [tea])

        // Two anchors edit version 1 at once: the first wins, the second hears of the conflict.
        var first = tea
        first.stock = 90
        var second = tea
        second.title = "Black tea"
        let stored = try await store.replaceProduct(first, room: "shop")
        #expect(stored.version == 2 && stored.stock == 90)
        do {
            _ = try await store.replaceProduct(second, room: "shop")
            Issue.record("a stale version was taken")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.productVersionConflict, "\(error.message)")
        }
        #expect(try await store.product(1, room: "shop")?.title == "Tea")
        #expect(try await store.product(1, room: "*7")?.version == 1, "another room's catalogue is its own")

        try await store.removeProduct(1, room: "shop")
        #expect(try await store.products(room: "shop").isEmpty)
        do {
            try await store.removeProduct(1, room: "shop")
            Issue.record("removed twice")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.productNotFound)
        }
    }

    @Test func aRoomHoldsAtMostFiveHundredProducts() async throws {
        let store = try RoomStore()
        for number in 1...Product.maxPerRoom {
            var product = tea
            product.itemNumber = number
            _ = try await store.addProduct(product, room: "big")
        }
        var extra = tea
        extra.itemNumber = 999
        do {
            _ = try await store.addProduct(extra, room: "big")
            Issue.record("a 501st product was taken")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.tooManyProducts)
        }
    }
}

@Suite struct OrderStoreTests {
    static let tea = Product(
        itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 100, limitPerUser: 3)

    func buy(_ store: RoomStore, _ quantity: Int = 1, user: String = "fan", requestId: String? = nil, now: Int64 = 1_000) async throws
        -> (order: Order, product: Product, repeated: Bool)
    {
        try await store.buy(itemNumber: 1, quantity: quantity, userId: user, requestId: requestId, room: "shop", now: now, reservation: .seconds(60))
    }

    func code(_ body: () async throws -> Void) async -> Int? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? LiveRoomError)?.code
        }
    }

    @Test func aPurchaseReservesStockAndARetryReturnsTheSameOrder() async throws {
        let store = try RoomStore()
        _ = try await store.addProduct(Self.tea, room: "shop")
        let first = try await buy(store, 2, requestId: "r1")
        #expect(first.order.state == .reserved && first.order.amount == Money(minorUnits: 39_800, currency: "CNY") && !first.repeated)
        #expect(first.product.stock == 98 && first.product.version == 2 && first.order.expiresAt == 61_000)
        let again = try await buy(store, 2, requestId: "r1")
        #expect(again.order == first.order && again.repeated && again.product.stock == 98)
        #expect(try await store.order(first.order.orderId) == first.order)

        // The limit counts what the buyer holds; other buyers have their own.
        #expect(await code { _ = try await buy(store, 2) } == ErrorCode.purchaseLimitExceeded)
        _ = try await buy(store, 1)
        _ = try await buy(store, 3, user: "other")
        #expect(await code { _ = try await buy(store, 0) } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await buy(store, 101) } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await buy(store, requestId: String(repeating: "x", count: 65)) } == ErrorCode.invalidPurchase)
        #expect(await code { _ = try await store.buy(itemNumber: 9, quantity: 1, userId: "fan", requestId: nil, room: "shop", now: 0, reservation: .seconds(1)) }
            == ErrorCode.productNotFound)
        #expect(try await store.product(1, room: "shop")?.stock == 94)

        var off = try #require(try await store.product(1, room: "shop"))
        off.onShelf = false
        _ = try await store.replaceProduct(off, room: "shop")
        #expect(await code { _ = try await buy(store, user: "third") } == ErrorCode.productOffShelf)
    }

    @Test func stockNeverGoesBelowZeroUnderConcurrentBuyers() async throws {
        let store = try RoomStore()
        var product = Self.tea
        product.stock = 100
        product.limitPerUser = nil
        _ = try await store.addProduct(product, room: "shop")
        let codes = await withTaskGroup(of: Int.self) { group in
            for n in 0..<1_000 {
                group.addTask { (try? await buy(store, user: "u\(n % 300)", requestId: "r\(n)")).map { _ in 0 } ?? -1 }
            }
            return await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(codes[0] == 100 && codes[-1] == 900, "\(codes)")
        #expect(try await store.product(1, room: "shop")?.stock == 0)
        #expect(try await store.orders(room: "shop", state: .reserved, offset: 0, limit: 1000).orders.count == 100)
        #expect(await code { _ = try await buy(store) } == ErrorCode.soldOut)
    }

    @Test func settledOrdersStayAndCancelledOrExpiredOnesReturnTheirStock() async throws {
        let store = try RoomStore()
        _ = try await store.addProduct(Self.tea, room: "shop")
        let paid = try await buy(store, 1, user: "a").order
        let cancelled = try await buy(store, 2, user: "b", now: 1_500).order
        let expiring = try await buy(store, 3, user: "c", now: 2_000).order
        #expect(try await store.settle(orderId: paid.orderId, to: .paid, now: 3_000).product == nil)
        #expect(try await store.settle(orderId: cancelled.orderId, to: .cancelled, now: 3_000).product?.stock == 96)
        #expect(await code { _ = try await store.settle(orderId: paid.orderId, to: .cancelled, now: 3_000) } == ErrorCode.orderNotReserved)
        #expect(await code { _ = try await store.settle(orderId: "nope", to: .paid, now: 3_000) } == ErrorCode.orderNotFound)

        #expect(try await store.expireOrders(now: 61_999).isEmpty, "not yet")
        let returned = try await store.expireOrders(now: 62_000)
        #expect(returned.map(\.product.stock) == [99] && returned.first?.room == "shop")
        #expect(try await store.order(expiring.orderId)?.state == .expired)
        #expect(try await store.orders(room: "shop", state: nil, offset: 0, limit: 10).orders.map(\.state) == [.expired, .cancelled, .paid])
        let page = try await store.orders(room: "shop", state: nil, offset: 1, limit: 1)
        #expect(page.total == 3 && page.orders.map(\.state) == [.cancelled])
        #expect(try await store.orders(room: "shop", state: .paid, offset: 0, limit: 10).orders.map(\.orderId) == [paid.orderId])
        // A paid order still counts against its buyer's limit.
        #expect(await code { _ = try await buy(store, 3, user: "a") } == ErrorCode.purchaseLimitExceeded)

        // Removing the product voids its reservations: a new product under the same number starts clean.
        let held = try await buy(store, 1, user: "d").order
        try await store.removeProduct(1, room: "shop")
        #expect(try await store.order(held.orderId)?.state == .cancelled)
        _ = try await store.addProduct(Self.tea, room: "shop")
        #expect(try await store.expireOrders(now: 1_000_000).isEmpty)
        #expect(try await store.product(1, room: "shop")?.stock == 100)
    }

    @Test func ordersSurviveReopeningTheFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("orders-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let order = try await {
            let store = try RoomStore(path: path)
            _ = try await store.addProduct(Self.tea, room: "shop")
            return try await buy(store, 2).order
        }()
        let reopened = try RoomStore(path: path)
        #expect(try await reopened.order(order.orderId) == order)
        #expect(try await reopened.product(1, room: "shop")?.stock == 98)
    }
}

@Suite struct ReplayStoreTests {
    func replay(_ n: Int, item: Int = 1, room: String = "shop") -> Replay {
        Replay(
            replayId: String(format: "%032x", n), roomId: room, itemNumber: item, userId: "host", codec: "vp8", durationMs: 1000, bytes: 10,
            createdAt: Int64(n))
    }

    @Test func productsKeepTheirNewestReplaysAndRemovingAProductHandsBackItsReplays() async throws {
        let store = try RoomStore()
        _ = try await store.addProduct(CatalogueStoreTests().tea, room: "shop")
        for n in 1...Replay.maxPerProduct {
            let (product, dropped) = try await store.addReplay(replay(n), keep: Replay.maxPerProduct)
            #expect(product.replays.count == n && dropped.isEmpty)
        }
        let (product, dropped) = try await store.addReplay(replay(99), keep: Replay.maxPerProduct)
        #expect(dropped == [replay(1)] && product.replays.first == replay(2) && product.replays.last == replay(99))
        #expect(try await store.products(room: "shop").first?.replays.count == Replay.maxPerProduct)
        #expect(try await store.replay(replay(99).replayId) == replay(99))
        #expect(try await store.replayFileNames().contains(replay(99).fileName))

        // Another room cannot remove it; its own room can.
        do {
            _ = try await store.removeReplay(replay(99).replayId, room: "other")
            Issue.record("removed from another room")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.replayNotFound)
        }
        let (removed, after) = try await store.removeReplay(replay(99).replayId, room: "shop")
        #expect(removed == replay(99) && after.replays.count == Replay.maxPerProduct - 1)

        // A replay of a product that is gone is refused; removing a product hands back its replays.
        do {
            _ = try await store.addReplay(replay(5, item: 42), keep: 10)
            Issue.record("a replay of no product was kept")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.productNotFound)
        }
        let gone = try await store.removeProduct(1, room: "shop")
        #expect(gone.count == Replay.maxPerProduct - 1)
        #expect(try await store.replayFileNames().isEmpty)
    }
}

/// The checks every shop store passes (`ShopStoreChecks`, run against PostgreSQL too), here on SQLite.
@Suite struct SharedShopStoreChecksOnSQLite {
    @Test(arguments: ShopStoreChecks.all.map(\.name)) func check(_ name: String) async throws {
        let check = try #require(ShopStoreChecks.all.first { $0.name == name }?.check)
        try await check(try RoomStore())
    }
}
