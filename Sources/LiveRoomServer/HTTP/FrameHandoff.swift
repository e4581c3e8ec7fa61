import HummingbirdWebSocket
import Synchronization

/// Frames read from a WebSocket by one task and handled by another, at most ``limit`` waiting:
/// a connection's frames are read (and with them its pongs, which the WebSocket library takes
/// only while someone reads) off its room's lane, so a busy room cannot keep a connection from
/// answering pings; they are handled on the lane in order. A client that sends faster than its
/// room handles waits for room in the hand-off, which stops its reading, not anyone else's.
final class FrameHandoff: Sendable {
    static let limit = 64

    private struct State {
        var waiting = 0
        var reader: CheckedContinuation<Void, Never>?
        /// Once finished, nobody takes frames: a reader never waits again.
        var finished = false
    }

    private let state = Mutex(State())
    let frames: AsyncStream<WebSocketMessage>
    private let input: AsyncStream<WebSocketMessage>.Continuation

    init() {
        (frames, input) = AsyncStream<WebSocketMessage>.makeStream()
    }

    /// Hands a frame on; returns once fewer than ``limit`` wait.
    func put(_ frame: WebSocketMessage) async {
        input.yield(frame)
        let full = state.withLock { state in
            state.waiting += 1
            return state.waiting >= Self.limit && !state.finished
        }
        guard full else { return }
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state -> Bool in
                guard state.waiting >= Self.limit, !state.finished else { return true }
                state.reader = continuation
                return false
            }
            if resume { continuation.resume() }
        }
    }

    /// A frame was taken off `frames`.
    func took() {
        let reader = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.waiting -= 1
            guard state.waiting < Self.limit else { return nil }
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume()
    }

    /// No more frames (the connection closed or failed); a waiting reader goes on.
    func finish() {
        input.finish()
        let reader = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume()
    }
}
