import Foundation
import LiveRoomCommerce
import LiveRoomProtocol
import Testing

@testable import LiveRoomStore

@Suite struct PKBattleStoreTests {
    static let tea = Product(itemNumber: 1, title: "Tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://s/1", stock: 1_000)
    static let cup = Product(itemNumber: 2, title: "Cup", price: Money(minorUnits: 500, currency: "USD"), itemUrl: "https://s/2", stock: 1_000)

    /// Rooms `a` and `b` sell tea in yuan, room `c` sells cups in dollars.
    func shop(_ store: RoomStore) async throws {
        _ = try await store.addProduct(Self.tea, room: "a")
        _ = try await store.addProduct(Self.tea, room: "b")
        _ = try await store.addProduct(Self.cup, room: "c")
    }

    @discardableResult
    func buy(_ store: RoomStore, _ quantity: Int, in room: String, at now: Int64, user: String = "fan") async throws -> Order {
        let item = room == "c" ? 2 : 1
        return try await store.buy(itemNumber: item, quantity: quantity, userId: user, requestId: nil, room: room, now: now, reservation: .seconds(60))
            .order
    }

    func battle(_ id: String = "pk1", rooms: [String] = ["a", "b"], from: Int64 = 1_000, to: Int64 = 11_000) -> PKBattle {
        PKBattle(battleId: id, rooms: rooms.map { PKBattle.Side(roomId: $0, userId: "host-\($0)") }, startedAt: from, endsAt: to)
    }

    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("battles-\(UUID().uuidString).sqlite").path
    }

    @Test func cancelledAndExpiredOrdersDoNotCount() async throws {
        let store = try RoomStore()
        try await shop(store)
        let paid = try await buy(store, 1, in: "a", at: 2_000)
        let cancelled = try await buy(store, 2, in: "a", at: 2_000, user: "b")
        _ = try await buy(store, 4, in: "a", at: 2_000, user: "c")
        _ = try await store.settle(orderId: paid.orderId, to: .paid, now: 3_000)
        _ = try await store.settle(orderId: cancelled.orderId, to: .cancelled, now: 3_000)
        try await buy(store, 8, in: "a", at: 70_000, user: "d")
        #expect(try await store.sales(room: "a", from: 0, to: 100_000).units == 13)
        _ = try await store.expireOrders(now: 62_000)
        #expect(try await store.sales(room: "a", from: 0, to: 100_000) == .init(roomId: "a", units: 9, amounts: ["CNY": 179_100]))
    }

    @Test func resultsSurviveReopeningTheFile() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let finished = try await {
            let store = try RoomStore(path: path)
            try await shop(store)
            try await store.startBattle(battle())
            try await buy(store, 2, in: "a", at: 2_000)
            try await buy(store, 1, in: "b", at: 2_000)
            return try await store.finishBattle("pk1", endedAt: 11_000)
        }()
        #expect(finished.winnerRoomId == "a")
        let reopened = try RoomStore(path: path)
        #expect(try await reopened.battle("pk1") == finished)
        #expect(try await reopened.battles(room: "b", limit: 5) == [finished])
        #expect(try await reopened.unfinishedBattles().isEmpty)
        #expect(try await reopened.finishBattle("pk1", endedAt: 99_000) == finished)
    }

    @Test func aBattleRunningWhenTheServerStoppedIsFinishedFromTheOrdersAfterReopening() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let store = try RoomStore(path: path)
            try await shop(store)
            try await store.startBattle(battle())
            try await store.startBattle(battle("pk0", from: 500, to: 9_000))
            try await buy(store, 1, in: "a", at: 2_000)
            try await buy(store, 4, in: "b", at: 3_000)
        }
        let reopened = try RoomStore(path: path)
        #expect(try await reopened.unfinishedBattles() == [battle("pk0", from: 500, to: 9_000), battle()], "the soonest due first")
        let finished = try await reopened.finishBattle("pk1", endedAt: 11_000)
        #expect(finished.results?.map(\.units) == [1, 4] && finished.winnerRoomId == "b")
        #expect(try await reopened.unfinishedBattles().map(\.battleId) == ["pk0"])
    }
}
