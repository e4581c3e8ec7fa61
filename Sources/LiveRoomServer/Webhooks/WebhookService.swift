import Foundation
import LiveRoomStore
import LiveRoomWebhooks
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Delivers webhooks from the durable outbox, as a service.
///
/// The hub hands events over with ``enqueue(_:)`` and never waits. A writer stores them in
/// batches, each the exact signed body, one transaction per batch; a dispatcher posts the
/// stored rows, each room's in order and one at a time (``WebhookDeliveryStateMachine``),
/// retrying failures with a backoff for as long as it takes, and deletes what was answered
/// 2xx. Rows left at a stop are delivered after the next start. On shutdown the writer stores
/// what is queued before the service returns.
final class WebhookService: Service {
    /// Running totals for `GET /metrics`.
    struct Statistics: Sendable {
        var pending = 0
        var delivered = 0
        var failures = 0
        var dropped = 0
    }

    /// This node's SQLite outbox, or in cluster mode the shared one in PostgreSQL.
    private let store: any WebhookOutbox
    private let client: HTTPPostClient
    private let key: String
    private let sdkAppId: UInt64
    private let maxPending: Int
    private let maxInFlight: Int
    private let logger: Logger
    /// Events handed over and not yet stored; the writer takes them all at once.
    private let queue = Mutex<[WebhookEvent]>([])
    private let wake: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
    private let totals = Mutex(Statistics())

    init(store: any WebhookOutbox, client: HTTPPostClient, key: String, sdkAppId: UInt64, maxPending: Int, maxInFlight: Int = 8, logger: Logger) {
        self.store = store
        self.client = client
        self.key = key
        self.sdkAppId = sdkAppId
        self.maxPending = maxPending
        self.maxInFlight = maxInFlight
        self.logger = logger
        (wake, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var statistics: Statistics { totals.withLock { $0 } }

    /// Hands events over without waiting. Beyond ``maxPending`` waiting in memory they are
    /// counted as dropped (the store applies the same cap to stored rows).
    func enqueue(_ events: [WebhookEvent]) {
        guard !events.isEmpty else { return }
        let dropped = queue.withLock { queue in
            let room = max(0, maxPending - queue.count)
            queue += events.prefix(room)
            return events.count - min(room, events.count)
        }
        if dropped > 0 { countDropped(dropped) }
        wakeContinuation.yield()
    }

    private func countDropped(_ count: Int) {
        totals.withLock { $0.dropped += count }
        logger.error("Webhooks dropped: too many wait", metadata: [LogKey.webhookCount: "\(count)", LogKey.limit: "\(maxPending)"])
    }

    private enum DeliveryEvent: Sendable {
        case stored([WebhookOutboxRow])
        case delivered(roomKey: String)
        case failed(roomKey: String)
        case retryDue(roomKey: String)
    }

    func run() async throws {
        let (events, eventsContinuation) = AsyncStream.makeStream(of: DeliveryEvent.self)
        var machine = WebhookDeliveryStateMachine(maxInFlight: maxInFlight)
        // Rows a previous run left: delivered first, in order.
        var resumed: [WebhookOutboxRow] = []
        while true {
            let page = try await store.pendingWebhooks(after: resumed.last?.id ?? 0, limit: 10_000)
            resumed += page
            if page.count < 10_000 { break }
        }
        if !resumed.isEmpty { logger.notice("Resuming webhook delivery", metadata: [LogKey.webhookCount: "\(resumed.count)"]) }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.writeQueued(to: eventsContinuation) }
                if store.isShared {
                    // Cluster mode: rows a dead node stored are delivered from here.
                    group.addTask { await self.adoptOrphans(to: eventsContinuation) }
                }
                var actions = machine.stored(resumed.map { .init(id: $0.id, roomKey: $0.roomKey) })
                var iterator = events.makeAsyncIterator()
                while true {
                    totals.withLock { $0.pending = machine.pendingCount }
                    for action in actions { await carryOut(action, events: eventsContinuation, group: &group) }
                    guard let event = await iterator.next() else { break }
                    switch event {
                    case .stored(let rows): actions = machine.stored(rows.map { .init(id: $0.id, roomKey: $0.roomKey) })
                    case .delivered(let roomKey): actions = machine.delivered(roomKey: roomKey)
                    case .failed(let roomKey): actions = machine.failed(roomKey: roomKey, random: Double.random(in: 0...1))
                    case .retryDue(let roomKey): actions = machine.retryDue(roomKey)
                    }
                }
                // Stopping: attempts in flight end (their rows stay for the next run).
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.wakeContinuation.finish()
        }
    }

    /// How often a node looks for webhooks a dead node left (cluster mode).
    static let adoptionInterval = Duration.seconds(2)

    /// Takes over dead nodes' webhooks every ``adoptionInterval`` until the service stops.
    private func adoptOrphans(to events: AsyncStream<DeliveryEvent>.Continuation) async {
        while !Task.isCancelled {
            guard (try? await Task.sleep(for: Self.adoptionInterval)) != nil else { return }
            do {
                let rows = try await store.adoptOrphanedWebhooks()
                guard !rows.isEmpty else { continue }
                logger.notice("Delivering webhooks a dead node stored", metadata: [LogKey.webhookCount: "\(rows.count)"])
                events.yield(.stored(rows))
            } catch {
                logger.warning("Cannot look for webhooks of dead nodes", metadata: [LogKey.error: "\(error)"])
            }
        }
    }

    /// Stores what was handed over, batch by batch, until the service stops; then the rest.
    private func writeQueued(to events: AsyncStream<DeliveryEvent>.Continuation) async {
        for await _ in wake {
            await writeBatch(to: events)
        }
        await writeBatch(to: events)
        events.finish()
    }

    private func writeBatch(to events: AsyncStream<DeliveryEvent>.Continuation) async {
        let batch = queue.withLock { queue in
            defer { queue = [] }
            return queue
        }
        guard !batch.isEmpty else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let bodies = batch.map { (roomKey: $0.roomKey, body: $0.body(callbackTs: now, uniqueId: UInt64.random(in: 1...(1 << 53)))) }
        do {
            let (stored, dropped) = try await store.storeWebhooks(bodies, maxPending: maxPending)
            if dropped > 0 { countDropped(dropped) }
            events.yield(.stored(stored))
        } catch {
            countDropped(batch.count)
            logger.error("Cannot store webhooks", metadata: [LogKey.error: "\(error)"])
        }
    }

    private func carryOut(
        _ action: WebhookDeliveryStateMachine.Action, events: AsyncStream<DeliveryEvent>.Continuation, group: inout TaskGroup<Void>
    ) async {
        switch action {
        case .send(let entry, let attempt):
            group.addTask {
                let ok = await self.send(entry, attempt: attempt)
                events.yield(ok ? .delivered(roomKey: entry.roomKey) : .failed(roomKey: entry.roomKey))
            }
        case .delete(let id):
            do {
                try await store.deleteWebhook(id)
            } catch {
                logger.error("Cannot delete a delivered webhook", metadata: [LogKey.error: "\(error)"])
            }
            totals.withLock { $0.delivered += 1 }
        case .retry(let roomKey, let after):
            group.addTask {
                guard (try? await Task.sleep(for: after)) != nil else { return }
                events.yield(.retryDue(roomKey: roomKey))
            }
        }
    }

    /// One attempt: true when answered 2xx (or the row is gone already).
    private func send(_ entry: WebhookDeliveryStateMachine.Entry, attempt: Int) async -> Bool {
        let body: [UInt8]
        do {
            guard let stored = try await store.webhookBody(entry.id) else { return true }
            body = stored
        } catch {
            logger.error("Cannot read a webhook", metadata: [LogKey.error: "\(error)"])
            totals.withLock { $0.failures += 1 }
            return false
        }
        let metadata: Logger.Metadata = [LogKey.room: "\(entry.roomKey)", LogKey.webhookId: "\(entry.id)", LogKey.attempt: "\(attempt)"]
        do {
            let status = try await client.post(body, headers: [("Sign", WebhookSignature.sign(body, key: key)), ("SdkAppId", String(sdkAppId))]).status
            if (200..<300).contains(status) {
                logger.debug("Webhook delivered", metadata: metadata)
                return true
            }
            totals.withLock { $0.failures += 1 }
            logger.warning("Webhook refused; retrying", metadata: metadata.merging([LogKey.status: "\(status)"]) { $1 })
        } catch {
            guard !Task.isCancelled else { return false }
            totals.withLock { $0.failures += 1 }
            logger.warning("Webhook not delivered; retrying", metadata: metadata.merging([LogKey.error: "\(error)"]) { $1 })
        }
        return false
    }
}
