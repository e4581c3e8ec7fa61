import LiveRoomSFU
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The media port: one UDP socket and one ICE-TCP listening socket on one event loop, the SFU
/// router behind them.
///
/// The loop is a thread of its own, apart from the loops that serve signaling and HTTP, so a
/// burst of requests (a flash sale's thousands of buyers) never delays packets.
///
/// Packets are handled synchronously on the event loop (STYLE §3); the room hub reaches the
/// router through futures submitted to the same loop, so its commands run in order.
final class MediaService: MediaPort, Service, Sendable {
    let eventLoop: any EventLoop
    private let channel: any Channel
    private let tcpListener: (any Channel)?
    private let router: NIOLoopBound<SFURouter>
    private let handler: NIOLoopBound<MediaChannelHandler>
    let port: Int
    /// The ICE-TCP port, if the server listens on one.
    let tcpPort: Int?
    private let logger: Logger

    /// Binds the media port. `port` 0 picks a free one; `tcpPort` is the ICE-TCP port (0 picks a
    /// free one, nil listens on none); `advertisedHosts` are the addresses put in SDP candidates,
    /// best first. `tcpLimits` bounds the ICE-TCP connections in total and per address.
    static func bind(
        host: String, port: Int, tcpPort: Int?, tcpLimits: ConnectionLimits, advertisedHosts: [String], certificate: DTLSCertificate,
        connectTimeout: Duration, consentTimeout: Duration,
        logger: Logger, onPeerClosed: @escaping @Sendable (SFURouter.OwnerID, SFURouter.PublisherKey?, String) -> Void
    ) async throws -> MediaService {
        let eventLoop = Self.loops.next()
        let channel = try await DatagramBootstrap(group: eventLoop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            // Vector reads split the receive buffer among the messages: 32 datagrams of up to 2 KiB.
            .channelOption(.datagramVectorReadMessageCount, value: 32)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 32 * 2048))
            .bind(host: host, port: port).get()
        let boundPort = channel.localAddress?.port ?? port
        // The ICE-TCP listener hands accepted connections to the handler, made once both ports are known.
        let media = NIOLoopBoundBox.makeEmptyBox(valueType: MediaChannelHandler.self, eventLoop: eventLoop)
        var tcpListener: (any Channel)?
        if let tcpPort {
            do {
                tcpListener = try await Self.listenICETCP(host: host, port: tcpPort, eventLoop: eventLoop, media: media)
            } catch {
                try? await channel.close()
                throw error
            }
        }
        let boundTCPPort = tcpListener?.localAddress?.port
        let (router, handler) = try await eventLoop.submit {
            let router = SFURouter(
                certificate: certificate, hosts: advertisedHosts, port: UInt16(boundPort), tcpPort: boundTCPPort.map(UInt16.init),
                connectTimeout: connectTimeout, consentTimeout: consentTimeout)
            let handler = MediaChannelHandler(router: router, logger: logger, tcpLimits: tcpLimits, onPeerClosed: onPeerClosed)
            media.value = handler
            return (NIOLoopBound(router, eventLoop: eventLoop), NIOLoopBound(handler, eventLoop: eventLoop))
        }.get()
        let service = MediaService(
            eventLoop: eventLoop, channel: channel, tcpListener: tcpListener, router: router, handler: handler, port: boundPort, tcpPort: boundTCPPort,
            logger: logger)
        try await eventLoop.submit {
            let handler = handler.value
            try channel.pipeline.syncOperations.addHandler(handler)
            // Timers: ICE consent, DTLS retransmission, held-back keyframe requests, idle ICE-TCP connections.
            eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(20), delay: .milliseconds(20)) { task in
                guard channel.isActive else {
                    task.cancel()
                    return
                }
                handler.runTimers()
            }
        }.get()
        return service
    }

    /// Listens for ICE-TCP connections (RFC 6544 passive candidates) on the media loop: each
    /// accepted connection is admitted under the limits and its RFC 4571 frames go to `handler`.
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

    /// The media thread, kept for the life of the process.
    private static let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    private init(
        eventLoop: any EventLoop, channel: any Channel, tcpListener: (any Channel)?, router: NIOLoopBound<SFURouter>,
        handler: NIOLoopBound<MediaChannelHandler>, port: Int, tcpPort: Int?, logger: Logger
    ) {
        self.eventLoop = eventLoop
        self.channel = channel
        self.tcpListener = tcpListener
        self.router = router
        self.handler = handler
        self.port = port
        self.tcpPort = tcpPort
        self.logger = logger
    }

    func run() async throws {
        try? await gracefulShutdown()
        try? await tcpListener?.close()
        try? await channel.close()
    }

    // MARK: Commands from the room hub (each runs on the media loop, in call order)

    func publish(owner: UInt64, roomId: String, userId: String, offer: String) -> EventLoopFuture<(answer: String, audio: Bool, video: Bool)> {
        let router = self.router
        return eventLoop.submit {
            do {
                return try router.value.publish(owner: owner, roomId: roomId, userId: userId, offer: offer, now: .now)
            } catch {
                throw error
            }
        }
    }

    func subscribe(owner: UInt64, roomId: String, publisherId: String, offer: String) -> EventLoopFuture<String> {
        let router = self.router
        return eventLoop.submit {
            try router.value.subscribe(owner: owner, roomId: roomId, publisherId: publisherId, offer: offer, now: .now)
        }
    }

    func restartICE(
        owner: UInt64, target: SFURouter.ICERestartTarget, remote: ICECredentials, fingerprint: SDPFingerprint?
    ) -> EventLoopFuture<SFURouter.ICERestartAnswer?> {
        let router = self.router
        return eventLoop.submit {
            try router.value.restartICE(owner: owner, target: target, remote: remote, fingerprint: fingerprint, now: .now)
        }
    }

    func unsubscribe(owner: UInt64, publisherId: String, roomId: String?) {
        let router = self.router
        eventLoop.execute { router.value.unsubscribe(owner: owner, publisherId: publisherId, roomId: roomId) }
    }

    func setForwarding(owners: [UInt64], publisher: SFURouter.PublisherKey, audio: Bool, video: Bool) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute {
            for owner in owners {
                handler.value.emit(router.value.setForwarding(owner: owner, publisher: publisher, audio: audio, video: video, now: .now))
            }
        }
    }

    func stopPublishing(roomId: String, userId: String) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute { handler.value.emit(router.value.stopPublishing(roomId: roomId, userId: userId)) }
    }

    func close(owner: UInt64) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute { handler.value.emit(router.value.close(owner: owner)) }
    }

    /// Sets the publishers `tap` receives (an empty set removes the tap) and where their packets go.
    func setTap(_ tap: SFURouter.TapID, publishers: Set<SFURouter.PublisherKey>, sink: @escaping TapSink) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute {
            handler.value.sinks[tap] = publishers.isEmpty ? nil : sink
            handler.value.emit(router.value.setTap(tap, publishers: publishers, now: .now))
        }
    }

    /// A tap asks a publisher for a keyframe.
    func requestKeyframe(for tap: SFURouter.TapID, of publisher: SFURouter.PublisherKey) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute { handler.value.emit(router.value.requestKeyframe(for: tap, of: publisher, now: .now)) }
    }

    /// Starts a publisher the server feeds itself (a mix published into a room).
    /// `onKeyframeRequest` runs on the media loop when a subscriber needs a keyframe.
    func publishLocal(_ key: SFURouter.PublisherKey, codecs: [RTPCodec], onKeyframeRequest: @escaping @Sendable () -> Void) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute {
            handler.value.keyframeHandlers[key] = onKeyframeRequest
            router.value.publishLocal(key, codecs: codecs)
        }
    }

    func stopLocal(_ key: SFURouter.PublisherKey) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute {
            handler.value.keyframeHandlers[key] = nil
            router.value.stopLocal(key)
        }
    }

    /// RTP packets (unprotected) of a local publisher, sent on in order.
    func sendLocal(_ packets: [(packet: [UInt8], kind: MediaKind)], of key: SFURouter.PublisherKey) {
        let (router, handler) = (self.router, self.handler)
        eventLoop.execute {
            let now = ContinuousClock.now
            let outputs = packets.flatMap { router.value.sendLocal($0.packet, kind: $0.kind, of: key, now: now) }
            handler.value.emit(outputs)
        }
    }

    /// The router's counters and its number of peer connections, read on its loop.
    func statistics() async throws -> (counters: SFURouter.Counters, peers: Int) {
        let router = self.router
        return try await eventLoop.submit { (router.value.counters, router.value.peerCount) }.get()
    }
}
