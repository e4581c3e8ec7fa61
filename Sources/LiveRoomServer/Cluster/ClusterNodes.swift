import LiveRoomCluster
import Synchronization

/// The other nodes of a cluster, as the hub asks of them (``OtherNodes``): placement through
/// this node's membership, messages through the messenger, and the registrations of the nodes
/// it has named, kept for the messages that follow.
final class ClusterNodes: OtherNodes {
    let membership: ClusterMembership
    let messenger: NodeMessenger
    private let peers = Mutex<[String: NodeRegistration]>([:])
    private let ownMedia = Mutex<String?>(nil)

    init(membership: ClusterMembership, messenger: NodeMessenger) {
        self.membership = membership
        self.messenger = messenger
    }

    var nodeId: String { membership.nodeId }
    var mayHostTasks: Bool { true }
    var ownMediaAddress: String? { ownMedia.withLock { $0 } }

    /// Registers this node once its HTTP and media ports are known.
    func register(signalingURL: String, mediaAddresses: [String]) async {
        ownMedia.withLock { $0 = mediaAddresses.first }
        await membership.register(signalingURL: signalingURL, mediaAddresses: mediaAddresses)
    }

    func roomEmptied(_ roomKey: String) {
        Task { await membership.release(roomKey: roomKey) }
    }

    func liveHome(ofRoom roomKey: String) async -> NodeRegistration? {
        remember(await membership.liveHome(ofRoom: roomKey))
    }

    func liveNode(_ id: String) async -> NodeRegistration? {
        remember(await membership.liveNode(id))
    }

    func taskHost() async -> NodeRegistration? {
        guard let (view, _) = try? await membership.describe() else { return nil }
        let host = view.alive.filter { $0.nodeId != nodeId }.min { ($0.load.tasks, $0.nodeId) < ($1.load.tasks, $1.nodeId) }
        return remember(host?.registration)
    }

    func known(_ id: String) -> NodeRegistration? {
        peers.withLock { $0[id] }
    }

    func ask(_ node: NodeRegistration, _ message: NodeMessage) async -> (status: Int, body: String)? {
        await messenger.post(message, to: node)
    }

    func tell(_ node: String, _ message: NodeMessage) {
        guard let registration = known(node) else { return }
        messenger.enqueue(message, to: registration)
    }

    private func remember(_ node: NodeRegistration?) -> NodeRegistration? {
        if let node { peers.withLock { $0[node.nodeId] = node } }
        return node
    }
}
