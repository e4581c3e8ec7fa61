import Foundation
import LiveRoomStore
import LiveRoomWebhooks
import Logging
import NIOPosix
import Testing

@testable import LiveRoomServer

/// The delivery service on a real store and real sockets: the cap on waiting events, and a
/// second service on the same store delivering what the first could not, in order, signed.
@Suite(.timeLimit(.minutes(1))) struct WebhookServiceTests {
    func event(_ n: Int, room: String) -> WebhookEvent {
        WebhookEvent(roomKey: room, group: 1, type: 103, at: 1_700_000_000_000, fields: [WebhookField("UserId", .string("u\(n)"))])
    }

    func service(_ store: RoomStore, port: UInt16, maxPending: Int) throws -> WebhookService {
        let target = try #require(HTTPTarget(url: "http://127.0.0.1:\(port)/hook"))
        return WebhookService(
            store: store, client: HTTPPostClient(target: target, timeout: .seconds(2)),
            key: "k3y", sdkAppId: 1_400_000_000, maxPending: maxPending, logger: Logger(label: "test"))
    }

    func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
        for _ in 0..<200 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("not within 10 s: \(what)")
    }

    @Test func eventsOverTheCapAreDroppedAndTheRestDeliveredByTheNextRunInOrder() async throws {
        let store = try RoomStore()
        let closed = try ScriptedHTTPServer(.silent)
        let deadPort = closed.port
        closed.stop()

        let first = try service(store, port: deadPort, maxPending: 3)
        let running = Task { try await first.run() }
        first.enqueue([event(1, room: "a"), event(2, room: "b"), event(3, room: "a"), event(4, room: "a"), event(5, room: "b")])
        try await waitFor("three stored, two dropped") { try await store.pendingWebhookCount() == 3 && first.statistics.dropped == 2 }
        try await waitFor("a failed attempt") { first.statistics.failures >= 1 }
        #expect(first.statistics.pending == 3 && first.statistics.delivered == 0)
        first.enqueue([event(6, room: "c")])
        try await waitFor("the stored cap holds") { first.statistics.dropped == 3 }
        #expect(try await store.pendingWebhookCount() == 3)
        running.cancel()
        _ = try? await running.value

        let receiver = try ScriptedHTTPServer(.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        defer { receiver.stop() }
        let second = try service(store, port: receiver.port, maxPending: 3)
        let resumed = Task { try await second.run() }
        defer { resumed.cancel() }
        try await waitFor("the stored events delivered") { try await store.pendingWebhookCount() == 0 && second.statistics.delivered == 3 }
        let requests = receiver.requests.withLock { $0 }
        let users = requests.compactMap { request -> String? in
            guard let range = request.range(of: #""UserId":""#) else { return nil }
            return String(request[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(users.filter { ["u1", "u3"].contains($0) } == ["u1", "u3"], "room a in order: \(users)")
        #expect(Set(users) == ["u1", "u2", "u3"])
        for request in requests {
            let body = String(request[request.range(of: "\r\n\r\n")!.upperBound...])
            #expect(request.contains("\r\nSign: \(WebhookSignature.sign(Array(body.utf8), key: "k3y"))\r\n"), "\(request)")
        }
        #expect(second.statistics.pending == 0)
    }
}
