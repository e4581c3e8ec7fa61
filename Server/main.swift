import ArgumentParser
import Foundation
import LiveRoomServer
import Logging

@main
struct LiveRoomServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveroom-server",
        abstract: "The LiveRoom room server: rooms, roles, mic-connection, room messages and the admin API.",
        discussion: """
            With no options it listens on 127.0.0.1:7880 with a development SDKAppID and secret key \
            kept in ./liveroom-data, and prints them. Each option can also be set by the environment \
            variable named in its help; an option on the command line wins. Audiences watch in a \
            browser at http://HOST:PORT/watch/ROOM?userId=USER&userSig=SIG (on the development key \
            alone, without userId and userSig: the page gets a UserSig for a random viewer; \
            development only). With --cluster-db several servers share one PostgreSQL database as \
            a cluster: each room lives on a home node, any node relays a client's signaling, \
            admin calls and WHIP there, a viewer's media (signaling or WHEP) comes from the node \
            it connected to (which mirrors the publisher from the home node once), PK links and \
            mixes work between rooms on different nodes, a task over this node's encoding \
            budget runs on a node with budget left, and the shops, orders, room history and \
            webhook outbox are kept in PostgreSQL (docs/cluster.md).
            """)

    @Option(help: "Address to listen on (LIVEROOM_HOST).") var host: String?
    @Option(help: "HTTP and WebSocket port; 0 picks a free one (LIVEROOM_PORT).") var port: Int?
    @Option(help: "UDP port for media; 0 picks a free one (LIVEROOM_MEDIA_PORT, default 7882).") var mediaPort: Int?
    @Option(name: .customLong("ice-tcp-port"), help: "TCP port for ICE-TCP, media for clients whose network drops UDP; 0 picks a free one (LIVEROOM_ICE_TCP_PORT, default 7881).")
    var iceTCPPort: Int?
    @Flag(name: .customLong("no-ice-tcp"), help: "Do not listen for ICE-TCP: media over UDP only (LIVEROOM_NO_ICE_TCP=1).") var noICETCP = false
    @Option(name: .customLong("max-ice-tcp-connections"), help: "Most ICE-TCP connections at once, one per peer connection over TCP (LIVEROOM_MAX_ICE_TCP_CONNECTIONS, default 2000); each address may have --max-connections-per-address.")
    var maxICETCPConnections: Int?
    @Option(help: "Event loops (threads) serving the media port, all on the one UDP port (LIVEROOM_MEDIA_LOOPS, default one per core, at most 64).")
    var mediaLoops: Int?
    @Option(help: "The application's SDKAppID (LIVEROOM_SDK_APP_ID).") var sdkAppId: UInt64?
    @Option(help: "The application's secret key; without it a development key is kept in the data directory (LIVEROOM_SECRET_KEY).")
    var secretKey: String?
    @Option(help: "Directory for the SQLite database (LIVEROOM_DATA_DIR).") var dataDir: String?
    @Option(help: "http:// or https:// URL that room, media, publish task, commerce and PK events are posted to, signed, from a durable outbox (LIVEROOM_WEBHOOK_URL; needs --webhook-key; see docs/webhooks.md).")
    var webhookURL: String?
    @Option(help: "TRTC's callback key, 1 to 32 letters and digits: each webhook's Sign header is base64 of HMAC-SHA256 of the body with it (LIVEROOM_WEBHOOK_KEY).")
    var webhookKey: String?
    @Option(help: "Most webhooks waiting for delivery; beyond it new events are dropped and counted (LIVEROOM_MAX_PENDING_WEBHOOKS, default 100000).")
    var maxPendingWebhooks: Int?
    @Option(help: "Most anchors one room may have (LIVEROOM_MAX_ANCHORS).") var maxAnchors: Int?
    @Option(help: "Retries of a failed RTMP connection of a publish task (LIVEROOM_TASK_RETRY_COUNT, default 5).") var taskRetryCount: Int?
    @Option(help: "Milliseconds between those retries (LIVEROOM_TASK_RETRY_INTERVAL_MS, default 1000).") var taskRetryIntervalMs: Int?
    @Option(help: "Seconds a publish task lives on after every input has left (LIVEROOM_TASK_IDLE_TIMEOUT, default 30).") var taskIdleTimeout: Int?
    @Option(help: "Most publish media stream tasks one room may run at once (LIVEROOM_MAX_TASKS_PER_ROOM, default 10).") var maxTasksPerRoom: Int?
    @Option(help: "Most bytes of signaling messages that may wait for one client before it is disconnected (LIVEROOM_MAX_OUTBOX_BYTES, default 4194304).")
    var maxOutboxBytes: Int?
    @Option(help: "Seconds a signaling connection may stay without entering a room before it is closed (LIVEROOM_LOGIN_TIMEOUT, default 10).")
    var loginTimeout: Int?
    @Option(
        parsing: .unconditional,  // the value is negative: "--signaling-nice -5" must not read "-5" as a flag
        help:
            "Nice value, -20 to 0, the signaling threads ask for so that a busy room does not hold up the others' messages when the CPU is short; needs root or CAP_SYS_NICE, else they stay at 0 (LIVEROOM_SIGNALING_NICE, default -10)."
    )
    var signalingNice: Int?
    @Option(help: "Seconds a connection to the HTTP port may take to send its first request head, TLS handshake included, and a kept-alive one may wait for its next request; then it is closed (LIVEROOM_REQUEST_HEAD_TIMEOUT, default 10).")
    var requestHeadTimeout: Int?
    @Option(help: "Seconds a user whose signaling connection dropped keeps its seat and media for a reconnect (LIVEROOM_RECONNECT_GRACE, default 15; 0 leaves at once).")
    var reconnectGrace: Int?
    @Option(help: "Seconds a purchase holds its stock unpaid before it expires and the stock goes back (LIVEROOM_ORDER_RESERVATION_TIMEOUT, default 900).")
    var orderReservationTimeout: Int?
    @Option(help: "Seconds a product replay records at most; unpop or the next pop ends it sooner (LIVEROOM_REPLAY_MAX_SECONDS, default 600).")
    var replayMaxSeconds: Int?
    @Option(help: "Most signaling connections at once (LIVEROOM_MAX_CONNECTIONS, default 5000).") var maxConnections: Int?
    @Option(help: "Most signaling connections from one IPv4 address or IPv6 /64, and most TCP connections of any kind it holds on the HTTP port, refused before any request is read (LIVEROOM_MAX_CONNECTIONS_PER_ADDRESS, default 100).")
    var maxConnectionsPerAddress: Int?
    @Option(help: "Seconds between pings of each signaling connection; one that has not answered by the next ping is closed (LIVEROOM_PING_INTERVAL, default 20).")
    var pingInterval: Int?
    @Option(help: "Most rooms one user id may be in at once (LIVEROOM_MAX_ROOMS_PER_USER, default 10).") var maxRoomsPerUser: Int?
    @Option(help: "Most other rooms one room connects with in cross-room PK (LIVEROOM_MAX_PK_ROOMS, default 3, as TRTC).") var maxPkRooms: Int?
    @Option(help: "Most anchors of one room taking part in cross-room PK (LIVEROOM_MAX_PK_ANCHORS, default 10, as TRTC).") var maxPkAnchors: Int?
    @Option(help: "Seconds a PK request (requestPK) waits for the other anchor's answer (LIVEROOM_PK_REQUEST_TIMEOUT, default 30).")
    var pkRequestTimeout: Int?
    @Option(help: "Most rooms the server holds at once (LIVEROOM_MAX_ROOMS, default 1000).") var maxRooms: Int?
    @Option(help: "Seconds a new peer connection may take to connect; a WHIP/WHEP session not connected by then ends (LIVEROOM_MEDIA_CONNECT_TIMEOUT, default 15).")
    var mediaConnectTimeout: Int?
    @Option(help: "Seconds a peer may send no ICE check before it is dropped (LIVEROOM_CONSENT_TIMEOUT, default 30, as RFC 7675).")
    var consentTimeout: Int?
    @Option(help: "Most publish media stream tasks one user may run at once (LIVEROOM_MAX_TASKS_PER_USER, default 4).") var maxTasksPerUser: Int?
    @Option(help: "Most publish media stream tasks the server runs at once (LIVEROOM_MAX_TASKS, default 20).") var maxTasks: Int?
    @Option(help: "Most pixels a second all tasks together may encode, width x height x fps summed (LIVEROOM_ENCODING_BUDGET, default 62208000: 1920x1080 at 30 fps).")
    var encodingBudget: Int?
    @Option(help: ArgumentHelp(
        "A CIDR range, address or host name publish tasks may reach although it is not on the public internet; repeat for more (LIVEROOM_EGRESS_ALLOW, comma-separated).",
        valueName: "cidr-or-host"))
    var egressAllow: [String] = []
    @Flag(help: "Do not verify rtmps:// server certificates (LIVEROOM_RTMPS_INSECURE=1).") var rtmpsInsecure = false
    @Option(help: "Directory whose image files tasks may name (placeholders, backgrounds, watermarks); without it only http(s) images (LIVEROOM_IMAGE_DIR).")
    var imageDir: String?
    @Option(
        help: ArgumentHelp(
            "An address clients reach the media port at, for a server behind NAT or on a cloud VM (repeatable; LIVEROOM_ANNOUNCE_IP, comma-separated). Without it: the --host address, or each interface's address when --host is 0.0.0.0.",
            valueName: "ip"))
    var announceIp: [String] = []
    @Option(help: "PEM certificate chain: serve https, wss and WHIP/WHEP over https (LIVEROOM_TLS_CERT; needs --tls-key).") var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert (LIVEROOM_TLS_KEY).") var tlsKey: String?
    @Flag(help: "Entering a room needs a PrivateMapKey for the user and room; its privileges decide creating, entering, sending and receiving (LIVEROOM_REQUIRE_PRIVATE_MAP_KEY=1).")
    var requirePrivateMapKey = false
    @Option(help: "Cluster mode: the PostgreSQL database the nodes share, postgres://user:password@host:5432/database[?sslmode=disable|prefer|require] (LIVEROOM_CLUSTER_DB; see docs/cluster.md); the shops, orders, room history and webhook outbox are kept there. Without it the server runs alone on SQLite.")
    var clusterDb: String?
    @Option(help: "This node's id in the cluster, 1 to 64 letters, digits, '.', '_' or '-' (LIVEROOM_NODE_ID; default: a random id kept in the data directory).")
    var nodeId: String?
    @Option(help: "The http(s)://host:port other nodes reach this node's signaling at (LIVEROOM_NODE_URL; default: the first media address and the HTTP port).")
    var nodeUrl: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (LIVEROOM_LOG_LEVEL).") var logLevel: String?

    func validate() throws {
        let env = ProcessInfo.processInfo.environment
        if secretKey == nil, env["LIVEROOM_SECRET_KEY"] == nil, sdkAppId != nil || env["LIVEROOM_SDK_APP_ID"] != nil {
            throw ValidationError("--sdk-app-id needs --secret-key (or LIVEROOM_SECRET_KEY)")
        }
    }

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        func number<T: LosslessStringConvertible>(_ name: String) throws -> T? {
            guard let text = env[name] else { return nil }
            guard let value = T(text) else { throw ValidationError("\(name)=\(text) is not a valid number") }
            return value
        }
        let defaults = ServerConfiguration()
        let configuration = ServerConfiguration(
            host: host ?? env["LIVEROOM_HOST"] ?? defaults.host,
            port: try port ?? number("LIVEROOM_PORT") ?? defaults.port,
            mediaPort: try mediaPort ?? number("LIVEROOM_MEDIA_PORT") ?? defaults.mediaPort,
            iceTCPPort: noICETCP || env["LIVEROOM_NO_ICE_TCP"] == "1" ? nil : try iceTCPPort ?? number("LIVEROOM_ICE_TCP_PORT") ?? defaults.iceTCPPort,
            maxICETCPConnections: try maxICETCPConnections ?? number("LIVEROOM_MAX_ICE_TCP_CONNECTIONS") ?? defaults.maxICETCPConnections,
            sdkAppId: try sdkAppId ?? number("LIVEROOM_SDK_APP_ID"),
            secretKey: secretKey ?? env["LIVEROOM_SECRET_KEY"],
            dataDirectory: dataDir ?? env["LIVEROOM_DATA_DIR"] ?? defaults.dataDirectory,
            webhookURL: webhookURL ?? env["LIVEROOM_WEBHOOK_URL"].flatMap { $0.isEmpty ? nil : $0 },
            webhookKey: webhookKey ?? env["LIVEROOM_WEBHOOK_KEY"].flatMap { $0.isEmpty ? nil : $0 },
            maxPendingWebhooks: try maxPendingWebhooks ?? number("LIVEROOM_MAX_PENDING_WEBHOOKS") ?? defaults.maxPendingWebhooks,
            maxAnchorsPerRoom: try maxAnchors ?? number("LIVEROOM_MAX_ANCHORS") ?? defaults.maxAnchorsPerRoom,
            taskRetryCount: try taskRetryCount ?? number("LIVEROOM_TASK_RETRY_COUNT") ?? defaults.taskRetryCount,
            taskRetryInterval: .milliseconds(try taskRetryIntervalMs ?? number("LIVEROOM_TASK_RETRY_INTERVAL_MS") ?? 1000),
            taskIdleTimeout: .seconds(try taskIdleTimeout ?? number("LIVEROOM_TASK_IDLE_TIMEOUT") ?? 30),
            maxTasksPerRoom: try maxTasksPerRoom ?? number("LIVEROOM_MAX_TASKS_PER_ROOM") ?? defaults.maxTasksPerRoom,
            maxOutboxBytes: try maxOutboxBytes ?? number("LIVEROOM_MAX_OUTBOX_BYTES") ?? defaults.maxOutboxBytes,
            loginTimeout: .seconds(try loginTimeout ?? number("LIVEROOM_LOGIN_TIMEOUT") ?? 10),
            requestHeadTimeout: .seconds(try requestHeadTimeout ?? number("LIVEROOM_REQUEST_HEAD_TIMEOUT") ?? 10),
            maxConnections: try maxConnections ?? number("LIVEROOM_MAX_CONNECTIONS") ?? defaults.maxConnections,
            maxConnectionsPerAddress: try maxConnectionsPerAddress ?? number("LIVEROOM_MAX_CONNECTIONS_PER_ADDRESS") ?? defaults.maxConnectionsPerAddress,
            pingInterval: .seconds(try pingInterval ?? number("LIVEROOM_PING_INTERVAL") ?? 20),
            maxRoomsPerUser: try maxRoomsPerUser ?? number("LIVEROOM_MAX_ROOMS_PER_USER") ?? defaults.maxRoomsPerUser,
            maxRooms: try maxRooms ?? number("LIVEROOM_MAX_ROOMS") ?? defaults.maxRooms,
            mediaConnectTimeout: .seconds(try mediaConnectTimeout ?? number("LIVEROOM_MEDIA_CONNECT_TIMEOUT") ?? 15),
            consentTimeout: .seconds(try consentTimeout ?? number("LIVEROOM_CONSENT_TIMEOUT") ?? 30),
            maxTasksPerUser: try maxTasksPerUser ?? number("LIVEROOM_MAX_TASKS_PER_USER") ?? defaults.maxTasksPerUser,
            maxTasks: try maxTasks ?? number("LIVEROOM_MAX_TASKS") ?? defaults.maxTasks,
            encodingBudget: try encodingBudget ?? number("LIVEROOM_ENCODING_BUDGET") ?? defaults.encodingBudget,
            egressAllow: egressAllow.isEmpty ? (env["LIVEROOM_EGRESS_ALLOW"] ?? "").split(separator: ",").map(String.init) : egressAllow,
            rtmpsInsecure: rtmpsInsecure || env["LIVEROOM_RTMPS_INSECURE"] == "1",
            imageDirectory: imageDir ?? env["LIVEROOM_IMAGE_DIR"],
            requirePrivateMapKey: requirePrivateMapKey || env["LIVEROOM_REQUIRE_PRIVATE_MAP_KEY"] == "1",
            announceAddresses: announceIp.isEmpty ? (env["LIVEROOM_ANNOUNCE_IP"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } : announceIp,
            tlsCertificate: tlsCert ?? env["LIVEROOM_TLS_CERT"], tlsKey: tlsKey ?? env["LIVEROOM_TLS_KEY"],
            reconnectGrace: .seconds(try reconnectGrace ?? number("LIVEROOM_RECONNECT_GRACE") ?? 15),
            orderReservation: .seconds(try orderReservationTimeout ?? number("LIVEROOM_ORDER_RESERVATION_TIMEOUT") ?? 900),
            maxReplayLength: .seconds(try replayMaxSeconds ?? number("LIVEROOM_REPLAY_MAX_SECONDS") ?? 600),
            maxPKRooms: try maxPkRooms ?? number("LIVEROOM_MAX_PK_ROOMS") ?? 3, maxPKAnchorsPerRoom: try maxPkAnchors ?? number("LIVEROOM_MAX_PK_ANCHORS") ?? 10,
            pkRequestTimeout: .seconds(try pkRequestTimeout ?? number("LIVEROOM_PK_REQUEST_TIMEOUT") ?? 30),
            mediaLoops: try mediaLoops ?? number("LIVEROOM_MEDIA_LOOPS") ?? defaults.mediaLoops,
            clusterDatabase: clusterDb ?? env["LIVEROOM_CLUSTER_DB"].flatMap { $0.isEmpty ? nil : $0 },
            nodeId: nodeId ?? env["LIVEROOM_NODE_ID"].flatMap { $0.isEmpty ? nil : $0 },
            nodeURL: nodeUrl ?? env["LIVEROOM_NODE_URL"].flatMap { $0.isEmpty ? nil : $0 },
            signalingNice: Int32(clamping: try signalingNice ?? number("LIVEROOM_SIGNALING_NICE") ?? Int(defaults.signalingNice)))
        let levelText = logLevel ?? env["LIVEROOM_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: levelText) else { throw ValidationError("unknown log level \(levelText)") }
        guard (configuration.tlsCertificate == nil) == (configuration.tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        guard (1...ServerConfiguration.maximumMediaLoops).contains(configuration.mediaLoops) else {
            throw ValidationError("--media-loops must be 1 to \(ServerConfiguration.maximumMediaLoops)")
        }
        if let bad = configuration.announceAddresses.first(where: { !ServerConfiguration.isIPAddress($0) }) {
            throw ValidationError("--announce-ip takes IP addresses, not \"\(bad)\"")
        }
        if let problem = ServerConfiguration.webhookProblem(url: configuration.webhookURL, key: configuration.webhookKey) {
            throw ValidationError(problem)
        }
        guard configuration.maxPendingWebhooks >= 1, configuration.maxPendingWebhooks <= 10_000_000 else {
            throw ValidationError("--max-pending-webhooks must be 1 to 10000000")
        }
        guard configuration.maxAnchorsPerRoom > 0 else { throw ValidationError("--max-anchors must be at least 1") }
        guard configuration.maxConnections > 0, configuration.maxConnectionsPerAddress > 0, configuration.pingInterval > .zero,
            configuration.maxRoomsPerUser > 0, configuration.maxRooms > 0, configuration.mediaConnectTimeout > .zero, configuration.consentTimeout > .zero
        else {
            throw ValidationError(
                "--max-connections, --max-connections-per-address, --ping-interval, --max-rooms-per-user, --max-rooms, --media-connect-timeout and --consent-timeout must be at least 1")
        }
        guard configuration.maxPKRooms > 0, configuration.maxPKAnchorsPerRoom > 0, configuration.pkRequestTimeout >= .seconds(1),
            configuration.pkRequestTimeout <= .seconds(600)
        else {
            throw ValidationError("--max-pk-rooms and --max-pk-anchors must be at least 1, --pk-request-timeout 1 to 600 seconds")
        }
        guard configuration.maxICETCPConnections > 0 else { throw ValidationError("--max-ice-tcp-connections must be at least 1") }
        guard configuration.reconnectGrace >= .zero else { throw ValidationError("--reconnect-grace must be 0 or more") }
        guard configuration.orderReservation >= .seconds(1), configuration.orderReservation <= .seconds(7 * 86_400) else {
            throw ValidationError("--order-reservation-timeout must be 1 to 604800 seconds (a week)")
        }
        guard configuration.maxReplayLength >= .seconds(1), configuration.maxReplayLength <= .seconds(3600) else {
            throw ValidationError("--replay-max-seconds must be 1 to 3600")
        }
        guard configuration.loginTimeout > .zero else { throw ValidationError("--login-timeout must be at least 1") }
        guard ServerConfiguration.signalingNiceRange.contains(configuration.signalingNice) else {
            throw ValidationError("--signaling-nice (LIVEROOM_SIGNALING_NICE) must be -20 to 0")
        }
        guard configuration.requestHeadTimeout >= .seconds(1), configuration.requestHeadTimeout <= .seconds(300) else {
            throw ValidationError("--request-head-timeout must be 1 to 300 seconds")
        }
        guard configuration.maxOutboxBytes >= LiveRoomServer.maxSignalingFrameSize else {
            throw ValidationError("--max-outbox-bytes must be at least \(LiveRoomServer.maxSignalingFrameSize)")
        }
        guard configuration.taskRetryCount >= 0, configuration.taskRetryInterval > .zero, configuration.taskIdleTimeout > .zero,
            configuration.maxTasksPerRoom > 0, configuration.maxTasksPerUser > 0, configuration.maxTasks > 0, configuration.encodingBudget >= 0
        else {
            throw ValidationError("--task-retry-count must be at least 0; --task-retry-interval-ms, --task-idle-timeout, --max-tasks-per-room, --max-tasks-per-user and --max-tasks at least 1, --encoding-budget at least 0")
        }

        if let problem = ServerConfiguration.clusterProblem(
            database: configuration.clusterDatabase, nodeId: configuration.nodeId, nodeURL: configuration.nodeURL)
        {
            throw ValidationError(problem)
        }

        // Broken pipes and hang-ups cannot stop the server; a trap or fault leaves a line and its backtrace.
        ProcessSignals.install()
        LoggingSystem.bootstrap { label in
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
        // Each connection and peer is a file descriptor: allow as many as the hard limit does.
        var files = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0, files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        }
        let server = LiveRoomServer(configuration: configuration, logger: Logger(label: "liveroom-server"))
        do {
            try await run(server, configuration: configuration)
            FileHandle.standardError.write(Data("liveroom-server: stopped: graceful shutdown (SIGTERM or SIGINT)\n".utf8))
        } catch let error as ClusterStartError {
            // A clear line and exit code 3 (not 1): scripts can tell "the database is down" apart.
            FileHandle.standardError.write(Data("liveroom-server: \(error.description)\n".utf8))
            throw ExitCode(3)
        }
    }

    private func run(_ server: LiveRoomServer, configuration: ServerConfiguration) async throws {
        try await server.run { credentials, address, ports in
            let scheme = configuration.tlsCertificate == nil ? "http" : "https"
            var lines = ["LiveRoom server listening on \(scheme)://\(configuration.host):\(address.port ?? configuration.port)"]
            lines.append("Media UDP port: \(ports.udp)")
            lines.append("ICE-TCP port: \(ports.tcp.map(String.init) ?? "off")")
            lines.append("SDKAppID: \(credentials.sdkAppId)")
            if credentials.isDevelopment {
                lines.append("Secret key: \(credentials.secretKey) (development key kept in \(configuration.dataDirectory))")
            }
            // Written straight to the file descriptor: a script reading our output sees it at once.
            FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
    }
}
