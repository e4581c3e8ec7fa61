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

/// Writes the datagrams among a transport's events to `channel` (the caller flushes) and
/// returns the rest.
func writeSends(_ events: [PeerTransport.Event], to channel: any Channel) -> [PeerTransport.Event] {
    var rest: [PeerTransport.Event] = []
    for event in events {
        if case .send(let bytes, let to) = event {
            if let remote = to.socketAddress { channel.write(AddressedEnvelope(remoteAddress: remote, data: bytes), promise: nil) }
        } else {
            rest.append(event)
        }
    }
    return rest
}

/// The client side of a peer connection from our offer and the server's answer: controlling
/// ICE toward the answer's candidate, DTLS active.
func makeClientTransport(
    answer answerText: String, offered: [SDPNegotiation.OfferedSection], local: TransportDescription, ice: ICECredentials,
    certificate: DTLSCertificate, now: ContinuousClock.Instant
) throws -> (PeerTransport, [NegotiatedTrack]) {
    let answer = try SessionDescription.parse(answerText)
    let remote = try TransportDescription(of: answer)
    let tracks = try SDPNegotiation.tracks(ofAnswer: answer, offered: offered)
    guard let candidate = remote.candidates.first, let ip = IPAddress(candidate.address) else {
        throw BenchError("the answer has no usable ICE candidate")
    }
    let server = TransportAddress(address: ip, port: candidate.port)
    let transport = try PeerTransport(
        ice: .controlling(ICEControllingAgent(local: ice, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddress: server, now: now)),
        certificate: certificate, localDescription: local, remoteDescription: remote)
    return (transport, tracks)
}
