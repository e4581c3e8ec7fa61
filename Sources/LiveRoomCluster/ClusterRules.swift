/// The cluster's pure rules: which nodes are alive, where a new room goes, what a claim of a
/// room ends in. The PostgreSQL store's SQL does the same; these are what the server and the
/// tests reason with.
public enum ClusterRules {
    /// How often a node heartbeats.
    public static let heartbeatInterval: Duration = .seconds(1)
    /// A node whose last heartbeat is older than this is dead.
    public static let deadAfterMs: Int64 = 3000

    /// Whether a node that last heartbeated at `lastHeartbeatMs` is alive at `nowMs` (both on
    /// the database's clock). A heartbeat from the future (clock step) counts as fresh. The
    /// database cannot have heard a node while it was down: a node is not judged dead until
    /// the dead interval has passed since the database (re)started at `databaseStartedMs`, so a
    /// restart of PostgreSQL does not make every node look dead and its rooms claimable.
    public static func isAlive(lastHeartbeatMs: Int64, nowMs: Int64, databaseStartedMs: Int64 = 0) -> Bool {
        nowMs &- max(lastHeartbeatMs, databaseStartedMs) < deadAfterMs
    }

    /// The node a new room should live on, chosen among the live nodes by load: fewest rooms
    /// homed, then fewest peers, then fewest tasks, then lowest CPU; on a tie the asking node
    /// (no relay needed), then the lowest id. Nil when no node is alive.
    public static func chooseHome(in view: ClusterView, askingNode: String) -> String? {
        let alive = view.alive
        return alive.min { a, b in
            let left = (a.homedRooms, a.load.peers, a.load.tasks, cpuBand(a.load.cpuPercent))
            let right = (b.homedRooms, b.load.peers, b.load.tasks, cpuBand(b.load.cpuPercent))
            if left != right { return left < right }
            if (a.nodeId == askingNode) != (b.nodeId == askingNode) { return a.nodeId == askingNode }
            return a.nodeId < b.nodeId
        }?.nodeId
    }

    /// CPU in bands of 10 %: a few percent of jitter between heartbeats does not move rooms.
    static func cpuBand(_ percent: Double) -> Int {
        guard percent.isFinite, percent > 0 else { return 0 }
        return Int(min(percent, 100_000) / 10)
    }

    /// What a conditional claim of a room does, given the room's current home (nil: none) and
    /// whether that home is alive: a room with a live home keeps it (whoever asks), one with no
    /// home or a dead one goes to the claimant. Two nodes racing both see the one row the
    /// database serialised, so both end with the same home.
    public enum ClaimOutcome: Sendable, Hashable {
        /// The room stays where it is.
        case kept(home: String)
        /// The claimant's candidate becomes the home.
        case claimed(home: String)

        public var home: String {
            switch self {
            case .kept(let home), .claimed(let home): home
            }
        }
    }

    public static func claim(current: String?, currentIsAlive: Bool, candidate: String) -> ClaimOutcome {
        if let current, currentIsAlive { return .kept(home: current) }
        return .claimed(home: candidate)
    }

    /// Node ids: 1 to 64 letters, digits, `.`, `_` or `-`.
    public static func isValidNodeId(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
            }
    }

    /// A new random node id, `node-` and 12 hex digits.
    public static func randomNodeId() -> String {
        "node-" + (0..<6).map { _ in
            let byte = UInt8.random(in: 0...255)
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}
