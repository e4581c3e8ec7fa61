import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import Logging
import NIOCore
import Synchronization

/// The one client for messages between nodes (``NodeMessage``, `POST /v1/cluster/message` with
/// the relay token): PK messages to the home nodes of linked rooms, task messages between a
/// task's home and its host, WHEP sessions' ends. A request that needs its answer (a link, a
/// task's start) is posted at once; the rest go one at a time per node, in the order they were
/// made, so a node never hears an old state after a newer one. A node that does not take a message
/// within ``timeout``, or has ``maxQueued`` waiting, is reported lost (`onLost`): every link
/// with it ends here.
final class NodeMessenger: Sendable {
    let nodeId: String
    private let relayToken: String
    private let logger: Logger
    private let onLost: @Sendable (String) async -> Void
    private let queues = Mutex<[String: AsyncStream<(NodeMessage, NodeRegistration)>.Continuation]>([:])
    private let waiting = Mutex<[String: Int]>([:])

    static let timeout = Duration.seconds(5)
    /// Most messages that may wait for one node.
    static let maxQueued = 1024

    init(nodeId: String, relayToken: String, logger: Logger, onLost: @escaping @Sendable (String) async -> Void) {
        self.nodeId = nodeId
        self.relayToken = relayToken
        self.logger = logger
        self.onLost = onLost
    }

    /// The largest answer read.
    static let maxAnswerBytes = 16 << 10

    /// Posts `message` to `node`: its answer's status and body, or nil when it gave none in time.
    func post(_ message: NodeMessage, to node: NodeRegistration) async -> (status: Int, body: String)? {
        guard let target = HTTPTarget(url: node.signalingURL) else { return nil }
        do {
            let client = HTTPPostClient(target: target, timeout: Self.timeout, maxResponseBytes: Self.maxAnswerBytes)
            let answer = try await client.send(
                .POST, Array(message.text.utf8),
                headers: [("Content-Type", "application/json"), (ClusterRouting.tokenHeader, relayToken)], path: NodeMessage.path)
            return answer.truncated ? nil : (answer.status, String(buffer: answer.body))
        } catch {
            logger.info("Message to a node not delivered", metadata: [LogKey.node: "\(node.nodeId)", LogKey.error: "\(error)"])
            return nil
        }
    }

    /// Queues `message` for `node`, after the messages already waiting for it.
    func enqueue(_ message: NodeMessage, to node: NodeRegistration) {
        let count = waiting.withLock { counts -> Int in
            counts[node.nodeId, default: 0] += 1
            return counts[node.nodeId]!
        }
        guard count <= Self.maxQueued else {
            waiting.withLock { $0[node.nodeId, default: 1] -= 1 }
            logger.warning("Too many messages wait for a node; it counts as lost", metadata: [LogKey.node: "\(node.nodeId)"])
            Task { await onLost(node.nodeId) }
            return
        }
        queue(for: node.nodeId).yield((message, node))
    }

    private func queue(for node: String) -> AsyncStream<(NodeMessage, NodeRegistration)>.Continuation {
        queues.withLock { queues in
            if let queue = queues[node] { return queue }
            let (stream, continuation) = AsyncStream<(NodeMessage, NodeRegistration)>.makeStream()
            queues[node] = continuation
            Task { [self] in
                for await (message, registration) in stream {
                    let answer = await post(message, to: registration)
                    waiting.withLock { $0[node, default: 1] -= 1 }
                    if answer?.status != 200 {
                        logger.warning("A node did not take a message; it counts as lost", metadata: [LogKey.node: "\(node)"])
                        await onLost(node)
                    }
                }
            }
            return continuation
        }
    }

    /// Stops every queue (shutdown).
    func finish() {
        queues.withLock { queues in
            for queue in queues.values { queue.finish() }
            queues = [:]
        }
    }
}
