import LiveRoomCore
import NIOCore
import NIOWebSocket
import Synchronization

/// One connection's queue of outgoing signaling messages. The room hub and the shops push; the
/// queue writes them to the connection's channel in priority order (``write(to:)``).
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
        /// Where messages go once ``write(to:)`` is called, and whether a batch is on its way.
        var channel: (any Channel)?
        var writing = false
    }

    let maxBytes: Int
    /// The most messages one batch writes before it waits for the socket.
    static let batchSize = 64
    private let state = Mutex(State())
    private let ends: AsyncStream<End>
    private let end: AsyncStream<End>.Continuation
    private let finished: AsyncStream<Void>
    private let finish: AsyncStream<Void>.Continuation

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
        (ends, end) = AsyncStream.makeStream(of: End.self, bufferingPolicy: .bufferingNewest(1))
        (finished, finish) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
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
        case .queued: startWriting()
        case .overflowed:
            finish.finish()
            end.yield(.overflowed)
            end.finish()
        case .refused: break
        }
    }

    /// No more messages; the writing finishes after what is queued.
    func close() {
        state.withLock { $0.closed = true }
        end.finish()
        startWriting()
    }

    /// No more messages; the connection is to be closed once what is queued is written.
    func hangUp(reason: String) {
        state.withLock { $0.closed = true }
        end.yield(.hungUp(reason: reason))
        end.finish()
        startWriting()
    }

    /// Writes every message, as it is pushed, to `channel` as a WebSocket text frame: from the
    /// channel's event loop, a batch at a time, each batch once the one before has reached the
    /// socket. A client that does not read so leaves its messages here, where ``maxBytes``
    /// bounds them, and no task of the shared pool wakes for each message. Returns once the
    /// outbox is closed and everything is written, or it overflowed, or the channel failed.
    func write(to channel: any Channel) async {
        state.withLock { $0.channel = channel }
        startWriting()
        for await _ in finished {}
    }

    /// Starts a batch on the channel's event loop unless one is on its way.
    private func startWriting() {
        let channel = state.withLock { state -> (any Channel)? in
            guard let channel = state.channel, !state.writing else { return nil }
            state.writing = true
            return channel
        }
        guard let channel else { return }
        channel.eventLoop.execute { self.writeBatch(to: channel) }
    }

    /// On the event loop: writes what is queued (up to ``batchSize`` messages), flushes, and
    /// goes on once that is written; stops when nothing is queued.
    private func writeBatch(to channel: any Channel) {
        let (batch, done) = state.withLock { state -> ([String], Bool) in
            var batch: [String] = []
            while batch.count < Self.batchSize, let next = state.queue.pop() {
                state.queuedBytes -= next.utf8.count
                batch.append(next)
            }
            if batch.isEmpty { state.writing = false }
            return (batch, state.closed && batch.isEmpty)
        }
        guard !batch.isEmpty else {
            if done { finish.finish() }
            return
        }
        var written = channel.eventLoop.makeSucceededVoidFuture()
        for text in batch {
            written = channel.write(WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text)))
        }
        channel.flush()
        written.whenComplete { result in
            switch result {
            case .success:
                channel.eventLoop.execute { self.writeBatch(to: channel) }
            case .failure:
                self.state.withLock { $0.closed = true }
                self.finish.finish()
            }
        }
    }
}
