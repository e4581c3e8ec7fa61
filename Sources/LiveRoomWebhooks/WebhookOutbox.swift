/// One webhook in the outbox: its row id (the delivery order) and its room.
public struct WebhookOutboxRow: Sendable, Hashable {
    public var id: Int64
    public var roomKey: String

    public init(id: Int64, roomKey: String) {
        self.id = id
        self.roomKey = roomKey
    }
}

/// Where the webhook outbox lives: this node's SQLite database (``RoomStore``), or in cluster
/// mode PostgreSQL, where each row carries the node that stored it and the rows of a dead node
/// are taken over by a live one.
public protocol WebhookOutbox: Sendable {
    /// Stores webhook bodies in order, in one transaction, as long as fewer than `maxPending`
    /// rows of this node wait; the rest are not stored. Returns the rows stored and how many were not.
    func storeWebhooks(_ events: [(roomKey: String, body: [UInt8])], maxPending: Int) async throws -> (stored: [WebhookOutboxRow], dropped: Int)
    /// This node's waiting webhooks after row `afterId`, oldest first.
    func pendingWebhooks(after afterId: Int64, limit: Int) async throws -> [WebhookOutboxRow]
    /// The stored body of a waiting webhook.
    func webhookBody(_ id: Int64) async throws -> [UInt8]?
    /// Forgets a delivered webhook.
    func deleteWebhook(_ id: Int64) async throws
    /// How many of this node's webhooks wait.
    func pendingWebhookCount() async throws -> Int
    /// Whether other nodes' rows can be left for this one (a shared outbox): then
    /// ``adoptOrphanedWebhooks()`` is called every few seconds.
    var isShared: Bool { get }
    /// Takes over the rows of nodes that are dead, in one conditional update, and returns them
    /// (now this node's), oldest first.
    func adoptOrphanedWebhooks() async throws -> [WebhookOutboxRow]
}
