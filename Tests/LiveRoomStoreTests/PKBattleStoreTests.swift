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

    @Test func salesCountOnlyInTheRoomWhereTheyWerePlacedAndInsideTheWindow() async throws {
        let store = try RoomStore()
        try await shop(store)
        try await buy(store, 5, in: "a", at: 999)
        try await buy(store, 1, in: "a", at: 1_000)
        try await buy(store, 2, in: "a", at: 10_999)
        try await buy(store, 7, in: "a", at: 11_000)
        try await buy(store, 3, in: "b", at: 5_000)
        #expect(try await store.sales(room: "a", from: 1_000, to: 11_000) == .init(roomId: "a", units: 3, amounts: ["CNY": 59_700]))
        #expect(try await store.sales(room: "b", from: 1_000, to: 11_000) == .init(roomId: "b", units: 3, amounts: ["CNY": 59_700]))
        #expect(try await store.sales(room: "c", from: 1_000, to: 11_000) == .init(roomId: "c", units: 0, amounts: [:]))
        #expect(try await store.sales(room: "a", from: 0, to: 100_000).units == 15)
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

    @Test func startingRefusesBadBattles() async throws {
        let store = try RoomStore()
        try await store.startBattle(battle())
        for bad in [battle(), battle("pk2", rooms: ["a"]), battle("pk3", rooms: ["a", "a"]), battle("pk4", from: 5_000, to: 5_000), battle("")] {
            do {
                try await store.startBattle(bad)
                Issue.record("started \(bad)")
            } catch let error as LiveRoomError {
                #expect(error.code == ErrorCode.invalidParameter, "\(error.message)")
            }
        }
        do {
            _ = try await store.finishBattle("nope", endedAt: 1)
            Issue.record("finished a battle that does not exist")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.invalidParameter)
        }
        #expect(try await store.battle("nope") == nil)
    }

    @Test func finishingScoresEveryRoomOnceAndAgainReturnsTheStoredResult() async throws {
        let store = try RoomStore()
        try await shop(store)
        try await store.startBattle(battle(rooms: ["a", "b", "c"]))
        #expect(try await store.battle("pk1") == battle(rooms: ["a", "b", "c"]))
        try await buy(store, 1, in: "a", at: 2_000)
        try await buy(store, 3, in: "b", at: 3_000)
        try await buy(store, 1, in: "b", at: 9_000)
        try await buy(store, 2, in: "c", at: 4_000)
        try await buy(store, 9, in: "a", at: 11_000)

        // Ended early at 8,500: b's order at 9,000 is after the end.
        let finished = try await store.finishBattle("pk1", endedAt: 8_500)
        #expect(finished.endedAt == 8_500)
        #expect(
            finished.results == [
                .init(roomId: "a", units: 1, amounts: ["CNY": 19_900]), .init(roomId: "b", units: 3, amounts: ["CNY": 59_700]),
                .init(roomId: "c", units: 2, amounts: ["USD": 1_000]),
            ])
        #expect(finished.winnerRoomId == "b", "yuan and dollars: the most units win")
        #expect(try await store.battle("pk1") == finished)

        try await buy(store, 50, in: "a", at: 5_000)
        #expect(try await store.finishBattle("pk1", endedAt: 20_000) == finished, "finishing again changes nothing")
        #expect(try await store.unfinishedBattles().isEmpty)

        // A battle finished after it was due counts only until it was due; equal amounts are a draw.
        try await store.startBattle(battle("pk2", rooms: ["b", "a"], from: 20_000, to: 30_000))
        try await buy(store, 2, in: "a", at: 25_000)
        try await buy(store, 2, in: "b", at: 29_999)
        try await buy(store, 2, in: "b", at: 30_000)
        let draw = try await store.finishBattle("pk2", endedAt: 45_000)
        #expect(draw.results?.map(\.units) == [2, 2] && draw.winnerRoomId == nil && draw.endedAt == 45_000)
        #expect(try await store.battles(room: "a", limit: 10).map(\.battleId) == ["pk2", "pk1"])
        #expect(try await store.battles(room: "a", limit: 1) == [draw])
        #expect(try await store.battles(room: "c", limit: 10).map(\.battleId) == ["pk1"])
        #expect(try await store.battles(room: "z", limit: 10).isEmpty)
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
