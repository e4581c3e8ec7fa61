import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import LiveRoomServer

@Suite struct ConnectionOutboxTests {
    /// The text frames written to `channel` so far.
    static func written(_ channel: NIOAsyncTestingChannel) async throws -> [String] {
        var texts: [String] = []
        while let frame = try await channel.readOutbound(as: WebSocketFrame.self) {
            #expect(frame.opcode == .text && frame.fin)
            texts.append(String(buffer: frame.unmaskedData))
        }
        return texts
    }

    @Test func aClientThatDoesNotReadIsCutOffAtTheLimitInsteadOfGrowingTheServer() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        let message = String(repeating: "m", count: 1000)
        // The client reads nothing while its room sends 1 MB.
        for _ in 0..<1000 { outbox.push(message, priority: .normal) }
        #expect(outbox.queuedBytes == 0, "the queue was dropped at the limit")
        let channel = NIOAsyncTestingChannel()
        await outbox.write(to: channel)
        #expect(await outbox.ended() == .overflowed)
        #expect(try await Self.written(channel).isEmpty)
    }

    @Test func aClientThatReadsGetsEverythingInPriorityOrder() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        outbox.push("normal", priority: .normal)
        outbox.push("high", priority: .high)
        #expect(outbox.queuedBytes == 10)
        outbox.close()
        let channel = NIOAsyncTestingChannel()
        await outbox.write(to: channel)
        #expect(await outbox.ended() == .closed)
        #expect(try await Self.written(channel) == ["high", "normal"])
        #expect(outbox.queuedBytes == 0)
    }

    @Test func messagesPushedWhileWritingGoOutInBatchesInOrder() async throws {
        let outbox = ConnectionOutbox(maxBytes: 1_000_000)
        let channel = NIOAsyncTestingChannel()
        let writing = Task { await outbox.write(to: channel) }
        let count = ConnectionOutbox.batchSize * 3 + 5
        for n in 0..<count { outbox.push("m\(n)", priority: .normal) }
        var texts: [String] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while texts.count < count, ContinuousClock.now < deadline {
            texts += try await Self.written(channel)
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(texts == (0..<count).map { "m\($0)" })
        outbox.close()
        await writing.value
        #expect(outbox.queuedBytes == 0)
    }

    @Test func aHungUpOutboxWritesWhatIsQueuedThenSaysWhy() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        outbox.push("moved", priority: .high)
        outbox.hangUp(reason: "the room lives on another node")
        outbox.push("too late", priority: .high)
        let channel = NIOAsyncTestingChannel()
        await outbox.write(to: channel)
        #expect(try await Self.written(channel) == ["moved"])
        #expect(await outbox.ended() == .hungUp(reason: "the room lives on another node"))
    }

    @Test func aChannelThatFailsEndsTheWriting() async throws {
        let outbox = ConnectionOutbox(maxBytes: 10_000)
        let channel = NIOAsyncTestingChannel()
        try await channel.close()
        outbox.push("lost", priority: .normal)
        await outbox.write(to: channel)  // returns: the write failed
        outbox.push("after", priority: .normal)
        #expect(outbox.queuedBytes == 0, "a failed channel takes nothing more")
    }
}
