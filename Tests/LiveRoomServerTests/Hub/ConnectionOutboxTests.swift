import Synchronization
import Testing

@testable import LiveRoomServer

@Suite struct ConnectionOutboxTests {
    @Test func aClientThatDoesNotReadIsCutOffAtTheLimitInsteadOfGrowingTheServer() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        let message = String(repeating: "m", count: 1000)
        // The client reads nothing while its room sends 1 MB.
        for _ in 0..<1000 { outbox.push(message, priority: .normal) }
        #expect(outbox.queuedBytes == 0, "the queue was dropped at the limit")
        let written = Mutex(0)
        try await outbox.drain { _ in written.withLock { $0 += 1 } }
        #expect(await outbox.ended() == .overflowed)
        #expect(written.withLock { $0 } == 0)
    }

    @Test func aClientThatReadsGetsEverythingInPriorityOrder() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        outbox.push("normal", priority: .normal)
        outbox.push("high", priority: .high)
        #expect(outbox.queuedBytes == 10)
        outbox.close()
        let written = Mutex<[String]>([])
        try await outbox.drain { text in written.withLock { $0.append(text) } }
        #expect(await outbox.ended() == .closed)
        #expect(written.withLock { $0 } == ["high", "normal"])
        #expect(outbox.queuedBytes == 0)
    }

    @Test func aHungUpOutboxWritesWhatIsQueuedThenSaysWhy() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        outbox.push("moved", priority: .high)
        outbox.hangUp(reason: "the room lives on another node")
        outbox.push("too late", priority: .high)
        let written = Mutex<[String]>([])
        try await outbox.drain { text in written.withLock { $0.append(text) } }
        #expect(written.withLock { $0 } == ["moved"])
        #expect(await outbox.ended() == .hungUp(reason: "the room lives on another node"))
    }
}
