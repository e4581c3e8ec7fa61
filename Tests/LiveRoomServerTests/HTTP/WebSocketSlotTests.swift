import Hummingbird
import HummingbirdWSClient
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

@testable import LiveRoomServer

/// Every signaling connection ever accepted stayed in memory (its request context, channel,
/// buffers and logger, about 5 KB): Hummingbird's WebSocket route stores its handler and the
/// context in a reference the context holds. The server's WebSocket routes let go of it once
/// the upgrade has used it.
@Suite(.timeLimit(.minutes(1))) struct WebSocketSlotTests {
    /// Weak views of the slots of the contexts that were upgraded.
    final class Upgraded: Sendable {
        struct Weak: @unchecked Sendable { weak var slot: WebSocketSlot<ServerRequestContext>? }
        let slots = Mutex<[Weak]>([])
        var alive: Int { slots.withLock { $0.count { $0.slot != nil } } }
    }

    /// Serves `router` over real HTTP on loopback, opens and closes `count` WebSocket
    /// connections to /ws one after the other, and returns how many upgraded contexts are
    /// still alive once every connection has closed.
    static func contextsLeft(
        _ count: Int, waitingAtMost wait: Duration = .seconds(5), route: (Router<ServerRequestContext>, Upgraded) -> Void
    ) async throws -> (upgraded: Int, alive: Int) {
        let logger = Logger(label: "websocket-slot-test")
        let upgraded = Upgraded()
        let router = Router(context: ServerRequestContext.self)
        route(router, upgraded)
        let (ports, portIs) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { portIs.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let running = Task { try await app.runService() }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        for _ in 0..<count {
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/ws", logger: logger) { _, outbound, _ in
                try await outbound.close(.normalClosure, reason: nil)
            }
        }
        // The server side ends a moment after each close.
        let deadline = ContinuousClock.now + wait
        while upgraded.alive > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return (upgraded.slots.withLock { $0.count }, upgraded.alive)
    }

    @Test func closedConnectionsLeaveNoContextBehind() async throws {
        let (upgraded, alive) = try await Self.contextsLeft(20) { router, upgraded in
            router.webSocket("/ws") { inbound, _, context in
                upgraded.slots.withLock { $0.append(.init(slot: context.requestContext.webSocketSlot)) }
                for try await _ in inbound {}
            }
        }
        #expect(upgraded == 20 && alive == 0, "\(alive) of \(upgraded) contexts still alive")
    }

    /// Hummingbird's own cycle, which the slot works around: if this stops holding, a newer
    /// hummingbird-websocket frees the context by itself and the slot can go.
    @Test func hummingbirdsRouteAloneKeepsEveryContext() async throws {
        let (upgraded, alive) = try await Self.contextsLeft(5, waitingAtMost: .seconds(1)) { router, upgraded in
            router.ws("/ws") { inbound, _, context in
                upgraded.slots.withLock { $0.append(.init(slot: context.requestContext.webSocketSlot)) }
                for try await _ in inbound {}
            }
        }
        #expect(upgraded == 5 && alive == 5, "\(alive) of \(upgraded) contexts still alive")
    }
}
