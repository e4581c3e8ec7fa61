import LiveRoomCluster
import LiveRoomPostgres
import Logging
import ServiceLifecycle

/// This node's part in the cluster: its registration and heartbeat, the home of each room it
/// is asked to enter, and releasing rooms that emptied here. Every database call that fails
/// is logged and the node goes on serving. While the database cannot be reached, a room goes
/// where it was last known to live (``knownHomes``), so rooms keep their one home through a
/// PostgreSQL restart; only a room this node never heard of is served here.
actor ClusterMembership {
    let store: any ClusterStore
    let nodeId: String
    /// The token relayed connections carry (``ClusterRouting/relayToken(secretKey:)``).
    let relayToken: String
    let logger: Logger
    private var registration: NodeRegistration?
    private var cpu = CPUSampler()
    private weak var hub: RoomHub?
    /// The rooms' homes as last read from the database (every few seconds, and at each
    /// enter), for when it cannot be reached: at most ``PostgresClusterStore/maxRows``.
    private var knownHomes: [String: NodeRegistration] = [:]

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
        let peers = (try? await hub.mediaSessions.media?.statistics())?.peers ?? 0
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
        let (store, nodeId, load) = (self.store, self.nodeId, await load())
        do {
            try await withTimeout(Self.databaseTimeout) { try await store.heartbeat(nodeId: nodeId, load: load) }
        } catch {
            logger.warning("Cluster heartbeat failed", metadata: [LogKey.node: "\(nodeId)", LogKey.error: "\(error)"])
        }
        if let onPeers, let view = try? await store.view() {
            onPeers(view.alive.filter { $0.nodeId != nodeId }.flatMap(\.registration.mediaAddresses))
        }
    }

    /// Every few seconds: releases claims left for this node that it has no room for (older
    /// than 10 s), reads the rooms' homes again for ``knownHomes``, and settles rooms open here
    /// that are not homed here (opened while the database could not be reached): each is
    /// claimed for this node, or, when another live node holds it, moved out (its clients
    /// reconnect and reach that node).
    func reconcile() async {
        guard let hub else { return }
        let open = Set(await hub.roomKeys())
        let (store, nodeId) = (self.store, self.nodeId)
        do {
            let (view, homes) = try await withTimeout(Self.databaseTimeout) {
                try await store.releaseStale(nodeId: nodeId, keeping: open, olderThanMs: 10_000)
                return (try await store.view(), try await store.homes())
            }
            knownHomes = Self.homes(homes, in: view)
            // PK links with rooms on nodes that died end, and WHEP sessions seated there.
            await hub.nodesAlive(Set(view.alive.map(\.nodeId)))
            let homed = Set(homes.filter { $0.nodeId == nodeId }.map(\.roomKey))
            for roomKey in open.subtracting(homed) {
                let home = try await withTimeout(Self.databaseTimeout) { try await store.claim(roomKey: roomKey, candidate: nodeId) }
                guard home != nodeId, await hub.roomKeys().contains(roomKey) else { continue }
                await hub.moveOut(roomKey)
            }
        } catch {
            logger.debug("Cluster reconciliation failed", metadata: [LogKey.error: "\(error)"])
        }
    }

    /// Each room's home node, for the rooms whose home is in `view`.
    static func homes(_ homes: [RoomHome], in view: ClusterView) -> [String: NodeRegistration] {
        let nodes = Dictionary(view.nodes.map { ($0.nodeId, $0.registration) }, uniquingKeysWith: { first, _ in first })
        var known: [String: NodeRegistration] = [:]
        for home in homes.prefix(PostgresClusterStore.maxRows) { known[home.roomKey] = nodes[home.nodeId] }
        return known
    }

    /// Where a connection entering `roomKey` is served: nil for this node, or the home node
    /// to relay to. A room with a live home stays there; otherwise the least loaded live node
    /// claims it (this node on a tie).
    func home(ofRoom roomKey: String) async -> NodeRegistration? {
        let (store, nodeId) = (self.store, self.nodeId)
        do {
            let (home, registration) = try await withTimeout(Self.databaseTimeout) {
                let view = try await store.view()
                let candidate = ClusterRules.chooseHome(in: view, askingNode: nodeId) ?? nodeId
                let home = try await store.claim(roomKey: roomKey, candidate: candidate)
                var registration = view.node(home)?.registration
                if registration == nil { registration = try await store.view().node(home)?.registration }
                return (home, registration)
            }
            if knownHomes.count < PostgresClusterStore.maxRows || knownHomes[roomKey] != nil { knownHomes[roomKey] = registration }
            return home == nodeId ? nil : registration
        } catch {
            if let known = knownHomes[roomKey] {
                logger.warning(
                    "Cluster placement failed; the room goes to its last known home",
                    metadata: [LogKey.room: "\(roomKey)", LogKey.node: "\(known.nodeId)", LogKey.error: "\(error)"])
                return known.nodeId == nodeId ? nil : known
            }
            logger.warning(
                "Cluster placement failed; the room is served here", metadata: [LogKey.room: "\(roomKey)", LogKey.error: "\(error)"])
            return nil
        }
    }

    /// The live node other than this one where `roomKey` lives now; nil when it lives here,
    /// has no home, or its home is dead. Claims nothing. Without the database, its last known home.
    func liveHome(ofRoom roomKey: String) async -> NodeRegistration? {
        let (store, nodeId) = (self.store, self.nodeId)
        do {
            return try await withTimeout(Self.databaseTimeout) { () async throws -> NodeRegistration? in
                guard let home = try await store.home(of: roomKey), home != nodeId else { return nil }
                let view = try await store.view()
                guard let node = view.node(home), view.isAlive(node) else { return nil }
                return node.registration
            }
        } catch {
            guard let known = knownHomes[roomKey], known.nodeId != nodeId else { return nil }
            return known
        }
    }

    /// Node `id` when it is alive; nil otherwise, or when the database cannot say.
    func liveNode(_ id: String) async -> NodeRegistration? {
        let store = self.store
        return try? await withTimeout(Self.databaseTimeout) { () async throws -> NodeRegistration? in
            let view = try await store.view()
            guard let node = view.node(id), view.isAlive(node) else { return nil }
            return node.registration
        }
    }

    /// How long a placement waits for the database before it goes by what the node knows: a
    /// client's enterRoom must not wait for a pool retrying connections to a database that is down.
    static let databaseTimeout: Duration = .seconds(2)

    /// The room emptied here: it has no home until its next enter.
    func release(roomKey: String) async {
        do {
            if knownHomes[roomKey]?.nodeId == nodeId { knownHomes[roomKey] = nil }
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
                if beats % 5 == 0 { await membership.reconcile() }
                try await Task.sleep(for: ClusterRules.heartbeatInterval)
            }
        }
        await membership.leave()
    }
}
