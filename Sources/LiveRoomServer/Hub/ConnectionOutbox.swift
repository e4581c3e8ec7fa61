import LiveRoomCore
import Synchronization

/// One connection's queue of outgoing signaling messages. The room hub pushes; the
/// connection's writer task drains it in priority order.
///
/// The queue holds at most `maxBytes` of text. A client that stops reading while its room keeps
/// talking would otherwise grow the server without bound: past the limit the queue is dropped
/// and ``ended()`` says ``End/overflowed``, and the connection is closed at once, whether or not
/// the writer is stuck writing to a client that does not read.
final class ConnectionOutbox: Sendable {
    /// Why the queue ended (``ended()``).
    enum End: Sendable, Equatable {
        /// ``close()`` was called.
        case closed
        /// More than `maxBytes` waited to be written: the client does not keep up.
        case overflowed
        /// ``hangUp(reason:)``: the server closes the connection after what is queued.
        case hungUp(reason: String)
    }

    private struct State {
        var queue = PriorityOutbox<String>()
        var queuedBytes = 0
        var closed = false
        var overflowed = false
    }

    let maxBytes: Int
    private let state = Mutex(State())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let ends: AsyncStream<End>
    private let end: AsyncStream<End>.Continuation

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (ends, end) = AsyncStream.makeStream(of: End.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Waits until the queue is closed or overflows, and says which.
    func ended() async -> End {
        for await reason in ends { return reason }
        return state.withLock { $0.overflowed } ? .overflowed : .closed
    }

    /// The bytes of text waiting to be written.
    var queuedBytes: Int { state.withLock { $0.queuedBytes } }

    func push(_ text: String, priority: MessagePriority) {
        enum Outcome { case queued, refused, overflowed }
        let outcome = state.withLock { state -> Outcome in
            guard !state.closed else { return .refused }
            guard state.queuedBytes + text.utf8.count <= maxBytes else {
                state = State(closed: true, overflowed: true)
                return .overflowed
            }
            state.queue.push(text, priority: priority)
            state.queuedBytes += text.utf8.count
            return .queued
        }
        switch outcome {
        case .queued: wake.yield()
        case .overflowed:
            wake.finish()
            end.yield(.overflowed)
            end.finish()
        case .refused: break
        }
    }

    /// No more messages; the writer finishes after what is queued.
    func close() {
        state.withLock { $0.closed = true }
        wake.finish()
        end.finish()
    }

    /// No more messages; the connection is to be closed once what is queued is written.
    func hangUp(reason: String) {
        state.withLock { $0.closed = true }
        wake.finish()
        end.yield(.hungUp(reason: reason))
        end.finish()
    }

    /// Calls `write` for each message in order until ``close()``, or until the queue overflows
    /// (``ended()`` says which).
    func drain(_ write: (String) async throws -> Void) async throws {
        for await _ in wakeups {
            while let next = pop() {
                try await write(next)
            }
        }
        while let next = pop() {
            try await write(next)
        }
    }

    private func pop() -> String? {
        state.withLock { state in
            guard let next = state.queue.pop() else { return nil }
            state.queuedBytes -= next.utf8.count
            return next
        }
    }
}
