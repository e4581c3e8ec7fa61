import LiveRoomCluster
import Logging
import NIOSSL
import PostgresNIO

/// The cluster store on PostgreSQL (postgres-nio's connection pool). Two tables, created at
/// start when missing:
///
/// - `liveroom_nodes`: one row per node (id, signaling URL, media addresses, load, heartbeat
///   time on the database's clock);
/// - `liveroom_rooms`: one row per room with a home (room key, home node, when claimed).
///
/// Liveness is judged on the database's clock (`now()`), so nodes' clocks may differ.
public final class PostgresClusterStore: ClusterStore {
    let client: PostgresClient
    let logger: Logger
    /// Most rows `view()` and `homes()` read: a bound on what a hostile or broken table costs.
    public static let maxRows = 100_000
    /// The advisory lock under which the tables are made, one node at a time (the shop's
    /// tables too).
    static let migrationLock: Int64 = 1600016

    public init(url: ClusterDatabaseURL, logger: Logger) {
        self.client = PostgresClient(configuration: url.clientConfiguration(connectTimeout: .seconds(5), maxConnections: 8), backgroundLogger: logger)
        self.logger = logger
    }

    /// Runs the connection pool until the task is cancelled; every other call needs it running.
    public func run() async {
        await client.run()
    }

    /// The dead-after interval as PostgreSQL's interval text.
    static let deadInterval = "\(ClusterRules.deadAfterMs) milliseconds"

    public func prepare() async throws {
        try await client.withConnection { connection in
            // One node creates the tables at a time: CREATE TABLE IF NOT EXISTS can still race.
            _ = try await connection.query("BEGIN", logger: logger)
            do {
                _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
                _ = try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS liveroom_nodes (
                        node_id text PRIMARY KEY,
                        signaling_url text NOT NULL,
                        media_addresses text[] NOT NULL DEFAULT '{}',
                        rooms integer NOT NULL DEFAULT 0,
                        peers integer NOT NULL DEFAULT 0,
                        tasks integer NOT NULL DEFAULT 0,
                        cpu_percent double precision NOT NULL DEFAULT 0,
                        registered_at timestamptz NOT NULL DEFAULT now(),
                        heartbeat_at timestamptz NOT NULL DEFAULT now()
                    )
                    """, logger: logger)
                _ = try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS liveroom_rooms (
                        room_key text PRIMARY KEY,
                        home_node text NOT NULL,
                        claimed_at timestamptz NOT NULL DEFAULT now()
                    )
                    """, logger: logger)
                _ = try await connection.query("CREATE INDEX IF NOT EXISTS liveroom_rooms_home ON liveroom_rooms (home_node)", logger: logger)
                _ = try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    public func register(_ node: NodeRegistration, load: NodeLoad) async throws {
        try await client.query(
            """
            INSERT INTO liveroom_nodes (node_id, signaling_url, media_addresses, rooms, peers, tasks, cpu_percent, registered_at, heartbeat_at)
            VALUES (\(node.nodeId), \(node.signalingURL), \(node.mediaAddresses), \(load.rooms), \(load.peers), \(load.tasks), \(load.cpuPercent), now(), now())
            ON CONFLICT (node_id) DO UPDATE SET signaling_url = EXCLUDED.signaling_url, media_addresses = EXCLUDED.media_addresses,
                rooms = EXCLUDED.rooms, peers = EXCLUDED.peers, tasks = EXCLUDED.tasks, cpu_percent = EXCLUDED.cpu_percent,
                registered_at = now(), heartbeat_at = now()
            """, logger: logger)
        try await client.query("DELETE FROM liveroom_rooms WHERE home_node = \(node.nodeId)", logger: logger)
    }

    public func heartbeat(nodeId: String, load: NodeLoad) async throws {
        try await client.query(
            """
            UPDATE liveroom_nodes SET rooms = \(load.rooms), peers = \(load.peers), tasks = \(load.tasks), cpu_percent = \(load.cpuPercent),
                heartbeat_at = now()
            WHERE node_id = \(nodeId)
            """, logger: logger)
    }

    public func view() async throws -> ClusterView {
        let rows = try await client.query(
            """
            SELECT n.node_id, n.signaling_url, n.media_addresses, n.rooms, n.peers, n.tasks, n.cpu_percent,
                (extract(epoch FROM n.heartbeat_at) * 1000)::bigint,
                (SELECT count(*) FROM liveroom_rooms r WHERE r.home_node = n.node_id)
            FROM liveroom_nodes n ORDER BY n.node_id LIMIT \(Self.maxRows)
            """, logger: logger)
        var nodes: [ClusterNode] = []
        for try await (id, url, media, rooms, peers, tasks, cpu, heartbeat, homed) in rows.decode(
            (String, String, [String], Int32, Int32, Int32, Double, Int64, Int64).self)
        {
            nodes.append(
                ClusterNode(
                    registration: NodeRegistration(nodeId: id, signalingURL: url, mediaAddresses: media),
                    load: NodeLoad(rooms: Int(rooms), peers: Int(peers), tasks: Int(tasks), cpuPercent: cpu), homedRooms: Int(homed),
                    lastHeartbeatMs: heartbeat))
        }
        let clock = try await client.query(
            "SELECT (extract(epoch FROM now()) * 1000)::bigint, (extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint", logger: logger)
        for try await (now, started) in clock.decode((Int64, Int64).self) {
            return ClusterView(nodes: nodes, nowMs: now, databaseStartedMs: started)
        }
        throw ClusterStoreError(description: "the database did not tell its time")
    }

    public func claim(roomKey: String, candidate: String) async throws -> String {
        // Bounded: each round either writes the row or reads a home that was there a moment ago.
        for _ in 0..<5 {
            // One conditional write: a new room, or a room whose home has not heartbeated for
            // the dead interval, goes to the candidate; a room with a live home is left alone
            // (and RETURNING gives nothing). Concurrent claims serialise on the row. As in
            // ClusterRules.isAlive, the database's own start counts as a heartbeat of every node.
            let claimed = try await client.query(
                """
                INSERT INTO liveroom_rooms AS r (room_key, home_node, claimed_at) VALUES (\(roomKey), \(candidate), now())
                ON CONFLICT (room_key) DO UPDATE SET home_node = EXCLUDED.home_node, claimed_at = now()
                WHERE NOT EXISTS (
                    SELECT 1 FROM liveroom_nodes n
                    WHERE n.node_id = r.home_node AND greatest(n.heartbeat_at, pg_postmaster_start_time()) > now() - \(Self.deadInterval)::interval)
                RETURNING r.home_node
                """, logger: logger)
            for try await home in claimed.decode(String.self) { return home }
            if let home = try await home(of: roomKey) { return home }
        }
        throw ClusterStoreError(description: "room \(roomKey) changed home five times while being claimed")
    }

    public func home(of roomKey: String) async throws -> String? {
        let rows = try await client.query("SELECT home_node FROM liveroom_rooms WHERE room_key = \(roomKey)", logger: logger)
        for try await home in rows.decode(String.self) { return home }
        return nil
    }

    public func release(roomKey: String, nodeId: String) async throws {
        try await client.query("DELETE FROM liveroom_rooms WHERE room_key = \(roomKey) AND home_node = \(nodeId)", logger: logger)
    }

    public func releaseStale(nodeId: String, keeping: Set<String>, olderThanMs: Int64) async throws {
        let keep = Array(keeping)
        try await client.query(
            """
            DELETE FROM liveroom_rooms WHERE home_node = \(nodeId) AND claimed_at < now() - \("\(olderThanMs) milliseconds")::interval
                AND NOT (room_key = ANY(\(keep)))
            """, logger: logger)
    }

    public func homes() async throws -> [RoomHome] {
        let rows = try await client.query(
            "SELECT room_key, home_node FROM liveroom_rooms ORDER BY room_key LIMIT \(Self.maxRows)", logger: logger)
        var homes: [RoomHome] = []
        for try await (room, node) in rows.decode((String, String).self) { homes.append(RoomHome(roomKey: room, nodeId: node)) }
        return homes
    }

    public func deregister(nodeId: String) async throws {
        try await client.query("DELETE FROM liveroom_rooms WHERE home_node = \(nodeId)", logger: logger)
        try await client.query("DELETE FROM liveroom_nodes WHERE node_id = \(nodeId)", logger: logger)
    }
}

/// A cluster store call that could not be carried out.
public struct ClusterStoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(description: String) { self.description = description }
}

extension ClusterStore {
    /// ``prepare()`` that gives up after `timeout`: an unreachable database is an error at
    /// start, not a hang (the pool keeps retrying connections otherwise).
    public func prepare(timeout: Duration) async throws {
        try await withTimeout(timeout) { try await self.prepare() }
    }
}

/// `body`'s result, or ``ClusterStoreError`` once `timeout` has passed (`body` is cancelled):
/// a database call waiting for a connection the pool cannot make does not hold up its caller.
public func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard case let result?? = try await group.next() else {
            throw ClusterStoreError(description: "no answer within \(timeout)")
        }
        return result
    }
}
