import Foundation
import LiveRoomStore
import Testing

/// The outbox table: exact bodies kept in order, a cap on waiting rows, survival across opens.
@Suite struct WebhookOutboxTests {
    @Test func rowsKeepTheirBodiesAndOrderAndTheCapDropsTheRest() async throws {
        let store = try RoomStore()
        let (first, dropped) = try await store.storeWebhooks(
            [("a", Array("one".utf8)), ("b", [0, 255, 10]), ("a", Array("three".utf8))], maxPending: 4)
        #expect(dropped == 0 && first.map(\.roomKey) == ["a", "b", "a"])
        #expect(first.map(\.id) == first.map(\.id).sorted() && Set(first.map(\.id)).count == 3)
        let (second, droppedNow) = try await store.storeWebhooks([("c", [1]), ("c", [2])], maxPending: 4)
        #expect(second.count == 1 && droppedNow == 1, "the fifth row is over the cap")
        #expect(try await store.webhookBody(first[1].id) == [0, 255, 10])
        #expect(try await store.pendingWebhooks() == first + second)
        #expect(try await store.pendingWebhooks(after: first[1].id, limit: 1) == [first[2]])
        try await store.deleteWebhook(first[0].id)
        #expect(try await store.pendingWebhookCount() == 3)
        #expect(try await store.webhookBody(first[0].id) == nil)
    }

    @Test func rowsSurviveReopening() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let store = try RoomStore(path: path)
            _ = try await store.storeWebhooks([("r", Array("kept".utf8))], maxPending: 10)
        }
        let reopened = try RoomStore(path: path)
        let rows = try await reopened.pendingWebhooks()
        #expect(rows.map(\.roomKey) == ["r"])
        #expect(try await reopened.webhookBody(rows[0].id) == Array("kept".utf8))
    }
}
