import Foundation
import LiveRoomProtocol
import LiveRoomRTP
import LiveRoomTransport
import NIOCore
import NIOPosix

/// The media plane of a `liveroom join`: one event loop running the ``MediaEngine``, a UDP
/// socket per peer connection (the server tells its peer connections apart by our
/// address), a 10 ms timer for ICE, DTLS, RTCP and statistics, and the encoder thread.
/// Every method hops to the event loop; the signaling side calls them from its tasks.
public final class MediaSession: Sendable {
    /// What the signaling side must learn from the media plane.
    public enum Notification: Sendable {
        case publishClosed(reason: String)
        case subscriptionClosed(userId: String, reason: String)
    }

    /// Loop-confined state behind the session.
    private final class LoopState {
        var engine: MediaEngine!
        var sockets: [MediaEngine.ConnectionID: Channel] = [:]
        var written: Set<MediaEngine.ConnectionID> = []
        var nextID = 1
        var timer: RepeatedTask?

        func flush() {
            for id in written { sockets[id]?.flush() }
            written.removeAll(keepingCapacity: true)
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
                    guard let channel = state.sockets[id], let remote = address.socketAddress else { return }
                    channel.write(AddressedEnvelope(remoteAddress: remote, data: bytes), promise: nil)
                    state.written.insert(id)
                },
                release: { id in
                    state.flush()
                    state.sockets.removeValue(forKey: id)?.close(promise: nil)
                },
                event: { printer.print($0) },
                notify: { notification in
                    switch notification {
                    case .publishClosed(let reason): continuation.yield(.publishClosed(reason: reason))
                    case .subscriptionClosed(let userId, let reason): continuation.yield(.subscriptionClosed(userId: userId, reason: reason))
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

    private func closeSocket(_ id: MediaEngine.ConnectionID) async {
        let state = self.state
        try? await eventLoop.submit { state.value.sockets.removeValue(forKey: id)?.close(promise: nil) }.get()
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
            for channel in state.value.sockets.values { channel.close(promise: nil) }
            state.value.sockets.removeAll()
            return writers
        }.get()) ?? []
        for writer in writers { writer.finish() }
        continuation.finish()
        try? await group.shutdownGracefully()
    }
}
