#if canImport(Glibc)
import Glibc
#endif
import LiveRoomSFU
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The media port: one UDP port (and one ICE-TCP listening port) served by one or more event
/// loops, each with its own socket on the port and its own SFU router (``MediaLoops``).
///
/// The loops are threads of their own, apart from the loops that serve signaling and HTTP, so a
/// burst of requests (a flash sale's thousands of buyers) never delays packets.
///
/// Packets are handled synchronously on the event loops (STYLE §3); the room hub reaches the
/// routers through futures submitted to their loops, so its commands run in order on each. A new
/// peer connection goes to the loops in turn; commands about existing ones go to every loop,
/// and each router carries out what concerns its own.
final class MediaService: MediaPort, Service, Sendable {
    /// One loop of the port.
    struct Loop: Sendable {
        let eventLoop: any EventLoop
        let channel: any Channel
        let router: NIOLoopBound<SFURouter>
        let handler: NIOLoopBound<MediaChannelHandler>

        /// Runs `body` on the loop, then carries out the outputs it returns.
        func run(_ body: @escaping @Sendable (SFURouter) -> [SFURouter.Output]) {
            let (router, handler) = (self.router, self.handler)
            eventLoop.execute { handler.value.emit(body(router.value)) }
        }
    }

    private let loops: [Loop]
    private let shared: MediaLoops?
    private let tcpListener: (any Channel)?
    let port: Int
    /// The ICE-TCP port, if the server listens on one.
    let tcpPort: Int?
    /// The loop the next peer connection goes to.
    private let nextLoop = Mutex(0)
    /// Cluster mode: publishers mirrored from and to other nodes.
    let nodeRelay: NodeMediaRelay?
    /// Owners of the peer connections made for connections this node relays to another
    /// node (ids far above the hub's sessions).
    private let nextRelayOwner = Atomic<UInt64>(1 << 62)

    /// Binds the media port. `port` 0 picks a free one; `tcpPort` is the ICE-TCP port (0 picks a
    /// free one, nil listens on none); `advertisedHosts` are the addresses put in SDP candidates,
    /// best first. `tcpLimits` bounds the ICE-TCP connections in total and per address.
    /// `loopCount` event loops serve the port (1 to ``SFURouter/maximumShards``).
    static func bind(
        host: String, port: Int, tcpPort: Int?, tcpLimits: ConnectionLimits, advertisedHosts: [String], certificate: DTLSCertificate,
        connectTimeout: Duration, consentTimeout: Duration, loopCount: Int = 1, nodeRelay: NodeMediaRelay? = nil,
        logger: Logger, onPeerClosed: @escaping @Sendable (SFURouter.OwnerID, SFURouter.PublisherKey?, String) -> Void
    ) async throws -> MediaService {
        let eventLoops = Array(Self.group(loopCount).makeIterator())
        // The ICE-TCP listener hands accepted connections to the first loop's handler, made once both ports are known.
        let first = NIOLoopBoundBox.makeEmptyBox(valueType: MediaChannelHandler.self, eventLoop: eventLoops[0])
        let (channels, descriptors) = try await bindUDP(host: host, port: port, on: eventLoops)
        var tcpListener: (any Channel)?
        if let tcpPort {
            do {
                tcpListener = try await ListenError.naming(
                    "ICE-TCP", setting: "--ice-tcp-port, LIVEROOM_ICE_TCP_PORT (--no-ice-tcp turns it off)", host: host, port: tcpPort
                ) {
                    try await Self.listenICETCP(host: host, port: tcpPort, eventLoop: eventLoops[0], media: first)
                }
            } catch {
                for channel in channels { try? await channel.close() }
                for (descriptor, _) in descriptors { Glibc.close(descriptor) }
                throw error
            }
        }
        let boundPort = channels[0].localAddress?.port ?? port
        let boundTCPPort = tcpListener?.localAddress?.port
        var loops: [Loop] = []
        for (shard, (eventLoop, channel)) in zip(eventLoops, channels).enumerated() {
            let (descriptor, family) = descriptors[shard]
            let (router, handler) = try await eventLoop.submit {
                let router = SFURouter(
                    certificate: certificate, hosts: advertisedHosts, port: UInt16(boundPort), tcpPort: boundTCPPort.map(UInt16.init),
                    connectTimeout: connectTimeout, consentTimeout: consentTimeout, shard: shard, shards: eventLoops.count)
                let handler = MediaChannelHandler(router: router, logger: logger, tcpLimits: tcpLimits, onPeerClosed: onPeerClosed)
                handler.sender = UDPBatchSender(descriptor: descriptor, family: family)
                handler.nodeRelay = nodeRelay
                if eventLoops.count > 1, let local = channel.localAddress {
                    handler.connectSocket = { remote in try Self.udpSocket(bound: local, sharedPort: true, connectedTo: remote) }
                }
                if shard == 0 { first.value = handler }
                return (NIOLoopBound(router, eventLoop: eventLoop), NIOLoopBound(handler, eventLoop: eventLoop))
            }.get()
            loops.append(Loop(eventLoop: eventLoop, channel: channel, router: router, handler: handler))
        }
        let shared = loops.count > 1 ? MediaLoops(members: loops.map { MediaLoops.Member(eventLoop: $0.eventLoop, handler: $0.handler) }) : nil
        for loop in loops {
            // The handler is bound to its loop: every closure that reaches it runs there.
            let (eventLoop, channel, handler) = (loop.eventLoop, loop.channel, loop.handler)
            try await eventLoop.submit {
                handler.value.loops = shared
                try channel.pipeline.syncOperations.addHandler(handler.value)
                // Timers: ICE consent, DTLS retransmission, held-back keyframe requests, idle ICE-TCP connections.
                eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(20), delay: .milliseconds(20)) { task in
                    guard channel.isActive else {
                        task.cancel()
                        return
                    }
                    handler.value.runTimers()
                }
            }.get()
        }
        return MediaService(loops: loops, shared: shared, tcpListener: tcpListener, port: boundPort, tcpPort: boundTCPPort, nodeRelay: nodeRelay)
    }

    /// One UDP socket on the media port for each loop, all sharing the port when there are
    /// several, with a duplicate descriptor of each for its loop's sender.
    static func bindUDP(host: String, port: Int, on eventLoops: [any EventLoop]) async throws -> ([any Channel], [(CInt, sa_family_t)]) {
        var channels: [any Channel] = []
        // Each loop's own descriptor of its socket, for its sender.
        var descriptors: [(CInt, sa_family_t)] = []
        do {
            for eventLoop in eventLoops {
                // The first socket picks the port when asked to; the others share it. The loop
                // reads through the channel and writes through its own descriptor of the socket.
                let sharedPort = channels.first?.localAddress?.port
                let (socket, address) = try await ListenError.naming("media UDP", setting: "--media-port, LIVEROOM_MEDIA_PORT", host: host, port: port) {
                    let address = try SocketAddress.makeAddressResolvingHost(host, port: sharedPort ?? port)
                    // A shared port admits any socket that shares too, another server's as well:
                    // the first socket checks that nobody holds the port.
                    if sharedPort == nil, port != 0, eventLoops.count > 1 { try Self.checkUDPPortFree(address) }
                    return (try Self.udpSocket(bound: address, sharedPort: eventLoops.count > 1), address)
                }
                let descriptor = dup(socket)
                guard descriptor >= 0 else {
                    Glibc.close(socket)
                    throw IOError(errnoCode: errno, reason: "dup")
                }
                descriptors.append((descriptor, sa_family_t(address.protocol.rawValue)))
                let channel = try await Self.mediaSocketBootstrap(on: eventLoop).withBoundSocket(socket).get()
                channels.append(channel)
            }
        } catch {
            for channel in channels { try? await channel.close() }
            for (descriptor, _) in descriptors { Glibc.close(descriptor) }
            throw error
        }
        return (channels, descriptors)
    }

    /// How a media socket is read, the port's own and a publisher's connected one alike: vector
    /// reads that split the receive buffer among the messages, 32 datagrams of up to 2 KiB.
    static func mediaSocketBootstrap(on eventLoop: any EventLoop) -> DatagramBootstrap {
        DatagramBootstrap(group: eventLoop)
            .channelOption(.datagramVectorReadMessageCount, value: 32)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 32 * 2048))
    }

    /// Throws EADDRINUSE when a socket holds `address` already, whatever its options: a probe
    /// without SO_REUSEADDR or SO_REUSEPORT cannot bind beside any.
    static func checkUDPPortFree(_ address: SocketAddress) throws {
        let probe = Glibc.socket(address.protocol.rawValue, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        defer { Glibc.close(probe) }
        guard address.withSockAddr({ Glibc.bind(probe, $0, socklen_t($1)) }) == 0 else { throw IOError(errnoCode: errno, reason: "bind to \(address)") }
    }

    /// A non-blocking UDP socket bound to `address`; `sharedPort`: other sockets bind the same
    /// port (SO_REUSEPORT) and the kernel spreads clients over them by their address, except
    /// those of a socket connected to them (`connectedTo`), which it gives to that one.
    static func udpSocket(bound address: SocketAddress, sharedPort: Bool, connectedTo remote: TransportAddress? = nil) throws -> CInt {
        let socket = Glibc.socket(address.protocol.rawValue, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var one: CInt = 1
        var ok = setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size)) == 0
        if ok, sharedPort { ok = setsockopt(socket, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<CInt>.size)) == 0 }
        if ok { ok = address.withSockAddr { Glibc.bind(socket, $0, socklen_t($1)) } == 0 }
        if ok, let remote {
            // The socket's own family: an IPv4 peer of an IPv6 socket as ::ffff:a.b.c.d.
            if address.protocol == .inet, var raw = remote.ipv4SocketAddress {
                ok = withUnsafePointer(to: &raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
            } else if address.protocol == .inet6 {
                var raw = remote.ipv6SocketAddress
                ok = withUnsafePointer(to: &raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } } == 0
            } else {
                ok = false
                errno = EAFNOSUPPORT
            }
        }
        guard ok else {
            let error = IOError(errnoCode: errno, reason: remote.map { "connect to \($0) from \(address)" } ?? "bind to \(address)")
            Glibc.close(socket)
            throw error
        }
        return socket
    }

    /// Listens for ICE-TCP connections (RFC 6544 passive candidates) on the first media loop:
    /// each accepted connection is admitted under the limits and its RFC 4571 frames go to `handler`.
    private static func listenICETCP(
        host: String, port: Int, eventLoop: any EventLoop, media: NIOLoopBoundBox<MediaChannelHandler?>
    ) async throws -> any Channel {
        try await ServerBootstrap(group: eventLoop, childGroup: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // At most 256 KiB wait to be sent on a connection; beyond that packets are dropped.
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 << 10, high: 256 << 10))
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    guard let media = media.value, let address = media.acceptTCP(child) else { throw ChannelError.inputClosed }
                    do {
                        try child.pipeline.syncOperations.addHandlers([
                            ByteToMessageHandler(ICETCPFraming.Decoder()), ICETCPConnectionHandler(media: media, address: address),
                        ])
                    } catch {
                        media.closedTCP(address)
                        throw error
                    }
                }
            }
            .bind(host: host, port: port).get()
    }

    /// The media threads, by how many a port has, kept for the life of the process.
    private static let groups = Mutex<[Int: MultiThreadedEventLoopGroup]>([:])

    private static func group(_ count: Int) -> MultiThreadedEventLoopGroup {
        groups.withLock { groups in
            if let group = groups[count] { return group }
            let group = MultiThreadedEventLoopGroup(numberOfThreads: count)
            groups[count] = group
            return group
        }
    }

    private init(loops: [Loop], shared: MediaLoops?, tcpListener: (any Channel)?, port: Int, tcpPort: Int?, nodeRelay: NodeMediaRelay?) {
        self.nodeRelay = nodeRelay
        self.loops = loops
        self.shared = shared
        self.tcpListener = tcpListener
        self.port = port
        self.tcpPort = tcpPort
    }

    func run() async throws {
        try? await gracefulShutdown()
        try? await tcpListener?.close()
        for loop in loops { try? await loop.channel.close() }
    }

    // MARK: The node relay (cluster mode)

    /// A new owner for the peer connections of a signaling connection relayed to another node.
    func newRelayOwner() -> UInt64 {
        nextRelayOwner.add(1, ordering: .relaxed).newValue
    }

    /// A subscription, made here, to a publisher of the node whose media port is `home`: this
    /// node mirrors the publisher (one copy, asked for once however many viewers) and the
    /// viewer's peer connection is served from the mirror.
    func subscribeMirrored(owner: UInt64, key: SFURouter.PublisherKey, offer: String, home: TransportAddress) async throws -> String {
        guard let nodeRelay else { throw NegotiationError("this node relays no media") }
        if try nodeRelay.want(key, from: home, viewer: owner, now: .now) { askMirror(key, from: home) }
        let deadline = ContinuousClock.now + NodeMediaRelay.answerTimeout
        var asked = ContinuousClock.now
        var mirrored = nodeRelay.mirrored(key)
        while mirrored == nil {
            guard ContinuousClock.now < deadline else {
                nodeRelay.release(viewer: owner, now: .now) { $0 == key }
                nodeRelay.countFailed()
                throw NegotiationError("the publisher's node did not answer: \(key.userId) is not publishing there")
            }
            try await Task.sleep(for: .milliseconds(50))
            if ContinuousClock.now - asked >= .milliseconds(500) {
                asked = .now
                askMirror(key, from: home)
            }
            mirrored = nodeRelay.mirrored(key)
        }
        let (codecs, origin) = mirrored!
        let loop = nextPeerLoop()
        for other in loops where other.eventLoop !== loop.eventLoop {
            other.run { router in
                router.unsubscribe(owner: owner, publisherId: key.userId, roomId: key.roomId)
                return []
            }
        }
        let (router, handler) = (loop.router, loop.handler)
        do {
            return try await loop.eventLoop.submit {
                handler.value.ensureMirror(key, codecs: codecs, origin: origin)
                return try router.value.subscribe(owner: owner, roomId: key.roomId, publisherId: key.userId, offer: offer, now: .now)
            }.get()
        } catch {
            nodeRelay.release(viewer: owner, now: .now) { $0 == key }
            throw error
        }
    }

    private func askMirror(_ key: SFURouter.PublisherKey, from home: TransportAddress) {
        let handler = loops[0].handler
        loops[0].eventLoop.execute {
            handler.value.sendNode(.mirror(key), to: home)
            handler.value.flush()
        }
    }

    /// The media addresses of the other live nodes (the only ones a mirror is sent to).
    func setRelayPeers(_ addresses: Set<TransportAddress>) {
        nodeRelay?.setPeers(addresses)
    }

    /// The loop the next peer connection goes to: each in turn.
    private func nextPeerLoop() -> Loop {
        loops[nextLoop.withLock { next in
            defer { next = (next + 1) % loops.count }
            return next
        }]
    }

    /// Runs `body` on every loop (a command about peer connections any of them may own).
    private func everywhere(_ body: @escaping @Sendable (SFURouter) -> [SFURouter.Output]) {
        for loop in loops { loop.run(body) }
    }

    // MARK: Commands from the room hub (each runs on the media loops, in call order)

    func publish(owner: UInt64, roomId: String, userId: String, offer: String) -> EventLoopFuture<(answer: String, audio: Bool, video: Bool)> {
        let loop = nextPeerLoop()
        // An earlier publishing connection of the user, on whichever loop, is replaced.
        for other in loops where other.eventLoop !== loop.eventLoop {
            other.run { $0.stopPublishing(roomId: roomId, userId: userId) }
        }
        let (router, handler) = (loop.router, loop.handler)
        return loop.eventLoop.submit {
            let result = try router.value.publish(owner: owner, roomId: roomId, userId: userId, offer: offer, now: .now)
            handler.value.emit(router.value.announce(SFURouter.PublisherKey(roomId: roomId, userId: userId)))
            return result
        }
    }

    func subscribe(owner: UInt64, roomId: String, publisherId: String, offer: String) -> EventLoopFuture<String> {
        let loop = nextPeerLoop()
        // An earlier subscription of the owner to the publisher, on whichever loop, is replaced.
        for other in loops where other.eventLoop !== loop.eventLoop {
            other.run { router in
                router.unsubscribe(owner: owner, publisherId: publisherId, roomId: roomId)
                return []
            }
        }
        let router = loop.router
        return loop.eventLoop.submit {
            try router.value.subscribe(owner: owner, roomId: roomId, publisherId: publisherId, offer: offer, now: .now)
        }
    }

    func restartICE(
        owner: UInt64, target: SFURouter.ICERestartTarget, remote: ICECredentials, fingerprint: SDPFingerprint?
    ) -> EventLoopFuture<SFURouter.ICERestartAnswer?> {
        // The loop that has the connection restarts it; the last loop answers that none has it.
        @Sendable func attempt(_ index: Int) -> EventLoopFuture<SFURouter.ICERestartAnswer?> {
            let (router, last) = (loops[index].router, index == loops.count - 1)
            return loops[index].eventLoop.submit { () throws -> (owned: Bool, answer: SFURouter.ICERestartAnswer?) in
                guard last || router.value.hasConnection(of: owner, for: target) else { return (false, nil) }
                return (true, try router.value.restartICE(owner: owner, target: target, remote: remote, fingerprint: fingerprint, now: .now))
            }.flatMap { result in
                result.owned ? self.loops[index].eventLoop.makeSucceededFuture(result.answer) : attempt(index + 1)
            }
        }
        return attempt(0)
    }

    func unsubscribe(owner: UInt64, publisherId: String, roomId: String?) {
        nodeRelay?.release(viewer: owner, now: .now) { $0.userId == publisherId && (roomId == nil || $0.roomId == roomId) }
        everywhere { router in
            router.unsubscribe(owner: owner, publisherId: publisherId, roomId: roomId)
            return []
        }
    }

    func setForwarding(owners: [UInt64], publisher: SFURouter.PublisherKey, audio: Bool, video: Bool) {
        everywhere { router in
            owners.flatMap { router.setForwarding(owner: $0, publisher: publisher, audio: audio, video: video, now: .now) }
        }
    }

    func stopPublishing(roomId: String, userId: String) {
        everywhere { $0.stopPublishing(roomId: roomId, userId: userId) }
    }

    func close(owner: UInt64) {
        nodeRelay?.release(viewer: owner, now: .now)
        everywhere { $0.close(owner: owner) }
    }

    /// Sets the publishers `tap` receives (an empty set removes the tap) and where their packets
    /// go. Every loop knows the tap; the loop a publisher is on hands its packets to the sink.
    func setTap(_ tap: SFURouter.TapID, publishers: Set<SFURouter.PublisherKey>, sink: @escaping TapSink) {
        for loop in loops {
            let (router, handler) = (loop.router, loop.handler)
            loop.eventLoop.execute {
                handler.value.sinks[tap] = publishers.isEmpty ? nil : sink
                handler.value.emit(router.value.setTap(tap, publishers: publishers, now: .now))
            }
        }
    }

    /// Cluster mode: the publishers of other nodes `tap` receives (a mix with a PK anchor of a
    /// room on another node), each with its node's media port: this node mirrors each once, as
    /// for a viewer, and stops when no tap or viewer needs it. Replaces the earlier set.
    func mirror(for tap: SFURouter.TapID, publishers: [SFURouter.PublisherKey: TransportAddress]) {
        guard let nodeRelay else { return }
        let viewer = Self.mirrorViewer(of: tap)
        nodeRelay.release(viewer: viewer, now: .now) { publishers[$0] == nil }
        for (key, home) in publishers {
            if (try? nodeRelay.want(key, from: home, viewer: viewer, now: .now)) == true { askMirror(key, from: home) }
        }
    }

    /// The node relay's viewer id of a tap: apart from sessions and relay owners (below 2^63).
    static func mirrorViewer(of tap: SFURouter.TapID) -> UInt64 { tap | 1 << 63 }

    /// A tap asks a publisher for a keyframe.
    func requestKeyframe(for tap: SFURouter.TapID, of publisher: SFURouter.PublisherKey) {
        everywhere { $0.requestKeyframe(for: tap, of: publisher, now: .now) }
    }

    // Local publishers live on the first loop, which relays their packets to the others.

    /// Starts a publisher the server feeds itself (a mix published into a room).
    /// `onKeyframeRequest` runs on the media loop when a subscriber needs a keyframe.
    func publishLocal(_ key: SFURouter.PublisherKey, codecs: [RTPCodec], onKeyframeRequest: @escaping @Sendable () -> Void) {
        let (router, handler) = (loops[0].router, loops[0].handler)
        loops[0].eventLoop.execute {
            handler.value.keyframeHandlers[key] = onKeyframeRequest
            router.value.publishLocal(key, codecs: codecs)
            handler.value.emit(router.value.announce(key))
        }
    }

    func stopLocal(_ key: SFURouter.PublisherKey) {
        let (router, handler) = (loops[0].router, loops[0].handler)
        loops[0].eventLoop.execute {
            handler.value.keyframeHandlers[key] = nil
            handler.value.emit(router.value.stopLocal(key))
        }
    }

    /// RTP packets (unprotected) of a local publisher, sent on in order.
    func sendLocal(_ packets: [(packet: [UInt8], kind: MediaKind)], of key: SFURouter.PublisherKey) {
        loops[0].run { router in
            let now = ContinuousClock.now
            return packets.flatMap { router.sendLocal($0.packet, kind: $0.kind, of: key, now: now) }
        }
    }

    /// The routers' counters (in total and by loop) and their number of peer connections, each read on its loop.
    func statistics() async throws -> MediaStatistics {
        var statistics = MediaStatistics()
        for loop in loops {
            let (router, handler) = (loop.router, loop.handler)
            let (counters, peers, unsent, delays) = try await loop.eventLoop.submit {
                (router.value.counters, router.value.peerCount, handler.value.sender?.dropped ?? 0, handler.value.sender?.delays ?? DelayHistogram())
            }.get()
            statistics.add(counters, peers: peers)
            statistics.sendDropped += unsent
            statistics.fanOutDelays = statistics.fanOutDelays + delays
        }
        statistics.handoffsDropped = shared?.dropped ?? 0
        statistics.relay = nodeRelay?.statistics
        return statistics
    }
}
