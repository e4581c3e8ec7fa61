import LiveRoomCluster
import LiveRoomPostgres
import LiveRoomPublishTasks
import LiveRoomSFU
import LiveRoomWebhooks
import LiveRoomWire
import NIOCore

/// Everything `liveroom-server` is told at start, with its defaults; ``ServerSettings`` says how
/// each is set and what it may be.
public struct ServerConfiguration: Sendable {
    /// Address to bind (HTTP, WebSocket and, later, media).
    public var host: String
    /// HTTP and WebSocket port; 0 picks a free one.
    public var port: Int
    /// UDP port for media; 0 picks a free one.
    public var mediaPort: Int
    /// TCP port for ICE-TCP (RFC 6544), for clients on networks that drop UDP; 0 picks a free
    /// one, nil turns ICE-TCP off.
    public var iceTCPPort: Int?
    /// Most ICE-TCP connections the server holds at once (each peer connection over TCP needs one).
    public var maxICETCPConnections: Int
    /// Event loops (threads) serving the media port, 1 to ``maximumMediaLoops``.
    public var mediaLoops: Int
    /// The application's SDKAppID; nil means the development one kept in the data directory.
    public var sdkAppId: UInt64?
    /// The application's secret key; nil means the development one kept in the data directory.
    public var secretKey: String?
    /// Where the SQLite database lives.
    public var dataDirectory: String
    /// Where room events are posted (signed), if set: an http:// or https:// URL.
    public var webhookURL: String?
    /// TRTC's callback key, which signs each webhook (`Sign`): 1–32 letters and digits.
    public var webhookKey: String?
    /// Most webhooks that may wait in the outbox; beyond it new events are counted as dropped.
    public var maxPendingWebhooks: Int
    /// Most anchors one room may have.
    public var maxAnchorsPerRoom: Int
    /// Retries of a publish task's failed RTMP connection before the URL is given up.
    public var taskRetryCount: Int
    /// The wait before each of those retries.
    public var taskRetryInterval: Duration
    /// How long a publish task lives on after every input has left (unless the task sets its own).
    public var taskIdleTimeout: Duration
    /// The most publish media stream tasks one room may run at once.
    public var maxTasksPerRoom: Int
    /// The most tasks one user may run at once.
    public var maxTasksPerUser: Int
    /// The most tasks the server runs at once.
    public var maxTasks: Int
    /// The most pixels a second all tasks together may encode.
    public var encodingBudget: Int
    /// CIDR ranges, addresses and host names publish tasks may reach although they are not on
    /// the public internet (a local RTMP server, an internal image host).
    public var egressAllow: [String]
    /// Whether `rtmps://` connections skip certificate verification.
    public var rtmpsInsecure: Bool
    /// The directory tasks may name image files in; nil allows only http(s) images.
    public var imageDirectory: String?
    /// Whether entering a room needs a PrivateMapKey whose privileges then apply.
    public var requirePrivateMapKey: Bool
    /// The addresses clients reach the media port at (behind NAT, on a cloud VM); empty: the
    /// bind address, or every interface's address when bound to all of them.
    public var announceAddresses: [String]
    /// PEM certificate chain and private key for https, wss and WHIP/WHEP over https; nil: plain http.
    public var tlsCertificate: String?
    /// How long a user whose signaling connection dropped keeps its seat (and its media) for a
    /// reconnect that resumes the session; zero leaves the room at once.
    public var reconnectGrace: Duration
    public var tlsKey: String?
    /// The most bytes of signaling messages that may wait for one client; a client that falls
    /// further behind is disconnected (close code 1008).
    public var maxOutboxBytes: Int
    /// How long a signaling connection may stay without entering a room before it is closed.
    public var loginTimeout: Duration
    /// The nice value the signaling threads (the HTTP and WebSocket event loops, the room hub's
    /// thread) ask for, -20 to 0: below the 0 of the server's other work, so that one room's
    /// burst does not hold up every other room's messages when the CPU is short (``SignalingPriority``).
    /// Taking it needs root or CAP_SYS_NICE; without, the threads stay at 0.
    public var signalingNice: Int32
    /// How long a TCP connection to the HTTP port may take to send its first request head (TLS
    /// handshake included), and how long a kept-alive one may wait for its next request.
    public var requestHeadTimeout: Duration
    /// Most signaling connections the server holds at once.
    public var maxConnections: Int
    /// Most signaling connections from one address (an IPv4 address, or an IPv6 /64); also the
    /// most TCP connections of any kind one address holds on the HTTP port, before any request.
    public var maxConnectionsPerAddress: Int
    /// How often the server pings each signaling connection; one that has not answered the
    /// last ping by the next is closed.
    public var pingInterval: Duration
    /// Most rooms one user id may be in at once.
    public var maxRoomsPerUser: Int
    /// Most rooms the server holds at once.
    public var maxRooms: Int
    /// How long a new peer connection may take to connect (ICE and DTLS); a WHIP/WHEP session
    /// whose peer has not connected by then ends.
    public var mediaConnectTimeout: Duration
    /// How long a purchase holds its stock unpaid; then the order expires and the stock goes back.
    public var orderReservation: Duration
    /// Most purchases that may wait for the store in one room, and in all rooms together;
    /// past either a buyer hears -7316 at once.
    public var maxWaitingPurchasesPerRoom: Int
    public var maxWaitingPurchases: Int
    /// The longest a product replay records (from pop to unpop).
    public var maxReplayLength: Duration
    /// The most MiB the replays of all rooms take on disk; past it the oldest are deleted.
    public var replayDiskQuotaMiB = 10_240
    /// Most other rooms one room connects with in cross-room PK.
    public var maxPKRooms: Int
    /// Most anchors of one room taking part in cross-room PK.
    public var maxPKAnchorsPerRoom: Int
    /// How long a PK request waits for its answer.
    public var pkRequestTimeout: Duration
    /// TRTC's open PK: connectOtherRoom links with any anchor without its consent.
    public var openPKLinks = false
    /// How long a connected peer may send no ICE check before it is dropped (RFC 7675 says 30 s).
    public var consentTimeout: Duration

    /// The least important log lines written: trace, debug, info, notice, warning, error or critical.
    public var logLevel: String

    /// The cluster database (`postgres://…`): cluster mode on; nil runs alone, with no PostgreSQL code.
    public var clusterDatabase: String?
    /// This node's id in the cluster; nil: a random one kept in the data directory.
    public var nodeId: String?
    /// The `http(s)://host:port` other nodes relay signaling to; nil: the first advertised
    /// address and the HTTP port.
    public var nodeURL: String?

    public init(
        host: String = "127.0.0.1", port: Int = 7880, mediaPort: Int = 7882, iceTCPPort: Int? = 7881, maxICETCPConnections: Int = 2000,
        sdkAppId: UInt64? = nil, secretKey: String? = nil,
        dataDirectory: String = "liveroom-data", webhookURL: String? = nil, webhookKey: String? = nil,
        maxPendingWebhooks: Int = ServerConfiguration.defaultMaxPendingWebhooks, maxAnchorsPerRoom: Int = 50,
        taskRetryCount: Int = 5, taskRetryInterval: Duration = .milliseconds(1000), taskIdleTimeout: Duration = .seconds(30),
        maxTasksPerRoom: Int = 10, maxOutboxBytes: Int = 4 << 20, loginTimeout: Duration = .seconds(10),
        requestHeadTimeout: Duration = .seconds(10), maxConnections: Int = 5000, maxConnectionsPerAddress: Int = 100, pingInterval: Duration = .seconds(20),
        maxRoomsPerUser: Int = 10, maxRooms: Int = 1000, mediaConnectTimeout: Duration = .seconds(15), consentTimeout: Duration = .seconds(30),
        maxTasksPerUser: Int = 4, maxTasks: Int = 20, encodingBudget: Int = PublishTasksStateMachine.defaultEncodingBudget,
        egressAllow: [String] = [], rtmpsInsecure: Bool = false, imageDirectory: String? = nil,
        requirePrivateMapKey: Bool = false, announceAddresses: [String] = [], tlsCertificate: String? = nil, tlsKey: String? = nil,
        reconnectGrace: Duration = .seconds(15), orderReservation: Duration = .seconds(900), maxWaitingPurchasesPerRoom: Int = 4_000,
        maxWaitingPurchases: Int = 16_000,
        maxReplayLength: Duration = .seconds(600), maxPKRooms: Int = 3, maxPKAnchorsPerRoom: Int = 10, pkRequestTimeout: Duration = .seconds(30),
        mediaLoops: Int = ServerConfiguration.defaultMediaLoops, clusterDatabase: String? = nil, nodeId: String? = nil, nodeURL: String? = nil,
        signalingNice: Int32 = ServerConfiguration.defaultSignalingNice, logLevel: String = "info"
    ) {
        self.logLevel = logLevel
        self.signalingNice = signalingNice
        self.clusterDatabase = clusterDatabase
        self.nodeId = nodeId
        self.nodeURL = nodeURL
        self.mediaLoops = mediaLoops
        self.maxPKRooms = maxPKRooms
        self.maxPKAnchorsPerRoom = maxPKAnchorsPerRoom
        self.pkRequestTimeout = pkRequestTimeout
        self.orderReservation = orderReservation
        self.maxWaitingPurchasesPerRoom = maxWaitingPurchasesPerRoom
        self.maxWaitingPurchases = maxWaitingPurchases
        self.maxReplayLength = maxReplayLength
        self.reconnectGrace = reconnectGrace
        self.iceTCPPort = iceTCPPort
        self.maxICETCPConnections = maxICETCPConnections
        self.tlsCertificate = tlsCertificate
        self.tlsKey = tlsKey
        self.announceAddresses = announceAddresses
        self.requirePrivateMapKey = requirePrivateMapKey
        self.imageDirectory = imageDirectory
        self.egressAllow = egressAllow
        self.rtmpsInsecure = rtmpsInsecure
        self.maxTasksPerUser = maxTasksPerUser
        self.maxTasks = maxTasks
        self.encodingBudget = encodingBudget
        self.mediaConnectTimeout = mediaConnectTimeout
        self.consentTimeout = consentTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.pingInterval = pingInterval
        self.maxRoomsPerUser = maxRoomsPerUser
        self.maxRooms = maxRooms
        self.maxTasksPerRoom = maxTasksPerRoom
        self.maxOutboxBytes = maxOutboxBytes
        self.loginTimeout = loginTimeout
        self.requestHeadTimeout = requestHeadTimeout
        self.taskRetryCount = taskRetryCount
        self.taskRetryInterval = taskRetryInterval
        self.taskIdleTimeout = taskIdleTimeout
        self.host = host
        self.port = port
        self.mediaPort = mediaPort
        self.sdkAppId = sdkAppId
        self.secretKey = secretKey
        self.dataDirectory = dataDirectory
        self.webhookURL = webhookURL
        self.webhookKey = webhookKey
        self.maxPendingWebhooks = maxPendingWebhooks
        self.maxAnchorsPerRoom = maxAnchorsPerRoom
    }

    /// The most media loops: a media port has at most this many routers.
    public static let maximumMediaLoops = SFURouter.maximumShards

    /// One media loop per core.
    public static var defaultMediaLoops: Int { min(System.coreCount, maximumMediaLoops) }

    /// The most webhooks waiting in the outbox by default.
    public static let defaultMaxPendingWebhooks = 100_000

    /// The signaling threads' nice value by default, and the values allowed.
    public static let defaultSignalingNice: Int32 = -10
    public static let signalingNiceRange: ClosedRange<Int32> = -20...0

    /// Why the webhook settings cannot be used, or nil when they can: a URL needs a key, the URL
    /// is http(s) with a host, the key 1–32 letters and digits.
    public static func webhookProblem(url: String?, key: String?) -> String? {
        if let key, !WebhookSignature.isValidKey(key) {
            return "--webhook-key (LIVEROOM_WEBHOOK_KEY) must be 1 to 32 letters and digits, as TRTC's callback key"
        }
        guard let url else { return key == nil ? nil : "--webhook-key needs --webhook-url (LIVEROOM_WEBHOOK_URL)" }
        guard HTTPTarget(url: url) != nil else {
            return "--webhook-url (LIVEROOM_WEBHOOK_URL) must be an http:// or https:// URL with a host, not \"\(url)\""
        }
        guard key != nil else { return "--webhook-url needs --webhook-key (LIVEROOM_WEBHOOK_KEY), which signs every webhook" }
        return nil
    }

    /// Why the cluster settings cannot be used, or nil when they can (or cluster mode is off):
    /// the database URL must parse, the node id be plain, the node URL http(s); `--node-id`
    /// and `--node-url` need `--cluster-db`.
    public static func clusterProblem(database: String?, nodeId: String?, nodeURL: String?) -> String? {
        guard let database else {
            return nodeId != nil || nodeURL != nil ? "--node-id and --node-url need --cluster-db (LIVEROOM_CLUSTER_DB)" : nil
        }
        do {
            _ = try ClusterDatabaseURL(database)
        } catch {
            return error.description
        }
        if let nodeId, !ClusterRules.isValidNodeId(nodeId) {
            return "--node-id (LIVEROOM_NODE_ID) must be 1 to 64 letters, digits, '.', '_' or '-', not \"\(nodeId)\""
        }
        if let nodeURL, !(nodeURL.hasPrefix("http://") || nodeURL.hasPrefix("https://")) || (nodeURL.count > 300) {
            return "--node-url (LIVEROOM_NODE_URL) must be an http:// or https:// URL, not \"\(nodeURL)\""
        }
        return nil
    }

    /// The SDKAppID used when none is given.
    public static let developmentSdkAppId: UInt64 = 1_400_000_000

    /// Whether `text` is an IPv4 or IPv6 address (what `--announce-ip` takes).
    public static func isIPAddress(_ text: String) -> Bool { IPAddress(text) != nil }
}
