/// What a node carries now, as it reports in each heartbeat.
public struct NodeLoad: Sendable, Hashable {
    /// Rooms the node holds.
    public var rooms: Int
    /// Peer connections (publishers and subscribers) on its media port.
    public var peers: Int
    /// Publish media stream tasks it runs.
    public var tasks: Int
    /// The server process's CPU use since the last heartbeat, in percent of one core.
    public var cpuPercent: Double

    public init(rooms: Int = 0, peers: Int = 0, tasks: Int = 0, cpuPercent: Double = 0) {
        self.rooms = rooms
        self.peers = peers
        self.tasks = tasks
        self.cpuPercent = cpuPercent
    }
}

/// How a node describes itself to the others.
public struct NodeRegistration: Sendable, Hashable {
    /// The node's id (``ClusterRules/isValidNodeId(_:)``).
    public var nodeId: String
    /// The `http(s)://host:port` other nodes open signaling WebSockets to (`/ws`).
    public var signalingURL: String
    /// Where clients reach its media port: `address:port` for each advertised address.
    public var mediaAddresses: [String]

    public init(nodeId: String, signalingURL: String, mediaAddresses: [String]) {
        self.nodeId = nodeId
        self.signalingURL = signalingURL
        self.mediaAddresses = mediaAddresses
    }
}

/// A node as the cluster database has it.
public struct ClusterNode: Sendable, Hashable {
    public var registration: NodeRegistration
    public var load: NodeLoad
    /// Rooms whose home the node is, counted in the rooms table (fresher than ``load``'s rooms).
    public var homedRooms: Int
    /// The last heartbeat, in milliseconds since 1970 on the database's clock.
    public var lastHeartbeatMs: Int64

    public var nodeId: String { registration.nodeId }

    public init(registration: NodeRegistration, load: NodeLoad, homedRooms: Int, lastHeartbeatMs: Int64) {
        self.registration = registration
        self.load = load
        self.homedRooms = homedRooms
        self.lastHeartbeatMs = lastHeartbeatMs
    }
}

/// The nodes at one moment, with that moment on the database's clock (every liveness
/// judgement compares heartbeats with the same clock that stamped them).
public struct ClusterView: Sendable, Hashable {
    public var nodes: [ClusterNode]
    public var nowMs: Int64
    /// When the database server last started, on its clock (see ``ClusterRules/isAlive(lastHeartbeatMs:nowMs:databaseStartedMs:)``).
    public var databaseStartedMs: Int64

    public init(nodes: [ClusterNode], nowMs: Int64, databaseStartedMs: Int64 = 0) {
        self.nodes = nodes
        self.nowMs = nowMs
        self.databaseStartedMs = databaseStartedMs
    }

    /// Whether `node` is alive at ``nowMs``.
    public func isAlive(_ node: ClusterNode) -> Bool {
        ClusterRules.isAlive(lastHeartbeatMs: node.lastHeartbeatMs, nowMs: nowMs, databaseStartedMs: databaseStartedMs)
    }

    /// The nodes alive at ``nowMs``.
    public var alive: [ClusterNode] { nodes.filter(isAlive) }

    public func node(_ id: String) -> ClusterNode? { nodes.first { $0.nodeId == id } }
}

/// A room's home node.
public struct RoomHome: Sendable, Hashable {
    /// The room's key (LiveRoomProtocol's `RoomID.key`: `*123` for numeric room 123).
    public var roomKey: String
    public var nodeId: String

    public init(roomKey: String, nodeId: String) {
        self.roomKey = roomKey
        self.nodeId = nodeId
    }
}
