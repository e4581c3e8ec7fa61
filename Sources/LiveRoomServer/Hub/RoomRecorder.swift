import LiveRoomCore
import LiveRoomStore
import Logging
import ServiceLifecycle

/// Writes room history to the store in order, off the room hub, as a service: on shutdown
/// it writes what is queued before it returns.
final class RoomRecorder: Service {
    private let store: any RoomHistoryStore
    private let logger: Logger
    private let stream: AsyncStream<[RoomRecord]>
    private let continuation: AsyncStream<[RoomRecord]>.Continuation

    init(store: any RoomHistoryStore, logger: Logger) {
        self.store = store
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: [RoomRecord].self)
    }

    func record(_ records: [RoomRecord]) {
        guard !records.isEmpty else { return }
        continuation.yield(records)
    }

    /// No more records; ``run()`` returns once the queue is written.
    func finish() {
        continuation.finish()
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            for await records in stream {
                // A shared database that does not answer is tried again, a few times, 1 s apart.
                for attempt in 1...3 {
                    do {
                        try await store.append(records)
                        break
                    } catch {
                        logger.error("Cannot write room history", metadata: [LogKey.error: "\(error)", LogKey.attempt: "\(attempt)"])
                        if attempt < 3 { try? await Task.sleep(for: .seconds(1)) }
                    }
                }
            }
        } onGracefulShutdown: {
            self.finish()
        }
    }
}
