#if canImport(Glibc)
import Glibc
#endif
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import NIOPosix

/// A bench's light subscriber, confined to the event loop that owns it.
public protocol LoopSubscriber: AnyObject, SendableMetatype {
    /// What the subscribers of one loop share (sfu-bench: the tally they count into).
    associatedtype LoopShared
    static func makeLoopShared() -> LoopShared
    /// ICE checks, DTLS retransmissions, consent, and whatever else is due.
    func runTimers(now: ContinuousClock.Instant)
}

/// What one event loop of a bench owns: its subscribers (and, on the first loop, the
/// publisher), what they share, and a 20 ms timer for ICE checks, DTLS retransmissions and
/// consent. Confined to that loop.
public final class MediaLoopState<Subscriber: LoopSubscriber> {
    public let eventLoop: any EventLoop
    public var subscribers: [Int: Subscriber] = [:]
    public var publisher: BenchPublisher?
    public let shared = Subscriber.makeLoopShared()
    /// For a socket bound with `kernelArrival`, when the kernel queued the datagram being
    /// routed to it (CLOCK_MONOTONIC nanoseconds), if it says.
    public internal(set) var kernelArrival: UInt64?
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
public struct MediaLoop<Subscriber: LoopSubscriber>: Sendable {
    public typealias Route = @Sendable (MediaLoopState<Subscriber>, ByteBuffer, TransportAddress) -> Void

    public let eventLoop: any EventLoop
    let state: NIOLoopBound<MediaLoopState<Subscriber>>

    /// Binds a UDP socket on 127.0.0.1 whose datagrams go to `route` on this loop.
    ///
    /// With `kernelArrival`, the state's ``MediaLoopState/kernelArrival`` says when the kernel
    /// queued each datagram (`SIOCGSTAMPNS` after each read, one datagram a read): on loopback
    /// that is when the sender sent it, however long the bench then takes to read it.
    public func bindSocket(kernelArrival: Bool = false, route: @escaping Route) async throws -> any Channel {
        let state = self.state
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard bound else {
            close(descriptor)
            throw BenchError("cannot bind a UDP socket on 127.0.0.1: errno \(errno)")
        }
        // Vector reads (STYLE §7): a keyframe arrives as a burst of packets. Kernel timestamps
        // need one datagram a read, to ask for each one's.
        let vector = kernelArrival ? 1 : 16
        return try await DatagramBootstrap(group: eventLoop)
            .channelOption(.datagramVectorReadMessageCount, value: vector)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: vector * 2048))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramHandler { datagram, source in
                        if kernelArrival { state.value.kernelArrival = arrivalOfLastDatagram(on: descriptor) }
                        route(state.value, datagram, source)
                    })
                }
            }
            .withBoundSocket(descriptor).get()
    }

    /// Opens an ICE-TCP connection to `server` whose packets (RFC 4571 frames) go to `route` on this loop.
    public func connectTCP(to server: TransportAddress, route: @escaping Route) async throws -> any Channel {
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
    public func run<T: Sendable>(_ body: @escaping @Sendable (MediaLoopState<Subscriber>) throws -> T) async throws -> T {
        let state = self.state
        return try await eventLoop.submit { try body(state.value) }.get()
    }
}

/// A bench's event loops: `threads` of them, each with a ``MediaLoopState``, and optionally a
/// loop of its own for the publisher.
public final class MediaLoops<Subscriber: LoopSubscriber>: Sendable {
    public let group: MultiThreadedEventLoopGroup
    /// Every loop; the publisher's is the first.
    public let loops: [MediaLoop<Subscriber>]
    /// The loops subscribers are spread over.
    public let subscriberLoops: [MediaLoop<Subscriber>]

    /// - Parameters:
    ///   - publisherLoop: give the publisher a loop of its own, besides the `threads` subscriber loops.
    ///   - idleSubscribers: run the subscriber loops at `SCHED_IDLE`, so they only take CPU no
    ///     other process wants: on a machine the server shares with the bench, the server's
    ///     loops are then never kept waiting by the subscribers they serve, as with subscribers
    ///     on other machines. Linux only; elsewhere (or when refused) they stay as they are.
    public init(threads: Int, publisherLoop: Bool = false, idleSubscribers: Bool = false) async throws {
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads + (publisherLoop ? 1 : 0))
        var loops: [MediaLoop<Subscriber>] = []
        for (index, eventLoop) in group.makeIterator().enumerated() {
            let idle = idleSubscribers && (index > 0 || !publisherLoop)
            let state = try await eventLoop.submit {
                if idle { runThisThreadWhenIdle() }
                let state = NIOLoopBound(MediaLoopState<Subscriber>(eventLoop: eventLoop), eventLoop: eventLoop)
                state.value.timer = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(20), delay: .milliseconds(20)) { _ in
                    state.value.runTimers()
                }
                return state
            }.get()
            loops.append(MediaLoop(eventLoop: eventLoop, state: state))
        }
        self.loops = loops
        subscriberLoops = publisherLoop ? Array(loops.dropFirst()) : loops
    }

    /// The loop for the `index`-th subscriber, round robin.
    public func loop(for index: Int) -> MediaLoop<Subscriber> { subscriberLoops[index % subscriberLoops.count] }

    public func shutdown() async {
        for loop in loops {
            try? await loop.run { state in
                state.timer?.cancel()
                state.publisher?.stop()
            }
        }
        try? await group.shutdownGracefully()
    }
}

/// When the kernel queued the last datagram read from `descriptor`, in CLOCK_MONOTONIC
/// nanoseconds (SIOCGSTAMPNS gives CLOCK_REALTIME; the two are read together to convert).
private func arrivalOfLastDatagram(on descriptor: CInt) -> UInt64? {
    #if os(Linux)
    var stamp = timespec()
    guard ioctl(descriptor, 0x8907 /* SIOCGSTAMPNS */, &stamp) == 0 else { return nil }
    var realtime = timespec(), monotonic = timespec()
    clock_gettime(CLOCK_REALTIME, &realtime)
    clock_gettime(CLOCK_MONOTONIC, &monotonic)
    func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
    let arrival = nanoseconds(stamp) - nanoseconds(realtime) + nanoseconds(monotonic)
    return arrival > 0 ? UInt64(arrival) : nil
    #else
    return nil
    #endif
}

/// Lets the calling thread run only when no other wants the CPU (SCHED_IDLE).
private func runThisThreadWhenIdle() {
    #if os(Linux)
    var parameters = sched_param()
    parameters.sched_priority = 0
    _ = sched_setscheduler(0, 5 /* SCHED_IDLE */, &parameters)  // 0: the calling thread
    #endif
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
public func writeSends(_ events: [PeerTransport.Event], to channel: any Channel, framed: Bool = false) -> [PeerTransport.Event] {
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
