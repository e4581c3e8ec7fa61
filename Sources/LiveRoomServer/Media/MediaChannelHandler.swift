import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import NIOPosix

/// Reads one media loop's datagrams (and, through ``ICETCPConnectionHandler``, the packets of
/// the port's ICE-TCP connections) into its router, and writes what the router returns to the
/// UDP socket or the TCP connection it names, flushing after a packet with many copies and
/// at the end of each read burst. With several
/// loops, what belongs to another loop is handed to it in one batch per burst (``MediaLoops``).
final class MediaChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let router: SFURouter
    private let logger: Logger
    private let onPeerClosed: @Sendable (SFURouter.OwnerID, SFURouter.PublisherKey?, String) -> Void
    /// Where each tap's packets go.
    var sinks: [SFURouter.TapID: TapSink] = [:]
    /// Who makes keyframes for each local publisher.
    var keyframeHandlers: [SFURouter.PublisherKey: @Sendable () -> Void] = [:]

    /// The UDP socket, once the handler is in its pipeline.
    private var udp: (any Channel)?
    /// Writes the UDP datagrams in batches itself, when the port gave the handler its socket's
    /// descriptor; without it they go through the channel. The router forwards RTP straight
    /// into it.
    var sender: UDPBatchSender? {
        didSet { router.datagramSink = sender }
    }
    private var udpWritten = false
    /// Open ICE-TCP connections by the client's address, and when each was accepted.
    private var tcp: [TransportAddress: (channel: any Channel, accepted: ContinuousClock.Instant)] = [:]
    private var tcpWritten: Set<TransportAddress> = []
    private var tcpLimits: ConnectionLimits
    /// How long an ICE-TCP connection may stay without a valid check binding it to a peer connection.
    let tcpBindTimeout: Duration
    private var nextSweep: ContinuousClock.Instant?
    /// Packets not written because an ICE-TCP connection's send buffer was full.
    private(set) var tcpDropped = 0
    /// The port's other loops, when it has several; set once, before the first packet.
    var loops: MediaLoops? {
        didSet {
            // A publisher's packets go to the other loops at once (after anything already
            // waiting for them, so the order holds), not at the end of the read burst.
            router.packetRelay = loops == nil ? nil : { [unowned self] relay in
                for other in 0..<(self.loops?.count ?? 0) where other != self.router.shard {
                    self.hand(.relay(relay), to: other)
                    self.sendHandoffs(to: other)
                }
            }
        }
    }
    /// What this loop hands each other loop at the next flush, by loop.
    private var handoffs: [[MediaLoops.Handoff]] = []
    /// With several loops: opens a socket on the port connected to a publisher's address
    /// (``MediaService``). The kernel gives a connected socket the datagrams of its address
    /// before the port's shared sockets, so a publisher's packets are read by the loop that
    /// owns it instead of by whichever loop its address hashes to, and need no hand-off.
    var connectSocket: ((TransportAddress) throws -> CInt)?
    /// The connected socket of each of this loop's publishers, by owner: one each, to the
    /// address its media comes from now (the channel nil while it opens).
    private var publisherSockets: [SFURouter.OwnerID: (address: TransportAddress, channel: (any Channel)?)] = [:]
    /// Cluster mode: the port's node relay, and this loop's sealer of node relay datagrams.
    var nodeRelay: NodeMediaRelay? {
        didSet { sealer = nodeRelay.map { NodeRelaySealer(secret: NodeRelayDatagram.secret(fromSecretKey: $0.secretKey)) } }
    }
    private var sealer: NodeRelaySealer?
    /// The nodes that mirror each publisher (of this loop's router or not: the publisher's own router sends).
    private var exportTargets: [SFURouter.PublisherKey: Set<TransportAddress>] = [:]
    private var nextNodeTick: ContinuousClock.Instant?
    /// How often the first loop asks again for mirrors and expires exports.
    static let nodeTickInterval = Duration.milliseconds(200)

    init(
        router: SFURouter, logger: Logger, tcpLimits: ConnectionLimits = ConnectionLimits(maxTotal: 2000, maxPerAddress: 100),
        tcpBindTimeout: Duration = .seconds(10),
        onPeerClosed: @escaping @Sendable (SFURouter.OwnerID, SFURouter.PublisherKey?, String) -> Void
    ) {
        self.router = router
        self.logger = logger
        self.tcpLimits = tcpLimits
        self.tcpBindTimeout = tcpBindTimeout
        self.onPeerClosed = onPeerClosed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        udp = context.channel
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(unwrapInboundIn(data))
    }

    /// A datagram from the port's socket or from a publisher's connected socket.
    func receive(_ envelope: AddressedEnvelope<ByteBuffer>) {
        guard let source = TransportAddress(envelope.remoteAddress) else { return }
        if let nodeRelay, let first = envelope.data.getInteger(at: envelope.data.readerIndex, as: UInt8.self), NodeRelayDatagram.isRelay(firstByte: first) {
            if let action = nodeRelay.receive(Array(envelope.data.readableBytesView), from: source, now: .now) { broadcast(action) }
            return
        }
        withOutputs { router.receive(envelope.data, from: source, now: .now, into: &$0) }
        sender?.flush(ifAtLeast: Self.packetFlushThreshold)
    }

    /// The array the router appends a packet's outputs to, kept between packets so that
    /// forwarding one allocates none (a call while it is lent, from carrying out outputs, gets
    /// a new one).
    private var spareOutputs: [SFURouter.Output] = []

    /// Lets `body` append outputs to the spare array, then carries them out.
    private func withOutputs(_ body: (inout [SFURouter.Output]) -> Void) {
        var outputs = spareOutputs
        spareOutputs = []
        body(&outputs)
        if !outputs.isEmpty { handle(outputs) }
        outputs.removeAll(keepingCapacity: true)
        spareOutputs = outputs
    }

    /// Copies queued after one packet that are sent at once, before the next packet of a read
    /// burst is routed (fewer wait for the burst's end, the flush).
    static let packetFlushThreshold = 64

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        for case let channel? in publisherSockets.values.map(\.channel) { channel.close(promise: nil) }
        publisherSockets = [:]
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A UDP socket reports ICMP errors (e.g. a peer's port closed) here; it stays open.
        logger.debug("Media socket error", metadata: [LogKey.error: "\(error)"])
    }

    /// A batch another loop of the port handed this one.
    func receive(_ batch: [MediaLoops.Handoff], from origin: Int) {
        let now = ContinuousClock.now
        for handoff in batch {
            switch handoff {
            case .datagram(let datagram, let source):
                withOutputs { router.receive(datagram, from: source, handedOff: true, now: now, into: &$0) }
            case .write(let bytes, let address):
                send(bytes, to: address)
            case .relay(let relay):
                withOutputs { router.receiveRelay(relay, from: .loop(origin), now: now, into: &$0) }
            case .node(let action):
                perform(action, now: now)
            }
            sender?.flush(ifAtLeast: Self.packetFlushThreshold)
        }
        flush()
    }

    /// Runs the router's timers and closes ICE-TCP connections no peer connection uses.
    func runTimers() {
        let now = ContinuousClock.now
        handle(router.handleTimers(now: now))
        if router.shard == 0, let nodeRelay, nextNodeTick.map({ now >= $0 }) ?? true {
            nextNodeTick = now + Self.nodeTickInterval
            let (messages, actions) = nodeRelay.tick(now: now)
            for (message, address) in messages { sendNode(message, to: address) }
            for action in actions { broadcast(action) }
        }
        if nextSweep.map({ now >= $0 }) ?? true {
            nextSweep = now + .seconds(1)
            sweepTCP(now: now)
        }
        flush()
    }

    /// Carries out outputs produced outside a read (a command from the hub, on the loop), then flushes.
    func emit(_ outputs: [SFURouter.Output]) {
        guard !outputs.isEmpty else { return }
        handle(outputs)
        flush()
    }

    // MARK: ICE-TCP connections

    /// A new ICE-TCP connection: counted in under the limits (total and per address), or refused.
    func acceptTCP(_ channel: any Channel) -> TransportAddress? {
        guard let remote = channel.remoteAddress, var address = TransportAddress(remote) else { return nil }
        address.transport = .tcp
        if let refusal = tcpLimits.admit(ConnectionLimits.key(remote)) {
            logger.info("ICE-TCP connection refused", metadata: [LogKey.address: "\(address)", LogKey.error: "\(refusal.message)"])
            return nil
        }
        tcp[address] = (channel, .now)
        return address
    }

    /// One packet from an ICE-TCP connection.
    func receiveTCP(_ packet: ByteBuffer, from address: TransportAddress) {
        withOutputs { router.receive(packet, from: address, now: .now, into: &$0) }
    }

    /// An ICE-TCP connection closed.
    func closedTCP(_ address: TransportAddress) {
        guard let connection = tcp.removeValue(forKey: address) else { return }
        tcpWritten.remove(address)
        tcpLimits.release(ConnectionLimits.key(connection.channel.remoteAddress))
    }

    /// Closes connections that no valid check bound within ``tcpBindTimeout``, and those whose
    /// peer connection has gone.
    private func sweepTCP(now: ContinuousClock.Instant) {
        for (address, connection) in tcp where !router.isBound(address) && loops?.owner(of: address) == nil && now - connection.accepted >= tcpBindTimeout {
            connection.channel.close(promise: nil)
        }
    }

    var tcpConnectionCount: Int { tcp.count }

    // MARK: Carrying out

    private func handle(_ outputs: [SFURouter.Output]) {
        for output in outputs {
            switch output {
            case .send(let bytes, let address):
                send(bytes, to: address)
            case .peerClosed(let owner, let publisher, let reason):
                logger.info(
                    "Peer connection closed", metadata: [LogKey.session: "\(owner)", LogKey.user: "\(publisher?.userId ?? "-")", LogKey.error: "\(reason)"])
                onPeerClosed(owner, publisher, reason)
            case .tapped(let tap, let publisher, let codec, let packet):
                sinks[tap]?(publisher, codec, packet)
            case .localKeyframeRequest(let key):
                keyframeHandlers[key]?()
            case .unrouted(let datagram, let source, let shard):
                // An ICE check names its loop; anything else goes where a valid check bound its source.
                guard let loops, let owner = shard ?? loops.owner(of: source), owner != router.shard else {
                    router.countDropped(shard == nil ? .unknownAddress : .unknownLoop)
                    continue
                }
                // `hand` checks that the loop is one of the port's.
                hand(.datagram(datagram, from: source), to: owner)
            case .bound(let address, let publisher):
                loops?.bind(address, to: router.shard)
                if let publisher { openPublisherSocket(for: publisher, to: address) }
            case .released(let addresses):
                loops?.release(addresses, from: router.shard)
                for (owner, socket) in publisherSockets where addresses.contains(socket.address) {
                    publisherSockets[owner] = nil
                    socket.channel?.close(promise: nil)
                }
            case .relay(let relay, .mirrors):
                for other in 0..<(loops?.count ?? 0) where other != router.shard { hand(.relay(relay), to: other) }
            case .relay(let relay, .origin(.node(let index))):
                if let home = nodeRelay?.home(ofOrigin: .node(index)) { sendNode(NodeRelayMessage(relay), to: home) }
            case .relay(let relay, .origin(.loop(let other))):
                hand(.relay(relay), to: other)
            case .relay(let relay, .nodes):
                for node in exportTargets[NodeRelayMessage(relay).key] ?? [] { sendNode(NodeRelayMessage(relay), to: node) }
            }
        }
    }

    /// Opens this loop's connected socket for the publisher of `owner` at `address` (UDP,
    /// several loops), in place of one to an address it used before. Without one (it failed),
    /// its packets still come, handed over by the loop that reads them.
    private func openPublisherSocket(for owner: SFURouter.OwnerID, to address: TransportAddress) {
        guard address.transport == .udp, publisherSockets[owner]?.address != address, let connectSocket, let eventLoop = udp?.eventLoop else { return }
        publisherSockets.removeValue(forKey: owner)?.channel?.close(promise: nil)
        let socket: CInt
        do {
            socket = try connectSocket(address)
        } catch {
            logger.info("No connected socket for a publisher", metadata: [LogKey.address: "\(address)", LogKey.error: "\(error)"])
            return
        }
        publisherSockets[owner] = (address, nil)
        // The handler belongs to its loop; the socket's channel is on the same loop, so both
        // closures below run there, where the loop-bound handler may be used.
        let media = NIOLoopBound(self, eventLoop: eventLoop)
        MediaService.mediaSocketBootstrap(on: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(PublisherSocketReader(media: media.value)) }
            }
            .withBoundSocket(socket)
            .whenComplete { result in
                media.value.publisherSocketOpened(result, for: owner, to: address)
            }
    }

    /// The connected socket for `owner`'s publisher at `address` opened (or failed to).
    private func publisherSocketOpened(_ result: Result<any Channel, any Error>, for owner: SFURouter.OwnerID, to address: TransportAddress) {
        switch result {
        case .success(let channel):
            // Released or replaced while it opened: not needed any more.
            guard let current = publisherSockets[owner], current.address == address, current.channel == nil else {
                channel.close(promise: nil)
                return
            }
            publisherSockets[owner] = (address, channel)
        case .failure(let error):
            if publisherSockets[owner]?.address == address { publisherSockets[owner] = nil }
            logger.info("No connected socket for a publisher", metadata: [LogKey.address: "\(address)", LogKey.error: "\(error)"])
        }
    }

    // MARK: The node relay

    /// Carries out `action` here and hands it to the port's other loops.
    func broadcast(_ action: NodeMediaRelay.Action) {
        perform(action, now: .now)
        for other in 0..<(loops?.count ?? 0) where other != router.shard { hand(.node(action), to: other) }
    }

    private func perform(_ action: NodeMediaRelay.Action, now: ContinuousClock.Instant) {
        switch action {
        case .export(let key, let node, let isNew):
            exportTargets[key, default: []].insert(node)
            router.setExported(key, true)
            // The publisher's own router answers, and asks for a keyframe for the new copy.
            guard let codecs = router.ownTracks(of: key) else { return }
            sendNode(.published(key, codecs: codecs), to: node)
            if isNew { handle(router.receiveRelay(.keyframeRequest(key), from: NodeMediaRelay.viewerNode, now: now)) }
        case .unexport(let key, let node):
            exportTargets[key]?.remove(node)
            if exportTargets[key]?.isEmpty == true {
                exportTargets[key] = nil
                router.setExported(key, false)
            }
        case .relay(let relay, let origin):
            withOutputs { router.receiveRelay(relay, from: origin, now: now, into: &$0) }
        case .resend(let key, let kind, let lost, let node, let origin):
            let (packets, missing) = router.storedPackets(of: key, kind: kind, sequences: lost)
            for packet in packets { sendNode(.packet(key, kind, Array(buffer: packet.bytes)), to: node) }
            if !missing.isEmpty { handle(router.receiveRelay(.nack(key, kind, missing), from: origin, now: now)) }
        }
    }

    /// Seals `message` and writes it to the media port at `address`.
    func sendNode(_ message: NodeRelayMessage, to address: TransportAddress) {
        guard sealer != nil, let bytes = try? sealer!.seal(message) else { return }
        send(ByteBuffer(bytes: bytes), to: address)
        if case .packet = message { nodeRelay?.countSent(packet: true) } else { nodeRelay?.countSent(packet: false) }
    }

    /// Makes sure this loop's router mirrors `key` (the node relay answered before the
    /// hand-off of its answer reached this loop), for a subscription made now.
    func ensureMirror(_ key: SFURouter.PublisherKey, codecs: [RTPCodec], origin: SFURouter.Origin) {
        guard !router.hasTracks(of: key) else { return }
        handle(router.receiveRelay(.published(key, codecs: codecs), from: origin, now: .now))
    }

    /// Queues `handoff` for loop `other`, a loop of the port other than this one; any other
    /// number (which only a bug could make) is dropped and counted, never indexed.
    private func hand(_ handoff: MediaLoops.Handoff, to other: Int) {
        if handoffs.isEmpty { handoffs = Array(repeating: [], count: loops?.count ?? 0) }
        guard handoffs.indices.contains(other), other != router.shard else {
            router.countDropped(.unknownLoop)
            return
        }
        handoffs[other].append(handoff)
    }

    private func send(_ bytes: ByteBuffer, to address: TransportAddress) {
        // The ICE-TCP connections live on the first loop.
        if address.transport == .tcp, router.shard != 0 {
            hand(.write(bytes, to: address), to: 0)
            return
        }
        switch address.transport {
        case .udp:
            if let sender {
                sender.append(bytes, to: address)
                return
            }
            guard let udp, let remote = address.socketAddress else { return }
            udp.write(AddressedEnvelope(remoteAddress: remote, data: bytes), promise: nil)
            udpWritten = true
        case .tcp:
            guard let connection = tcp[address] else { return }
            // A connection that cannot keep up loses packets rather than queueing them without bound.
            guard connection.channel.isWritable else {
                tcpDropped += 1
                return
            }
            connection.channel.write(ICETCPFraming.frame(bytes), promise: nil)
            tcpWritten.insert(address)
        }
    }

    func flush() {
        if let sender, !sender.isEmpty { sender.flush() }
        if udpWritten {
            udpWritten = false
            udp?.flush()
        }
        for address in tcpWritten { tcp[address]?.channel.flush() }
        tcpWritten.removeAll(keepingCapacity: true)
        for other in handoffs.indices { sendHandoffs(to: other) }
    }

    private func sendHandoffs(to other: Int) {
        guard let loops, handoffs.indices.contains(other), !handoffs[other].isEmpty else { return }
        loops.send(handoffs[other], from: router.shard, to: other)
        handoffs[other] = []
    }
}

/// The pipeline of a publisher's connected socket: its datagrams go to the loop's
/// ``MediaChannelHandler`` like those of the port's socket.
final class PublisherSocketReader: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private unowned let media: MediaChannelHandler

    init(media: MediaChannelHandler) {
        self.media = media
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        media.receive(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        media.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors (the publisher's port closed): the socket stays until the address is released.
    }
}

/// The pipeline end of one ICE-TCP connection: its RFC 4571 frames go to the media port's
/// ``MediaChannelHandler`` on the same event loop.
final class ICETCPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let media: MediaChannelHandler
    private let address: TransportAddress

    init(media: MediaChannelHandler, address: TransportAddress) {
        self.media = media
        self.address = address
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        media.receiveTCP(unwrapInboundIn(data), from: address)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        media.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        media.closedTCP(address)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An oversized frame or a reset: the connection ends; its peer connection may use another path.
        context.close(promise: nil)
    }
}
