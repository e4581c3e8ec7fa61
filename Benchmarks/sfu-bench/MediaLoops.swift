import BenchSupport
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import NIOPosix

/// What one event loop of the bench owns: its subscribers (and, on the first loop, the
/// publisher), the tally they count into, and a 20 ms timer for ICE checks, DTLS
/// retransmissions and consent. Confined to that loop.
final class MediaLoopState {
    let eventLoop: any EventLoop
    var subscribers: [Int: BenchSubscriber] = [:]
    var publisher: BenchPublisher?
    let tally = ReceiveTally()
    var timer: RepeatedTask?

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func runTimers() {
        let now = ContinuousClock.now
        publisher?.runTimers(now: now)
        for subscriber in subscribers.values { subscriber.runTimers(now: now) }
    }
}

/// One bench event loop and its state.
struct MediaLoop: Sendable {
    let eventLoop: any EventLoop
    let state: NIOLoopBound<MediaLoopState>

    /// Binds a UDP socket on 127.0.0.1 whose datagrams go to `route` on this loop.
    func bindSocket(route: @escaping @Sendable (MediaLoopState, ByteBuffer, TransportAddress) -> Void) async throws -> any Channel {
        let state = self.state
        return try await DatagramBootstrap(group: eventLoop)
            // Vector reads (STYLE §7): a keyframe arrives as a burst of packets.
            .channelOption(.datagramVectorReadMessageCount, value: 16)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 16 * 2048))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramHandler { datagram, source in
                        route(state.value, datagram, source)
                    })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// Opens an ICE-TCP connection to `server` whose packets (RFC 4571 frames) go to `route` on this loop.
    func connectTCP(to server: TransportAddress, route: @escaping @Sendable (MediaLoopState, ByteBuffer, TransportAddress) -> Void) async throws -> any Channel {
        let state = self.state
        guard let remote = server.socketAddress else { throw BenchError("bad ICE-TCP candidate \(server)") }
        return try await ClientBootstrap(group: eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(ICETCPFraming.Decoder()), FrameHandler { frame in route(state.value, frame, server) },
                    ])
                }
            }
            .connect(to: remote).get()
    }

    /// Runs `body` on the loop with its state.
    func run<T: Sendable>(_ body: @escaping @Sendable (MediaLoopState) throws -> T) async throws -> T {
        let state = self.state
        return try await eventLoop.submit { try body(state.value) }.get()
    }
}

/// The bench's event loops: `threads` of them, each with a ``MediaLoopState``.
final class MediaLoops: Sendable {
    let group: MultiThreadedEventLoopGroup
    let loops: [MediaLoop]

    init(threads: Int) async throws {
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        var loops: [MediaLoop] = []
        for eventLoop in group.makeIterator() {
            let state = try await eventLoop.submit {
                let state = NIOLoopBound(MediaLoopState(eventLoop: eventLoop), eventLoop: eventLoop)
                state.value.timer = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(20), delay: .milliseconds(20)) { _ in
                    state.value.runTimers()
                }
                return state
            }.get()
            loops.append(MediaLoop(eventLoop: eventLoop, state: state))
        }
        self.loops = loops
    }

    /// The loop for the `index`-th subscriber, round robin.
    func loop(for index: Int) -> MediaLoop { loops[index % loops.count] }

    func shutdown() async {
        for loop in loops {
            try? await loop.run { state in
                state.timer?.cancel()
                state.publisher?.stop()
            }
        }
        try? await group.shutdownGracefully()
    }
}

/// Hands each packet of an ICE-TCP connection to a closure.
final class FrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let onFrame: (ByteBuffer) -> Void

    init(onFrame: @escaping (ByteBuffer) -> Void) {
        self.onFrame = onFrame
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onFrame(unwrapInboundIn(data))
    }
}

/// Writes the datagrams among a transport's events to `channel` (the caller flushes) and
/// returns the rest; on an ICE-TCP connection (`framed`) each goes with its RFC 4571 length.
func writeSends(_ events: [PeerTransport.Event], to channel: any Channel, framed: Bool = false) -> [PeerTransport.Event] {
    var rest: [PeerTransport.Event] = []
    for event in events {
        if case .send(let bytes, let to) = event {
            if framed {
                channel.write(ICETCPFraming.frame(bytes), promise: nil)
            } else if let remote = to.socketAddress {
                channel.write(AddressedEnvelope(remoteAddress: remote, data: bytes), promise: nil)
            }
        } else {
            rest.append(event)
        }
    }
    return rest
}

/// The answer's first candidate of `transport` (for TCP, a passive one).
func serverCandidate(in answerText: String, transport: TransportProtocol) throws -> TransportAddress {
    let remote = try TransportDescription(of: try SessionDescription.parse(answerText))
    guard let candidate = remote.candidates.first(where: { $0.transport.lowercased() == transport.rawValue }), let ip = IPAddress(candidate.address) else {
        throw BenchError("the answer has no usable \(transport.rawValue) ICE candidate")
    }
    return TransportAddress(address: ip, port: candidate.port, transport: transport)
}

/// The client side of a peer connection from our offer and the server's answer: controlling
/// ICE toward the answer's first candidate of `path`, DTLS active.
func makeClientTransport(
    answer answerText: String, offered: [SDPNegotiation.OfferedSection], local: TransportDescription, ice: ICECredentials,
    certificate: DTLSCertificate, transport path: TransportProtocol, now: ContinuousClock.Instant
) throws -> (PeerTransport, [NegotiatedTrack]) {
    let answer = try SessionDescription.parse(answerText)
    let remote = try TransportDescription(of: answer)
    let tracks = try SDPNegotiation.tracks(ofAnswer: answer, offered: offered)
    let server = try serverCandidate(in: answerText, transport: path)
    let transport = try PeerTransport(
        ice: .controlling(ICEControllingAgent(local: ice, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddress: server, now: now)),
        certificate: certificate, localDescription: local, remoteDescription: remote)
    return (transport, tracks)
}
