import LiveRoomCore
import Synchronization

/// One connection's queue of outgoing signaling messages. The room hub pushes; the
/// connection's writer task drains it in priority order.
final class ConnectionOutbox: Sendable {
    private struct State {
        var queue = PriorityOutbox<String>()
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init() {
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func push(_ text: String, priority: MessagePriority) {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.queue.push(text, priority: priority)
            return true
        }
        if accepted { wake.yield() }
    }

    /// No more messages; the writer finishes after what is queued.
    func close() {
        state.withLock { $0.closed = true }
        wake.finish()
    }

    /// Calls `write` for each message in order until ``close()``.
    func drain(_ write: (String) async throws -> Void) async throws {
        for await _ in wakeups {
            while let next = state.withLock({ $0.queue.pop() }) {
                try await write(next)
            }
        }
        while let next = state.withLock({ $0.queue.pop() }) {
            try await write(next)
        }
    }
}
