import LiveRoomSFU

/// Every setting of `liveroom-server`, in the order `--help` and `--print-config` show them.
/// Defaults are ``ServerConfiguration``'s; ranges are here. docs/configuration.md lists the same
/// table (a test compares them).
public enum ServerSettings {
    public static let all: [ServerSetting] = listening + identity + limits + tasks + cluster

    static let listening: [ServerSetting] = [
        .text("host", \.host, "Address to listen on."),
        .integer("port", \.port, 0...65_535, "HTTP and WebSocket port; 0 picks a free one."),
        .integer("mediaPort", \.mediaPort, 0...65_535, "UDP port for all media; 0 picks a free one."),
        ServerSetting(
            key: "iceTcpPort", kind: .integer(0...65_535),
            help: "TCP port for ICE-TCP, media for clients whose network drops UDP; 0 picks a free one.", isSecret: false,
            read: { $0.iceTCPPort.map { .integer($0) } },
            write: { configuration, value in if case .integer(let port) = value { configuration.iceTCPPort = port } }),
        ServerSetting(
            key: "noIceTcp", kind: .flag, help: "Do not listen for ICE-TCP: media over UDP only.", isSecret: false,
            read: { .flag($0.iceTCPPort == nil) },
            write: { configuration, value in if value == .flag(true) { configuration.iceTCPPort = nil } }),
        .integer(
            "maxIceTcpConnections", \.maxICETCPConnections, 1...1_000_000,
            "Most ICE-TCP connections at once, one per peer connection over TCP; each address may have --max-connections-per-address."),
        .integer(
            "mediaLoops", \.mediaLoops, 1...ServerConfiguration.maximumMediaLoops,
            "Event loops (threads) serving the media port, all on the one UDP port; the default is one per core."),
        .list(
            "announceIp", \.announceAddresses,
            "An address clients reach the media port at, for a server behind NAT or on a cloud VM. Without it: the --host address, or each interface's address when --host is 0.0.0.0."),
        .text("tlsCert", \.tlsCertificate, "PEM certificate chain: serve https, wss and WHIP/WHEP over https (needs --tls-key)."),
        .text("tlsKey", \.tlsKey, "PEM private key of --tls-cert."),
        .choice(
            "logLevel", \.logLevel, ["trace", "debug", "info", "notice", "warning", "error", "critical"],
            "Least important log lines written to standard error."),
    ]

    static let identity: [ServerSetting] = [
        ServerSetting(
            key: "sdkAppId", kind: .integer(1...Int.max), help: "The application's SDKAppID (needs --secret-key).", isSecret: false,
            read: { $0.sdkAppId.map { .integer(Int(clamping: $0)) } },
            write: { configuration, value in if case .integer(let id) = value { configuration.sdkAppId = UInt64(id) } }),
        .text("secretKey", \.secretKey, secret: true, "The application's secret key; without it a development key is kept in the data directory."),
        .text("dataDir", \.dataDirectory, "Directory for the SQLite database and replays."),
        .text(
            "webhookUrl", \.webhookURL,
            "http:// or https:// URL that room, media, publish task, commerce and PK events are posted to, signed, from a durable outbox (needs --webhook-key; docs/webhooks.md)."),
        .text(
            "webhookKey", \.webhookKey, secret: true,
            "TRTC's callback key, 1 to 32 letters and digits: each webhook's Sign header is base64 of HMAC-SHA256 of the body with it."),
        .integer(
            "maxPendingWebhooks", \.maxPendingWebhooks, 1...10_000_000, "Most webhooks waiting for delivery; beyond it new events are dropped and counted."),
        .flag(
            "requirePrivateMapKey", \.requirePrivateMapKey,
            "Entering a room needs a PrivateMapKey for the user and room; its privileges decide creating, entering, sending and receiving."),
    ]

    static let limits: [ServerSetting] = [
        .integer("maxAnchors", \.maxAnchorsPerRoom, 1...1_000, "Most anchors one room may have."),
        .integer(
            "maxOutboxBytes", \.maxOutboxBytes, LiveRoomServer.maxSignalingFrameSize...(1 << 30),
            "Most bytes of signaling messages that may wait for one client before it is disconnected."),
        .duration("loginTimeout", \.loginTimeout, 1...600, "Seconds a signaling connection may stay without entering a room before it is closed."),
        .integer(
            "signalingNice", \.signalingNiceValue, Int(ServerConfiguration.signalingNiceRange.lowerBound)...Int(ServerConfiguration.signalingNiceRange.upperBound),
            "Nice value the signaling threads ask for, so that a busy room does not hold up the others' messages when the CPU is short; needs root or CAP_SYS_NICE, else they stay at 0."),
        .duration(
            "requestHeadTimeout", \.requestHeadTimeout, 1...300,
            "Seconds a connection to the HTTP port may take to send its first request head, TLS handshake included, and a kept-alive one may wait for its next request."),
        .duration(
            "reconnectGrace", \.reconnectGrace, 0...3_600,
            "Seconds a user whose signaling connection dropped keeps its seat and media for a reconnect; 0 leaves at once."),
        .duration("orderReservationTimeout", \.orderReservation, 1...604_800, "Seconds a purchase holds its stock unpaid before it expires and the stock goes back."),
        .integer(
            "maxWaitingPurchasesPerRoom", \.maxWaitingPurchasesPerRoom, 1...1_000_000,
            "Most purchases that may wait for the store in one room; past it a buyer hears -7316 (busy, retry) at once."),
        .integer(
            "maxWaitingPurchases", \.maxWaitingPurchases, 1...10_000_000,
            "Most purchases that may wait for the store in all rooms together; past it a buyer hears -7316 (busy, retry) at once."),
        .duration("replayMaxSeconds", \.maxReplayLength, 1...3_600, "Seconds a product replay records at most; unpop or the next pop ends it sooner."),
        .integer(
            "replayDiskQuota", \.replayDiskQuotaMiB, 1...(1 << 24),
            "MiB the product replays of all rooms may take on disk; past it the oldest replays are deleted (with their entries)."),
        .integer("maxConnections", \.maxConnections, 1...1_000_000, "Most signaling connections at once."),
        .integer(
            "maxConnectionsPerAddress", \.maxConnectionsPerAddress, 1...1_000_000,
            "Most signaling connections from one IPv4 address or IPv6 /64, and most TCP connections of any kind it holds on the HTTP port."),
        .duration(
            "pingInterval", \.pingInterval, 1...3_600,
            "Seconds between pings of each signaling connection; one that has not answered by the next ping is closed."),
        .integer("maxRoomsPerUser", \.maxRoomsPerUser, 1...10_000, "Most rooms one user id may be in at once."),
        .integer("maxRooms", \.maxRooms, 1...1_000_000, "Most rooms the server holds at once."),
        .integer("maxPkRooms", \.maxPKRooms, 1...100, "Most other rooms one room connects with in cross-room PK (3 in TRTC)."),
        .integer("maxPkAnchors", \.maxPKAnchorsPerRoom, 1...1_000, "Most anchors of one room taking part in cross-room PK (10 in TRTC)."),
        .duration("pkRequestTimeout", \.pkRequestTimeout, 1...600, "Seconds a PK request (requestPK) waits for the other anchor's answer."),
        .flag(
            "openPkLinks", \.openPKLinks,
            "Let connectOtherRoom link with any anchor of any room, as TRTC does; without it the other anchor must have accepted a requestPK, or its room's PK allow-list name the caller's room."),
        .duration(
            "mediaConnectTimeout", \.mediaConnectTimeout, 1...600,
            "Seconds a new peer connection may take to connect; a WHIP/WHEP session not connected by then ends."),
        .duration("consentTimeout", \.consentTimeout, 1...3_600, "Seconds a peer may send no ICE check (and no media) before it is dropped (30 in RFC 7675)."),
    ]

    static let tasks: [ServerSetting] = [
        .integer("taskRetryCount", \.taskRetryCount, 0...100, "Retries of a failed RTMP connection of a publish task."),
        .duration(
            "taskRetryIntervalMs", \.taskRetryInterval, 1...600_000, unit: .milliseconds(1), "Milliseconds between those retries."),
        .duration("taskIdleTimeout", \.taskIdleTimeout, 1...86_400, "Seconds a publish task lives on after every input has left."),
        .integer("maxTasksPerRoom", \.maxTasksPerRoom, 1...1_000, "Most publish media stream tasks one room may run at once."),
        .integer("maxTasksPerUser", \.maxTasksPerUser, 1...1_000, "Most publish media stream tasks one user may run at once."),
        .integer("maxTasks", \.maxTasks, 1...10_000, "Most publish media stream tasks the server runs at once."),
        .integer(
            "encodingBudget", \.encodingBudget, 0...(1 << 40),
            "Most pixels a second all tasks together may cost: what each encodes (width x height x fps) and decodes, weighted (docs/mixing.md); 1920x1080 at 30 fps is 62208000."),
        .list(
            "egressAllow", \.egressAllow,
            "A CIDR range, address or host name publish tasks may reach although it is not on the public internet."),
        .flag("rtmpsInsecure", \.rtmpsInsecure, "Do not verify rtmps:// server certificates."),
        .text(
            "imageDir", \.imageDirectory,
            "Directory whose image files tasks may name (placeholders, backgrounds, watermarks); without it only http(s) images."),
    ]

    static let cluster: [ServerSetting] = [
        .text(
            "clusterDb", \.clusterDatabase, secret: true,
            "Cluster mode: the PostgreSQL database the nodes share, postgres://USER:PASSWORD@HOST:5432/DATABASE, with ?sslmode=disable, prefer or require (docs/cluster.md). Without it the server runs alone on SQLite."),
        .text("nodeId", \.nodeId, "This node's id in the cluster, 1 to 64 letters, digits, '.', '_' or '-'; the default is a random id kept in the data directory."),
        .text(
            "nodeUrl", \.nodeURL,
            "The http(s)://host:port other nodes reach this node's signaling at; the default is the first media address and the HTTP port."),
    ]

    /// The setting a configuration file's key, a flag (`--port`) or an environment variable names.
    public static func named(_ name: String) -> ServerSetting? {
        all.first { $0.key == name || $0.flag == name || $0.environmentVariable == name }
    }
}

extension ServerSetting {
    /// One of a few words.
    static func choice(
        _ key: String, _ path: WritableKeyPath<ServerConfiguration, String> & Sendable, _ words: [String], _ help: String
    ) -> ServerSetting {
        ServerSetting(
            key: key, kind: .choice(words), help: help, isSecret: false,
            read: { .text($0[keyPath: path]) },
            write: { configuration, value in if case .text(let text) = value { configuration[keyPath: path] = text } })
    }
}

extension ServerConfiguration {
    /// ``signalingNice`` as the `Int` a setting reads and writes.
    var signalingNiceValue: Int {
        get { Int(signalingNice) }
        set { signalingNice = Int32(clamping: newValue) }
    }
}
