import LiveRoomCluster
import Logging
import ServiceLifecycle

/// This node's part in the cluster: its registration and heartbeat, the home of each room it
/// is asked to enter, and releasing rooms that emptied here. Every database call that fails
/// is logged and the node goes on serving: a room whose home cannot be learnt is served here.
actor ClusterMembership {
    let store: any ClusterStore
    let nodeId: String
    /// The token relayed connections carry (``ClusterRouting/relayToken(secretKey:)``).
    let relayToken: String
    let logger: Logger
    private var registration: NodeRegistration?
    private var cpu = CPUSampler()
    private weak var hub: RoomHub?

    init(store: any ClusterStore, nodeId: String, relayToken: String, logger: Logger) {
        self.store = store
        self.nodeId = nodeId
        self.relayToken = relayToken
        self.logger = logger
    }

    func attach(_ hub: RoomHub) {
        self.hub = hub
    }

    /// Registers the node once its HTTP and media ports are known.
    func register(signalingURL: String, mediaAddresses: [String]) async {
        let registration = NodeRegistration(nodeId: nodeId, signalingURL: signalingURL, mediaAddresses: mediaAddresses)
        self.registration = registration
        do {
            try await store.register(registration, load: await load())
            logger.notice("Cluster node registered", metadata: [LogKey.node: "\(nodeId)", LogKey.url: "\(signalingURL)"])
        } catch {
            logger.error("Cluster registration failed; retried with the heartbeat", metadata: [LogKey.node: "\(nodeId)", LogKey.error: "\(error)"])
            self.registration = nil
            self.pendingRegistration = registration
        }
    }

    private var pendingRegistration: NodeRegistration?
    /// Told the other live nodes' media addresses after each heartbeat (the node relay's peers).
    private var onPeers: (@Sendable ([String]) -> Void)?

    func watchPeers(_ onPeers: @escaping @Sendable ([String]) -> Void) {
        self.onPeers = onPeers
    }

    /// The node's load now.
    func load() async -> NodeLoad {
        let percent = cpu.sample()
        guard let hub else { return NodeLoad(cpuPercent: percent) }
        let rooms = await hub.metricsSnapshot()
        let peers = (try? await hub.media?.statistics())?.peers ?? 0
        return NodeLoad(rooms: rooms.rooms, peers: peers, tasks: rooms.publishTasks, cpuPercent: percent)
    }

    /// One heartbeat (or the registration that failed before), then the release of rooms
    /// claimed for this node that never opened here (an enterRoom that was refused).
    func beat() async {
        if let pending = pendingRegistration {
            do {
                try await store.register(pending, load: await load())
                registration = pending
                pendingRegistration = nil
                logger.notice("Cluster node registered", metadata: [LogKey.node: "\(nodeId)"])
            } catch {
                logger.warning("Cluster registration failed", metadata: [LogKey.node: "\(nodeId)", LogKey.error: "\(error)"])
            }
            return
        }
        guard registration != nil else { return }
        do {
            try await store.heartbeat(nodeId: nodeId, load: await load())
        } catch {
            logger.warning("Cluster heartbeat failed", metadata: [LogKey.node: "\(nodeId)", LogKey.error: "\(error)"])
        }
        if let onPeers, let view = try? await store.view() {
            onPeers(view.alive.filter { $0.nodeId != nodeId }.flatMap(\.registration.mediaAddresses))
        }
    }

    /// Claims left for this node that it has no room for, older than 10 s.
    func releaseStaleClaims() async {
        guard let hub else { return }
        let open = Set(await hub.roomKeys())
        do {
            try await store.releaseStale(nodeId: nodeId, keeping: open, olderThanMs: 10_000)
        } catch {
            logger.debug("Cluster stale claim release failed", metadata: [LogKey.error: "\(error)"])
        }
    }

    /// Where a connection entering `roomKey` is served: nil for this node, or the home node
    /// to relay to. A room with a live home stays there; otherwise the least loaded live node
    /// claims it (this node on a tie).
    func home(ofRoom roomKey: String) async -> NodeRegistration? {
        do {
            let view = try await store.view()
            let candidate = ClusterRules.chooseHome(in: view, askingNode: nodeId) ?? nodeId
            let home = try await store.claim(roomKey: roomKey, candidate: candidate)
            guard home != nodeId else { return nil }
            if let node = view.node(home) { return node.registration }
            return try await store.view().node(home)?.registration
        } catch {
            logger.warning(
                "Cluster placement failed; the room is served here", metadata: [LogKey.room: "\(roomKey)", LogKey.error: "\(error)"])
            return nil
        }
    }

    /// The room emptied here: it has no home until its next enter.
    func release(roomKey: String) async {
        do {
            try await store.release(roomKey: roomKey, nodeId: nodeId)
        } catch {
            logger.warning("Cluster room release failed", metadata: [LogKey.room: "\(roomKey)", LogKey.error: "\(error)"])
        }
    }

    /// Leaves the cluster on a clean stop: the node and its rooms are removed.
    func leave() async {
        do {
            try await store.deregister(nodeId: nodeId)
        } catch {
            logger.warning("Cluster deregistration failed", metadata: [LogKey.node: "\(nodeId)", LogKey.error: "\(error)"])
        }
    }

    /// The nodes and room homes, for `GET /v1/cluster/nodes`.
    func describe() async throws -> (ClusterView, [RoomHome]) {
        (try await store.view(), try await store.homes())
    }
}

/// Heartbeats every second until shutdown; then the node leaves the cluster.
struct ClusterService: Service {
    let membership: ClusterMembership

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var beats = 0
            while !Task.isCancelled {
                await membership.beat()
                beats += 1
                if beats % 5 == 0 { await membership.releaseStaleClaims() }
                try await Task.sleep(for: ClusterRules.heartbeatInterval)
            }
        }
        await membership.leave()
    }
}
