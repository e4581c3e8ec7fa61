/// Where the cluster's shared state lives: the nodes with their load and the rooms' home
/// nodes. LiveRoomPostgres's `PostgresClusterStore` is the one implementation; a node holds one.
public protocol ClusterStore: Sendable {
    /// Creates the tables if they are missing. Throws when the database cannot be reached.
    func prepare() async throws
    /// Registers (or re-registers) this node with a fresh heartbeat, and releases the rooms it
    /// was home of before (a restarted node holds none of them any more).
    func register(_ node: NodeRegistration, load: NodeLoad) async throws
    /// This node's heartbeat with its load.
    func heartbeat(nodeId: String, load: NodeLoad) async throws
    /// Every node, alive or dead, and the database's time.
    func view() async throws -> ClusterView
    /// The room's home node: the current one while it is alive, otherwise `candidate`, in one
    /// conditional write, so nodes racing for the room agree.
    func claim(roomKey: String, candidate: String) async throws -> String
    /// The room's home now, or nil when it has none.
    func home(of roomKey: String) async throws -> String?
    /// Forgets the room if `nodeId` is its home (it emptied there).
    func release(roomKey: String, nodeId: String) async throws
    /// Forgets the rooms homed on `nodeId` that are not in `keeping` and were claimed more
    /// than `olderThanMs` ago: claims for rooms that never opened there (a refused enterRoom).
    func releaseStale(nodeId: String, keeping: Set<String>, olderThanMs: Int64) async throws
    /// Every room with a home.
    func homes() async throws -> [RoomHome]
    /// Removes a node that is leaving cleanly, and the rooms it was home of.
    func deregister(nodeId: String) async throws
}
