import Foundation
import LiveRoomCore
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
