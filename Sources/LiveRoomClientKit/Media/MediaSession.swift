import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import NIOPosix

/// The media plane of a `liveroom join`: one event loop running the ``MediaEngine``, a UDP
/// socket per peer connection (the server tells its peer connections apart by our
/// address) and, when ICE tries the server's ICE-TCP candidates, a TCP connection per
/// candidate, a 10 ms timer for ICE, DTLS, RTCP and statistics, and the encoder thread.
/// Every method hops to the event loop; the signaling side calls them from its tasks.
public final class MediaSession: Sendable {
    /// What the signaling side must learn from the media plane.
    public enum Notification: Sendable {
        case publishClosed(reason: String)
        case subscriptionClosed(userId: String, reason: String)
        /// A connection's path stopped answering: send `restartIce` with this offer for the
        /// subscription to `userId`, or (nil) the publishing connection.
        case iceRestart(userId: String?, offer: String)
    }

    /// Loop-confined state behind the session.
    private final class LoopState {
        /// An ICE-TCP connection toward one server candidate: being opened, open, or failed
        /// (not tried again before a second has passed).
        enum TCPPath {
            case connecting
            case open(Channel)
            case failed(ContinuousClock.Instant)
        }

        var engine: MediaEngine!
        var sockets: [MediaEngine.ConnectionID: Channel] = [:]
        var tcp: [MediaEngine.ConnectionID: [TransportAddress: TCPPath]] = [:]
        var written: Set<MediaEngine.ConnectionID> = []
        var writtenTCP: [Channel] = []
        var nextID = 1
        var timer: RepeatedTask?

        func flush() {
            for id in written { sockets[id]?.flush() }
            written.removeAll(keepingCapacity: true)
            for channel in writtenTCP { channel.flush() }
            writtenTCP.removeAll(keepingCapacity: true)
        }

        /// Closes a peer connection's UDP socket and ICE-TCP connections.
        func release(_ id: MediaEngine.ConnectionID) {
            flush()
            sockets.removeValue(forKey: id)?.close(promise: nil)
            for case .open(let channel) in (tcp.removeValue(forKey: id) ?? [:]).values { channel.close(promise: nil) }
        }
    }

    private let group: MultiThreadedEventLoopGroup
    private let eventLoop: EventLoop
    private let state: NIOLoopBound<LoopState>
    private let bindHost: String
    /// Notifications, in order.
    public let notifications: AsyncStream<Notification>
    private let continuation: AsyncStream<Notification>.Continuation

    /// Starts the media plane for `userId`.
    /// - Parameter bindHost: the local address for media sockets (`0.0.0.0`, or `127.0.0.1` for loopback tests).
    public init(userId: String, options: MediaOptions, printer: EventPrinter, bindHost: String = "0.0.0.0") async throws {
        if let directory = options.recordDirectory {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let certificate = try ClientCertificate()
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let eventLoop = group.next()
        self.eventLoop = eventLoop
        self.bindHost = bindHost
        (notifications, continuation) = AsyncStream.makeStream(of: Notification.self)
        let continuation = self.continuation
        state = try await eventLoop.submit {
            let state = LoopState()
            let bound = NIOLoopBound(state, eventLoop: eventLoop)
            let environment = MediaEngine.Environment(
                send: { id, bytes, address in
                    switch address.transport {
                    case .udp:
                        guard let channel = state.sockets[id], let remote = address.socketAddress else { return }
                        channel.write(AddressedEnvelope(remoteAddress: remote, data: bytes), promise: nil)
                        state.written.insert(id)
                    case .tcp:
                        Self.sendTCP(bytes, to: address, connection: id, state: bound, eventLoop: eventLoop)
                    }
                },
                release: { id in state.release(id) },
                event: { printer.print($0) },
                notify: { notification in
                    switch notification {
                    case .publishClosed(let reason): continuation.yield(.publishClosed(reason: reason))
                    case .subscriptionClosed(let userId, let reason): continuation.yield(.subscriptionClosed(userId: userId, reason: reason))
                    case .iceRestart(let userId, let offer): continuation.yield(.iceRestart(userId: userId, offer: offer))
                    }
                },
                makePipeline: { start, videoMuted, audioMuted in
                    let pipeline = PublishPipeline(
                        options: options, label: userId, start: start, videoMuted: videoMuted, audioMuted: audioMuted,
                        deliver: { output in
                            eventLoop.execute {
                                bound.value.engine.publish(output, now: .now)
                                bound.value.flush()
                            }
                        },
                        failure: { message in
                            printer.printError(LiveRoomError(ErrorCode.invalidField, "cannot publish: \(message)"), requestType: "publish")
                        })
                    pipeline.run()
                    return pipeline
                },
                wallClock: { NTPTime(unixSeconds: Date().timeIntervalSince1970) })
            state.engine = MediaEngine(userId: userId, options: options, certificate: certificate, environment: environment)
            state.timer = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(10), delay: .milliseconds(10)) { _ in
                bound.value.engine.tick(now: .now)
                bound.value.flush()
            }
            return bound
        }.get()
    }

    /// Runs `body` on the event loop with the engine, then flushes what it wrote.
    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (MediaEngine) throws -> T) async throws -> T {
        let state = self.state
        return try await eventLoop.submit {
            defer { state.value.flush() }
            return try body(state.value.engine)
        }.get()
    }

    /// Binds a UDP socket for a new peer connection and returns its id.
    private func openSocket() async throws -> MediaEngine.ConnectionID {
        let state = self.state
        let id = try await eventLoop.submit {
            let id = state.value.nextID
            state.value.nextID += 1
            return id
        }.get()
        let channel = try await DatagramBootstrap(group: eventLoop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramHandler { datagram, source in
                        state.value.engine.receive(datagram, connection: id, from: source, now: .now)
                        state.value.flush()
                    })
                }
            }
            .bind(host: bindHost, port: 0).get()
        try await eventLoop.submit { state.value.sockets[id] = channel }.get()
        return id
    }

    /// Writes a packet on the ICE-TCP connection to `address` (RFC 4571 framing), opening the
    /// connection first when there is none. A packet sent while it opens is dropped: only ICE
    /// checks go before a path is chosen, and they are repeated.
    private static func sendTCP(
        _ packet: ByteBuffer, to address: TransportAddress, connection id: MediaEngine.ConnectionID, state: NIOLoopBound<LoopState>,
        eventLoop: EventLoop
    ) {
        let now = ContinuousClock.now
        switch state.value.tcp[id]?[address] {
        case .open(let channel):
            guard channel.isWritable else { return }
            channel.write(ICETCPFraming.frame(packet), promise: nil)
            state.value.writtenTCP.append(channel)
            return
        case .connecting:
            return
        case .failed(let at) where now - at < .seconds(1):
            return
        case .failed, nil:
            break
        }
        guard state.value.sockets[id] != nil, let remote = address.socketAddress else { return }
        state.value.tcp[id, default: [:]][address] = .connecting
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(ICETCPFraming.Decoder()),
                        StreamPacketHandler(
                            onPacket: { packet in
                                state.value.engine.receive(packet, connection: id, from: address, now: .now)
                                state.value.flush()
                            },
                            onClose: {
                                if case .open? = state.value.tcp[id]?[address] { state.value.tcp[id]?[address] = .failed(.now) }
                            }),
                    ])
                }
            }
            .connect(to: remote)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    // The peer connection may have closed while this one was opening.
                    guard case .connecting? = state.value.tcp[id]?[address] else {
                        channel.close(promise: nil)
                        return
                    }
                    state.value.tcp[id]?[address] = .open(channel)
                case .failure:
                    if case .connecting? = state.value.tcp[id]?[address] { state.value.tcp[id]?[address] = .failed(.now) }
                }
            }
    }

    private func closeSocket(_ id: MediaEngine.ConnectionID) async {
        let state = self.state
        try? await eventLoop.submit { state.value.release(id) }.get()
    }

    /// A publish offer to send with `publish`.
    public func makePublishOffer() async throws -> String {
        try await onLoop { $0.makePublishOffer() }
    }

    /// Starts publishing with the server's answer; encoding starts once DTLS is up.
    public func startPublishing(answer: String) async throws {
        let id = try await openSocket()
        do {
            try await onLoop { try $0.startPublishing(answer: answer, connection: id, now: .now) }
        } catch {
            await closeSocket(id)
            throw error
        }
    }

    /// Stops encoding and closes the publishing connection.
    public func stopPublishing() async {
        try? await onLoop { $0.stopPublishing(now: .now) }
    }

    /// A subscribe offer for `userId`'s media.
    public func makeSubscribeOffer(userId: String) async throws -> String {
        try await onLoop { $0.makeSubscribeOffer(userId: userId) }
    }

    /// Starts receiving `userId`'s media with the server's answer.
    public func startSubscription(userId: String, answer: String) async throws {
        let id = try await openSocket()
        do {
            try await onLoop { try $0.startSubscription(userId: userId, answer: answer, connection: id, now: .now) }
        } catch {
            await closeSocket(id)
            throw error
        }
    }

    /// Sends `data` as SEI on our next `repeatCount` video frames (checked there: we must be
    /// publishing unmuted video).
    public func sendSEI(data: [UInt8], repeatCount: Int) async throws {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        try await onLoop { try $0.sendSEI(data: data, repeatCount: repeatCount, wallClockMilliseconds: now) }
    }

    /// Goes on with an ICE restart given the server's answer (`onIceRestartAnswer`).
    public func completeICERestart(userId: String?, answer: String) async throws {
        try await onLoop { try $0.completeICERestart(userId: userId, answer: answer, now: .now) }
    }

    /// Closes the subscription to `userId`.
    public func closeSubscription(userId: String) async {
        try? await onLoop { $0.closeSubscription(userId: userId, now: .now) }
    }

    /// The user left the room: no more `onStatistics` (the connections close at ``shutdown()``).
    public func leftRoom() async {
        try? await onLoop { $0.stopStatistics() }
    }

    /// Stops or resumes sending video or audio.
    public func setMuted(_ kind: MediaKind, _ muted: Bool) async {
        try? await onLoop { $0.setMuted(kind, muted) }
    }

    /// Closes every connection (DTLS close_notify), finishes the recordings and stops the loop.
    public func shutdown() async {
        let state = self.state
        let writers = (try? await eventLoop.submit { () -> [RecordingWriter] in
            let writers = state.value.engine.shutdown(now: .now)
            state.value.timer?.cancel()
            state.value.flush()
            for id in Array(state.value.sockets.keys) { state.value.release(id) }
            return writers
        }.get()) ?? []
        for writer in writers { writer.finish() }
        continuation.finish()
        try? await group.shutdownGracefully()
    }
}

/// Hands each packet of an ICE-TCP connection (already split by ``ICETCPFraming/Decoder``) to
/// a closure on the connection's event loop.
private final class StreamPacketHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let onPacket: (ByteBuffer) -> Void
    private let onClose: () -> Void

    init(onPacket: @escaping (ByteBuffer) -> Void, onClose: @escaping () -> Void) {
        self.onPacket = onPacket
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onPacket(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        onClose()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
