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

@Suite struct OrderStoreTests {
    static let tea = Product(
        itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 100, limitPerUser: 3)

    func buy(_ store: RoomStore, _ quantity: Int = 1, user: String = "fan", requestId: String? = nil, now: Int64 = 1_000) async throws
        -> (order: Order, product: Product, repeated: Bool)
    {
        try await store.buy(itemNumber: 1, quantity: quantity, userId: user, requestId: requestId, room: "shop", now: now, reservation: .seconds(60))
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
        _ = try await store.addProduct(OrderStoreTests.tea, room: "shop")
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
