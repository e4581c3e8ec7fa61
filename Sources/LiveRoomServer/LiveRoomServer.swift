import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import LiveRoomAdmin
import LiveRoomCluster
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomPostgres
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomSecureTransport
import LiveRoomStore
import LiveRoomTaskRunner
import LiveRoomWebhooks
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Webhook settings the server cannot use (``ServerConfiguration/webhookProblem(url:key:)``).
struct WebhookSettingsError: Error, CustomStringConvertible {
    var description: String
}

/// The room server: WebSocket signaling at `/ws`, the admin API under `/v1/` and `/v4/`, WHIP/WHEP,
/// replays, and the audience's watch page at `/watch/<room>`.
public struct LiveRoomServer: Sendable {
    /// Largest signaling frame a client may send; a larger one closes that connection (1009).
    public static let maxSignalingFrameSize = 64 * 1024

    public let configuration: ServerConfiguration
    public let logger: Logger

    public init(configuration: ServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The SDKAppID and secret key the server runs with, and whether they are the
    /// development ones from the data directory.
    public struct Credentials: Sendable {
        public var sdkAppId: UInt64
        public var secretKey: String
        public var isDevelopment: Bool
    }

    /// Opens the store and settles the credentials.
    public func prepare() throws -> (RoomStore, Credentials) {
        // The data directory holds the database and the development secret: the server's user only.
        try FileManager.default.createDirectory(
            atPath: configuration.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: configuration.dataDirectory)
        let store = try RoomStore(path: (configuration.dataDirectory as NSString).appendingPathComponent("liveroom.sqlite"))
        try store.closeUnfinished(at: Int64(Date().timeIntervalSince1970 * 1000), reason: "server restarted")
        if let secretKey = configuration.secretKey {
            return (store, Credentials(sdkAppId: configuration.sdkAppId ?? ServerConfiguration.developmentSdkAppId, secretKey: secretKey, isDevelopment: false))
        }
        // No secret given: use the development secret kept in the data directory, made on first start.
        let secret = try store.setting("development.secretKey") {
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        return (store, Credentials(sdkAppId: configuration.sdkAppId ?? ServerConfiguration.developmentSdkAppId, secretKey: secret, isDevelopment: true))
    }

    /// The media ports the server listens on.
    public struct MediaPorts: Sendable {
        public var udp: Int
        /// The ICE-TCP port; nil when ICE-TCP is off.
        public var tcp: Int?
    }

    /// Asks for ``ServerConfiguration/signalingNice`` on the signaling threads (``SignalingPriority``).
    private func raiseSignalingPriority() async {
        let nice = configuration.signalingNice
        guard nice != 0 else { return }
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator()) + [RoomHub.executorLoop]
        let took = await SignalingPriority.apply(nice, to: loops)
        if took == loops.count {
            logger.info("Signaling threads run at nice \(nice)")
        } else {
            logger.notice(
                "Signaling threads stay at nice 0: a lower nice value needs root or CAP_SYS_NICE (--signaling-nice, LIVEROOM_SIGNALING_NICE; 0 turns this off)",
                metadata: [LogKey.limit: "\(nice)"])
        }
    }

    /// Runs until SIGTERM or SIGINT. `onRunning` gets the HTTP address and the media ports once they listen.
    public func run(onRunning: @escaping @Sendable (Credentials, SocketAddress, MediaPorts) async -> Void = { _, _, _ in }) async throws {
        let (local, credentials) = try prepare()
        let cluster = try await prepareCluster(credentials: credentials)
        // The shop, room history and webhook outbox: this node's SQLite database, or in cluster
        // mode PostgreSQL, shared by the nodes (settings stay in SQLite either way).
        let store: any ShopStore & RoomHistoryStore & WebhookOutbox = cluster?.shop ?? local
        let replayDirectory = try await prepareReplayDirectory(store)
        let recorder = RoomRecorder(store: store, logger: logger)
        let webhooks = try makeWebhooks(store: store, credentials: credentials)
        let hub = try makeHub(
            credentials: credentials, inCluster: cluster, store: store, replayDirectory: replayDirectory, recorder: recorder, webhooks: webhooks)
        let (media, advertised) = try await bindMedia(hub: hub, inCluster: cluster != nil, credentials: credentials)
        // Every connection is admitted under the per-address and total caps before any byte is
        // read, and closed unless its first request head (TLS handshake included) comes in time.
        let connectionGuard = try ConnectionGuard(
            maxTotal: configuration.maxConnections, maxPerAddress: configuration.maxConnectionsPerAddress,
            headTimeout: configuration.requestHeadTimeout,
            tls: try Self.tlsConfiguration(certificate: configuration.tlsCertificate, key: configuration.tlsKey))
        var nodes: ClusterNodes?
        if let cluster { nodes = await join(cluster, hub: hub, media: media, connectionGuard: connectionGuard) }
        await raiseSignalingPriority()
        logger.notice(
            "Media candidates",
            metadata: [
                "addresses": "\(advertised.joined(separator: ", "))", "port": "\(media.port)",
                "tcpPort": "\(media.tcpPort.map(String.init) ?? "off")", "loops": "\(configuration.mediaLoops)",
            ])
        let auth = AdminAuth(sdkAppId: credentials.sdkAppId, secretKey: credentials.secretKey)
        let router = makeRouter(
            hub: hub, admin: AdminAPI(hub: hub, store: store, sdkAppId: credentials.sdkAppId), auth: auth, webhooks: webhooks,
            cluster: cluster?.membership, media: media,
            forwarding: cluster.map {
                ClusterForwarding(membership: $0.membership, orders: store, sdkAppId: credentials.sdkAppId, logger: logger)
            })
        ReplayRoutes(store: store, directory: replayDirectory, auth: auth, elsewhere: cluster.map { Self.replayLocator($0) }).add(to: router)
        WatchRoutes(
            hub: hub, page: WatchPage(sdkAppId: credentials.sdkAppId, isDevelopment: credentials.isDevelopment),
            developmentSecret: credentials.isDevelopment ? credentials.secretKey : nil
        ).add(to: router)
        let webSocketResponder = router.buildResponder()
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            // A kept-alive HTTP connection that sends no next request in time is closed; upgraded
            // WebSocket connections are kept alive by pings instead.
            http1: .init(idleTimeout: TimeAmount(configuration.requestHeadTimeout)),
            ws: .init(maxFrameSize: Self.maxSignalingFrameSize, autoPing: .enabled(timePeriod: configuration.pingInterval)))
        let server = HTTPServerBuilder { responder in
            connectionGuard.wrap(
                HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: channelConfiguration))
        }
        let app = makeApplication(
            router: router, server: server, media: media, nodes: nodes, advertised: advertised, credentials: credentials, onRunning: onRunning)
        let hubService = RoomHubService(hub: hub)
        let group = ServiceGroup(
            configuration: .init(
                // Shut down in reverse order: rooms first (clients are told), then HTTP, then the
                // recorder and the webhook outbox, which write what is queued before they return.
                // The shop's pool first, so it stops last: the outbox and the recorder write to it.
                services: (cluster.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0.shopPool)] } ?? [])
                    + (webhooks.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? [])
                    + (cluster.map { [.init(service: $0.pool), .init(service: ClusterService(membership: $0.membership))] } ?? []) + [
                    .init(service: recorder),
                    .init(service: media),
                    .init(service: app),
                    .init(service: hubService),
                    .init(service: ExpiryService(hub: hub, sharedShop: cluster != nil)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EADDRNOTAVAIL || error.errnoCode == EACCES {
            // The media ports are bound above; the one the group binds is the HTTP listener's.
            throw ListenError("HTTP and WebSocket", setting: "--port, LIVEROOM_PORT", host: configuration.host, port: configuration.port, error: error)
        }
    }

    /// Binds the media port (UDP and ICE-TCP) and attaches it to the hub; returns it with the
    /// addresses clients are told.
    private func bindMedia(hub: RoomHub, inCluster: Bool, credentials: Credentials) async throws -> (MediaService, [String]) {
        let certificate = try DTLSCertificate()
        let advertised = AdvertisedAddresses.choose(
            bindHost: configuration.host, announced: configuration.announceAddresses, interfaces: AdvertisedAddresses.interfaces())
        let media = try await MediaService.bind(
            host: configuration.host, port: configuration.mediaPort, tcpPort: configuration.iceTCPPort,
            tcpLimits: ConnectionLimits(maxTotal: configuration.maxICETCPConnections, maxPerAddress: configuration.maxConnectionsPerAddress),
            advertisedHosts: advertised,
            certificate: certificate, connectTimeout: configuration.mediaConnectTimeout, consentTimeout: configuration.consentTimeout,
            loopCount: configuration.mediaLoops, nodeRelay: !inCluster ? nil : NodeMediaRelay(secretKey: credentials.secretKey), logger: logger
        ) { owner, publisher, _ in
            Task { await hub.mediaSessions.peerLost(session: owner, wasPublishing: publisher != nil) }
        }
        await hub.attach(media)
        return (media, advertised)
    }

    /// Joins the cluster: the other nodes to the hub, node-to-node messages to the hub, live
    /// nodes' media addresses to the media port's relay and to the connection caps' exemptions.
    private func join(_ cluster: Cluster, hub: RoomHub, media: MediaService, connectionGuard: ConnectionGuard) async -> ClusterNodes {
        let messenger = NodeMessenger(
            nodeId: cluster.membership.nodeId, relayToken: cluster.membership.relayToken, logger: logger
        ) { node in await hub.pkPeerLost(node) }
        let nodes = ClusterNodes(membership: cluster.membership, messenger: messenger)
        await hub.attach(nodes)
        await cluster.membership.attach(hub)
        // The node relay takes mirror requests only from the media ports of live nodes, and
        // their connections to the HTTP port are under the total cap only.
        await cluster.membership.watchPeers { addresses in
            let peers = Set(addresses.compactMap(NodeMediaRelay.address))
            media.setRelayPeers(peers)
            connectionGuard.gate.exempt(Set(peers.map { ConnectionLimits.key($0.socketAddress) }))
        }
        return nodes
    }

    /// The webhook outbox's sender, when a webhook URL is set.
    private func makeWebhooks(store: any WebhookOutbox, credentials: Credentials) throws -> WebhookService? {
        if let url = configuration.webhookURL {
            guard let target = HTTPTarget(url: url), let key = configuration.webhookKey else {
                throw WebhookSettingsError(description: ServerConfiguration.webhookProblem(url: url, key: configuration.webhookKey) ?? "bad webhook settings")
            }
            return WebhookService(
                store: store, client: HTTPPostClient(target: target), key: key,
                sdkAppId: credentials.sdkAppId, maxPending: configuration.maxPendingWebhooks, logger: logger)
        }
        return nil
    }

    /// The room hub with this server's limits and services.
    private func makeHub(
        credentials: Credentials, inCluster cluster: Cluster?, store: any ShopStore & RoomHistoryStore & WebhookOutbox, replayDirectory: String,
        recorder: RoomRecorder, webhooks: WebhookService?
    ) throws -> RoomHub {
        let egress = try EgressPolicy(allow: configuration.egressAllow)
        var rooms = RoomsStateMachine.Configuration(
            sdkAppId: credentials.sdkAppId, secretKey: credentials.secretKey, maxAnchorsPerRoom: configuration.maxAnchorsPerRoom,
            maxRoomsPerUser: configuration.maxRoomsPerUser, maxRooms: configuration.maxRooms,
            requirePrivateMapKey: configuration.requirePrivateMapKey, maxPKRooms: configuration.maxPKRooms,
            maxPKAnchorsPerRoom: configuration.maxPKAnchorsPerRoom, pkRequestTimeout: configuration.pkRequestTimeout)
        // A PK with a room that is not here is asked of its home node.
        rooms.roomsOnOtherNodes = cluster != nil
        rooms.openPKLinks = configuration.openPKLinks
        let settings = HubSettings(
            rooms: rooms,
            tasks: .init(
                task: .init(
                    retryCount: configuration.taskRetryCount, retryInterval: configuration.taskRetryInterval, idleTimeout: configuration.taskIdleTimeout),
                maxTasksPerRoom: configuration.maxTasksPerRoom, maxTasksPerUser: configuration.maxTasksPerUser, maxTasks: configuration.maxTasks,
                encodingBudget: configuration.encodingBudget, egress: egress),
            egress: EgressResolver(policy: egress, insecureTLS: configuration.rtmpsInsecure), imageDirectory: configuration.imageDirectory,
            maxOutboxBytes: configuration.maxOutboxBytes, reconnectGrace: configuration.reconnectGrace,
            orderReservation: configuration.orderReservation, maxWaitingPurchasesPerRoom: configuration.maxWaitingPurchasesPerRoom,
            maxWaitingPurchases: configuration.maxWaitingPurchases, replayDirectory: replayDirectory, maxReplayLength: configuration.maxReplayLength,
            replayDiskQuota: Int64(configuration.replayDiskQuotaMiB) << 20, nodeId: cluster?.membership.nodeId)
        return RoomHub(services: HubServices(settings: settings, catalogue: store, recorder: recorder, webhooks: webhooks, logger: logger), logger: logger)
    }

    /// The HTTP application, which registers this node in the cluster and reports its
    /// addresses once it listens.
    private func makeApplication(
        router: Router<ServerRequestContext>, server: HTTPServerBuilder, media: MediaService, nodes: ClusterNodes?, advertised: [String],
        credentials: Credentials, onRunning: @escaping @Sendable (Credentials, SocketAddress, MediaPorts) async -> Void
    ) -> some Service {
        Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "liveroom-server"),
            onServerRunning: { channel in
                guard let address = channel.localAddress else { return }
                if let nodes {
                    let port = address.port ?? configuration.port
                    let scheme = configuration.tlsCertificate == nil ? "http" : "https"
                    let host = advertised.first ?? configuration.host
                    let url = configuration.nodeURL ?? "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
                    let mediaAddresses = advertised.map { "\($0.contains(":") ? "[\($0)]" : $0):\(media.port)" }
                    await nodes.register(signalingURL: url, mediaAddresses: mediaAddresses)
                }
                await onRunning(credentials, address, MediaPorts(udp: media.port, tcp: media.tcpPort))
            },
            logger: logger
        )
    }

    /// The cluster parts of a node: the membership and the connection pool it needs running.
    struct Cluster: Sendable {
        let membership: ClusterMembership
        let pool: ClusterPoolService
        /// The shop, room history and webhook outbox in PostgreSQL, with its own pool.
        let shop: PostgresShopStore
        let shopPool: ClusterPoolService
    }

    /// Where a replay's file is in cluster mode: here, on another live node (its URL), or on
    /// a node that is down.
    static func replayLocator(_ cluster: Cluster) -> @Sendable (String) async -> ReplayRoutes.ReplayLocation {
        { replayId in
            guard let (_, node) = try? await cluster.shop.replayAndNode(replayId), node != cluster.shop.nodeId else { return .here }
            guard let view = try? await cluster.membership.store.view(), let holder = view.alive.first(where: { $0.nodeId == node }) else {
                return .nodeDown(nodeId: node)
            }
            return .node(baseURL: holder.registration.signalingURL)
        }
    }

    /// In cluster mode (`--cluster-db`): the node id (given, or a random one kept in the data
    /// directory), the PostgreSQL store with its tables made; nil without `--cluster-db`, when
    /// no PostgreSQL code runs. An unreachable database is an error here, before anything listens.
    func prepareCluster(credentials: Credentials) async throws -> Cluster? {
        guard let text = configuration.clusterDatabase else { return nil }
        let url: ClusterDatabaseURL
        do {
            url = try ClusterDatabaseURL(text)
        } catch {
            throw ClusterStartError(description: error.description)
        }
        let nodeId = try configuration.nodeId ?? Self.keptNodeId(dataDirectory: configuration.dataDirectory)
        guard ClusterRules.isValidNodeId(nodeId) else {
            throw ClusterStartError(description: "--node-id must be 1 to 64 letters, digits, '.', '_' or '-', not \"\(nodeId)\"")
        }
        let store = PostgresClusterStore(url: url, logger: logger)
        let pool = Task { await store.run() }
        do {
            try await store.prepare(timeout: .seconds(10))
        } catch {
            pool.cancel()
            throw ClusterStartError(description: "cannot use the cluster database \(url.redacted): \(error)")
        }
        let shop = PostgresShopStore(url: url, nodeId: nodeId, timeout: PostgresShopStore.defaultTimeout, logger: logger)
        let shopPool = Task { await shop.run() }
        do {
            try await shop.prepare()
            try await shop.closeUnfinished(at: Int64(Date().timeIntervalSince1970 * 1000), reason: "server restarted")
        } catch {
            pool.cancel()
            shopPool.cancel()
            throw ClusterStartError(description: "cannot use the cluster database \(url.redacted): \(error)")
        }
        logger.notice("Cluster mode", metadata: [LogKey.node: "\(nodeId)", LogKey.url: "\(url.redacted)"])
        let membership = ClusterMembership(
            store: store, nodeId: nodeId, relayToken: ClusterRouting.relayToken(secretKey: credentials.secretKey), logger: logger)
        return Cluster(membership: membership, pool: ClusterPoolService(pool: pool), shop: shop, shopPool: ClusterPoolService(pool: shopPool))
    }

    /// The node id kept in `<data-dir>/node-id`, made (random) on first start.
    static func keptNodeId(dataDirectory: String) throws -> String {
        let path = (dataDirectory as NSString).appendingPathComponent("node-id")
        if let kept = try? String(contentsOfFile: path, encoding: .utf8) {
            let id = kept.trimmingCharacters(in: .whitespacesAndNewlines)
            if ClusterRules.isValidNodeId(id) { return id }
        }
        let id = ClusterRules.randomNodeId()
        try (id + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return id
    }

    /// `<data-dir>/replays`, the server's user's only, cleared of files no replay owns (a
    /// recording cut short by a crash).
    func prepareReplayDirectory(_ store: any CatalogueStore) async throws -> String {
        let directory = (configuration.dataDirectory as NSString).appendingPathComponent("replays")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let owned = try await store.replayFileNames()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where !owned.contains(name) {
            try? FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent(name))
            logger.notice("Removed a replay file no replay owns", metadata: [LogKey.url: "\(name)"])
        }
        return directory
    }

    /// The server's TLS settings from PEM files, or nil for plain http.
    static func tlsConfiguration(certificate: String?, key: String?) throws -> TLSConfiguration? {
        guard let certificate, let key else { return nil }
        let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        // TLS 1.0 and 1.1 are refused (their handshake fails with a protocol_version alert).
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    func makeRouter(
        hub: RoomHub, admin: AdminAPI, auth: AdminAuth, webhooks: WebhookService? = nil, cluster: ClusterMembership? = nil,
        media: MediaService? = nil, forwarding: ClusterForwarding? = nil
    ) -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        let logger = self.logger

        router.get("/healthz") { _, _ in "ok" }

        // Prometheus metrics, read from the hub and the media port when scraped.
        let metrics = ServerMetrics()
        router.get("/metrics") { _, _ -> Response in
            let rooms = await hub.metricsSnapshot()
            let media = try? await hub.mediaSessions.media?.statistics()
            let text = metrics.exposition(
                rooms: rooms, media: media ?? MediaStatistics(), webhooks: webhooks?.statistics ?? .init(),
                purchases: hub.shops.answerDelays.withLock { $0 })
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }

        SignalingRoutes(
            hub: hub, cluster: cluster, media: media, gate: ConnectionGate(maxTotal: configuration.maxConnections, maxPerAddress: configuration.maxConnectionsPerAddress),
            loginTimeout: configuration.loginTimeout, logger: logger
        ).add(to: router)

        AdminRoutes(hub: hub, admin: admin, auth: auth, cluster: cluster, forwarding: forwarding, logger: logger).add(to: router)
        NodeRoutes(hub: hub, forwarding: forwarding).add(to: router)
        WHIPRoutes(hub: hub, auth: auth, forwarding: forwarding, media: forwarding == nil ? nil : media).add(to: router)
        return router
    }

    /// Checks an admin call's credentials; the response to send when they fail, in the
    /// endpoint's own error format.
    static func refusal(_ request: Request, auth: AdminAuth, body: (AdminAuth.Failure) -> JSONValue) -> Response? {
        let query = request.uri.queryParameters
        do throws(AdminAuth.Failure) {
            try auth.check(
                sdkappid: query.get("sdkappid"), identifier: query.get("identifier"), usersig: query.get("usersig"),
                now: Int64(Date().timeIntervalSince1970))
            return nil
        } catch {
            let status: HTTPResponse.Status = if case .missing = error { .unauthorized } else { .forbidden }
            return json(body(error), status: status)
        }
    }

    /// The answer to a node message (`POST /v1/cluster/message`) that does not carry the relay
    /// token, or reaches a server that runs alone.
    static func notFromNode() -> Response {
        json(["ErrorCode": .number(Double(ErrorCode.invalidParameter)), "ErrorMessage": "only the nodes of the cluster send these"], status: .forbidden)
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: value.jsonText)))
    }
}

/// The request context of every route: Hummingbird's WebSocket context plus the client's address.
struct ServerRequestContext: Hummingbird.RequestContext, WebSocketRequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection, for closing it at once (a client that does not read cannot be sent a close frame).
    let channel: any Channel
    /// Where the WebSocket upgrade finds the route's handler, until the handler runs.
    let webSocketSlot = WebSocketSlot<Self>()
    var webSocket: WebSocketHandlerReference<Self> { webSocketSlot.reference }

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}

/// Holds a request context's WebSocket handler reference until the WebSocket handler runs
/// (``release()``). Hummingbird's WebSocket router stores the route's handler together with the
/// context inside that reference, which the context itself holds: a cycle that kept every
/// WebSocket connection's context, channel, buffers and logger alive after it closed (about
/// 5 KB a connection, every one ever accepted; found with heaptrack). Letting go of the
/// reference once the upgrade has used it breaks the cycle.
final class WebSocketSlot<Context: WebSocketRequestContext>: Sendable {
    private let held = Mutex<WebSocketHandlerReference<Context>?>(.init())

    /// The reference; after ``release()``, an empty one.
    var reference: WebSocketHandlerReference<Context> { held.withLock { $0 } ?? .init() }

    func release() {
        held.withLock { $0 = nil }
    }
}

extension Router<ServerRequestContext> {
    /// A WebSocket route whose upgrade lets go of the request context's handler reference
    /// before `handler` runs (``WebSocketSlot``).
    func webSocket(_ path: RouterPath, handler: @escaping WebSocketDataHandler<WebSocketRouterContext<ServerRequestContext>>) {
        ws(path) { _, _ in
            .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            context.requestContext.webSocketSlot.release()
            try await handler(inbound, outbound, context)
        }
    }
}

/// Closes every room on shutdown so clients are told before the server goes.
struct RoomHubService: Service {
    let hub: RoomHub

    func run() async throws {
        try? await gracefulShutdown()
        await hub.services.replays.stopAll()
        await hub.shutdown()
    }
}

/// Finishes the PK battles a stop interrupted; then, once a second, expires unpaid
/// reservations (returning their stock) and unanswered PK requests.
///
/// In cluster mode (`sharedShop`) a battle may be running on another node, so only battles
/// overdue by ``overdueGrace`` (their node died) are finished, at start and every 10 s.
struct ExpiryService: Service {
    let hub: RoomHub
    var sharedShop = false
    static let overdueGrace = Duration.seconds(10)

    func run() async throws {
        await hub.battles.finishInterrupted(overdueBy: sharedShop ? Self.overdueGrace : nil)
        try? await cancelWhenGracefulShutdown {
            var ticks = 0
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                await hub.shops.expireOrders()
                await hub.expirePKRequests()
                ticks += 1
                if sharedShop, ticks % 10 == 0 { await hub.battles.finishInterrupted(overdueBy: Self.overdueGrace) }
            }
        }
    }
}

/// Cluster mode could not start: a bad `--cluster-db` or `--node-id`, or the database cannot be reached.
public struct ClusterStartError: Error, CustomStringConvertible {
    public var description: String
}

/// Runs the PostgreSQL connection pool until shutdown (after the cluster service has left).
/// (A pool runs once: it was started before the tables were made, and is stopped here.)
struct ClusterPoolService: Service {
    let pool: Task<Void, Never>

    func run() async throws {
        try? await gracefulShutdown()
        // The cluster service (started after this one, stopped before it) has left the cluster.
        pool.cancel()
        await pool.value
    }
}

/// A flag set once and read from several tasks.
final class SharedFlag: Sendable {
    private let state = Mutex(false)
    func set() { state.withLock { $0 = true } }
    var isSet: Bool { state.withLock { $0 } }
}
