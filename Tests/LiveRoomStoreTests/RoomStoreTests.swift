import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
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
