import LiveRoomCluster
import LiveRoomProtocol
import LiveRoomTransport
import LiveRoomWire

/// What the hub asks of the other nodes: where a room lives, the nodes it has reached (the
/// homes of linked rooms, the hosts of tasks) and their media addresses, and messages to them.
/// A single node has none (``SingleNode``); a cluster node's are ``ClusterNodes``. The hub's
/// code is the same for both: it asks, and alone it hears that no other node exists.
protocol OtherNodes: Sendable {
    /// This node's id in the messages it sends; "" alone.
    var nodeId: String { get }
    /// Whether a task over this node's encoding budget may run on another node.
    var mayHostTasks: Bool { get }
    /// This node's media address as the others know it (`host:port`); nil alone.
    var ownMediaAddress: String? { get }

    /// The room emptied here: it has no home until its next enter.
    func roomEmptied(_ roomKey: String)
    /// The live node other than this one where `roomKey` lives; nil when it lives here or nowhere.
    func liveHome(ofRoom roomKey: String) async -> NodeRegistration?
    /// Node `id` when it is alive.
    func liveNode(_ id: String) async -> NodeRegistration?
    /// The live node other than this one that runs the fewest tasks (then the lowest id).
    func taskHost() async -> NodeRegistration?
    /// A node the three calls above have named, as it was then.
    func known(_ id: String) -> NodeRegistration?

    /// Posts `message` to `node`: its answer's status and body, or nil when it gave none in time.
    func ask(_ node: NodeRegistration, _ message: NodeMessage) async -> (status: Int, body: String)?
    /// Queues `message` for a known node, after those already waiting for it; nothing when the
    /// node is not known.
    func tell(_ node: String, _ message: NodeMessage)
}

/// A server alone: every room is here, and there is nobody to ask.
struct SingleNode: OtherNodes {
    var nodeId: String { "" }
    var mayHostTasks: Bool { false }
    var ownMediaAddress: String? { nil }
    func roomEmptied(_ roomKey: String) {}
    func liveHome(ofRoom roomKey: String) async -> NodeRegistration? { nil }
    func liveNode(_ id: String) async -> NodeRegistration? { nil }
    func taskHost() async -> NodeRegistration? { nil }
    func known(_ id: String) -> NodeRegistration? { nil }
    func ask(_ node: NodeRegistration, _ message: NodeMessage) async -> (status: Int, body: String)? { nil }
    func tell(_ node: String, _ message: NodeMessage) {}
}

extension OtherNodes {
    /// The media address of node `home`, where a PK anchor of a linked room publishes; nil when
    /// that is this node (or there is no such node).
    func mediaAddress(ofHome home: String?) -> Result<TransportAddress, LiveRoomError>? {
        guard let node = home, node != nodeId else { return nil }
        guard let address = known(node)?.mediaAddresses.lazy.compactMap(NodeMediaRelay.address).first else {
            return .failure(LiveRoomError(ErrorCode.badSessionDescription, "node \(node) of the PK anchor has no usable media address"))
        }
        return .success(address)
    }
}
