import BenchSupport
import Foundation
import LiveRoomProtocol
import LiveRoomSecureTransport
import LiveRoomTransport
import Logging
import NIOCore
import Synchronization

/// The two ways audience members arrive.
enum Phase: String, Sendable, CaseIterable {
    /// One after another, each waiting for its first keyframe (or the timeout), with a random pause between.
    case sequence
    /// All at once.
    case burst
}

/// What one run measures, and how.
struct JoinOptions: Sendable {
    var sequenceJoins: Int
    var burstJoins: Int
    /// How long a join may take, from opening its WebSocket to its first complete keyframe.
    var timeout: Duration
    /// The longest pause before a join of the sequence (each is uniform in 0...maxPause).
    var maxPause: Duration
    /// How long the publisher sends before the first join.
    var settle: Duration
    var threads: Int
}

/// What one phase measured against one server.
struct PhaseResult: Sendable {
    var joins: [JoinSample] = []
    /// Datagrams dropped for a full receive buffer during the phase (`/proc/net/udp`), at the
    /// server's sockets and at the bench's, read before the audience's sockets close.
    var serverSocketDrops = 0
    var benchSocketDrops = 0
}

/// One audience member's join, as measured.
struct JoinSample: Sendable {
    var signaling: SignalingTimeline?
    var media: MediaTimeline?
    /// Opening the WebSocket plus the timeout: later steps count as timed out.
    var deadline: ContinuousClock.Instant
    var failure: String?

    private func milliseconds(_ from: ContinuousClock.Instant?, _ to: ContinuousClock.Instant?) -> Double? {
        guard let from, let to else { return nil }
        return (to - from).milliseconds
    }

    private func inTime(_ instant: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        instant.flatMap { $0 <= deadline ? $0 : nil }
    }

    /// enterRoom sent → onEnterRoom; nil if it did not come in time.
    var enterMilliseconds: Double? { milliseconds(signaling?.enterSent, inTime(signaling?.entered)) }
    /// onEnterRoom → the first complete keyframe; nil if it did not come in time.
    var keyframeMilliseconds: Double? { milliseconds(signaling?.entered, inTime(media?.firstKeyframe)) }
    /// The parts of the latter: subscribe → answer; answer → ICE selected (including the
    /// bench applying the answer); ICE → DTLS connected; DTLS → first complete keyframe.
    var answerMilliseconds: Double? { milliseconds(signaling?.entered, signaling?.answered) }
    var iceMilliseconds: Double? { milliseconds(signaling?.answered, media?.selected) }
    var dtlsMilliseconds: Double? { milliseconds(media?.selected, media?.connected) }
    var connectedToKeyframeMilliseconds: Double? { milliseconds(media?.connected, inTime(media?.firstKeyframe)) }
    /// The first video packet → the first complete keyframe.
    var firstPacketToKeyframeMilliseconds: Double? { milliseconds(media?.firstVideoPacket, inTime(media?.firstKeyframe)) }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1e3 + Double(components.attoseconds) / 1e15 }
}

/// One server binary, started, measured through both phases, and stopped.
struct JoinRun: Sendable {
    static let sdkAppId: UInt64 = 1_400_000_000
    static let secretKey = "bench"
    static let roomId = "join-bench"
    static let anchorId = "anchor"

    let server: ServerProcess
    let loops: MediaLoops<JoinSubscriber>
    let identity: BenchIdentity
    let media: PreencodedMedia
    let options: JoinOptions
    let logger: Logger

    /// Starts `binary`, publishes, runs the phases, and stops everything it started (also on error).
    static func measure(
        binary: String, round: Int, identity: BenchIdentity, media: PreencodedMedia, options: JoinOptions, logger: Logger
    ) async throws -> [Phase: PhaseResult] {
        let server = try await ServerProcess.start(binary: binary, sdkAppId: sdkAppId, secretKey: secretKey)
        let signalSources = server.stopOnSignals()
        defer { for source in signalSources { source.cancel() } }
        let loops: MediaLoops<JoinSubscriber>
        do {
            loops = try await MediaLoops(threads: options.threads)
        } catch {
            await server.stop()
            throw error
        }
        let run = JoinRun(server: server, loops: loops, identity: identity, media: media, options: options, logger: logger)
        do {
            let samples = try await run.phases(round: round)
            await loops.shutdown()
            await server.stop()
            return samples
        } catch {
            await loops.shutdown()
            await server.stop()
            throw error
        }
    }

    private func phases(round: Int) async throws -> [Phase: PhaseResult] {
        let publisher = try await loops.loops[0].startPublisher(
            signalingURL: server.signalingURL, identity: identity, userId: Self.anchorId, room: Self.roomId, media: media, logger: logger)
        do {
            try await Task.sleep(for: options.settle)
            try await checkAlive()
            // The same pauses for every binary of a round, so they meet the GOP at comparable points.
            var random = XorShiftRandom(seed: 0x10_1A_B0 &+ UInt64(round))
            var results: [Phase: PhaseResult] = [:]
            results[.sequence] = try await sequence(random: &random)
            try await checkAlive()
            try await Task.sleep(for: .milliseconds(500))
            results[.burst] = try await burst(firstID: 1_000)
            try await checkAlive()
            await publisher.close()
            return results
        } catch {
            await publisher.close()
            throw error
        }
    }

    /// Receive-buffer drops so far at the server's sockets and at this process's; with `since`, the difference.
    private func socketDrops(since start: (server: Int, bench: Int) = (0, 0)) -> (server: Int, bench: Int) {
        (udpReceiveDrops(pid: server.pid) - start.server, udpReceiveDrops(pid: getpid()) - start.bench)
    }

    private func checkAlive() async throws {
        guard server.isRunning else { throw BenchError("liveroom-server exited") }
        if let reason = try await loops.loops[0].run({ $0.publisher?.closedReason }) {
            throw BenchError("the publisher's connection closed: \(reason)")
        }
    }

    private func sequence(random: inout XorShiftRandom) async throws -> PhaseResult {
        var joined: [Joined] = []
        var result = PhaseResult()
        let drops = socketDrops()
        do {
            for id in 0..<options.sequenceJoins {
                let pauseNanoseconds = Int64(random.next() % UInt64(max(1, options.maxPause.milliseconds * 1e6 + 1)))
                try await Task.sleep(for: .nanoseconds(pauseNanoseconds))
                let deadline = ContinuousClock.now + options.timeout
                let join = await self.join(id: id, deadline: deadline)
                joined.append(join)
                try await waitForKeyframes(of: [join], until: deadline)
                result.joins.append(try await sample(of: join))
            }
        } catch {
            await leave(joined)
            throw error
        }
        (result.serverSocketDrops, result.benchSocketDrops) = socketDrops(since: drops)
        await leave(joined)
        return result
    }

    private func burst(firstID: Int) async throws -> PhaseResult {
        let drops = socketDrops()
        let deadline = ContinuousClock.now + options.timeout
        let joined = await withTaskGroup(of: Joined.self) { group in
            for id in firstID..<(firstID + options.burstJoins) {
                group.addTask { await self.join(id: id, deadline: deadline) }
            }
            var joined: [Joined] = []
            for await join in group { joined.append(join) }
            return joined.sorted { $0.id < $1.id }
        }
        do {
            try await waitForKeyframes(of: joined, until: deadline)
            var result = PhaseResult()
            for join in joined { result.joins.append(try await sample(of: join)) }
            (result.serverSocketDrops, result.benchSocketDrops) = socketDrops(since: drops)
            await leave(joined)
            return result
        } catch {
            await leave(joined)
            throw error
        }
    }

    // MARK: One audience member

    /// An audience member that tried to join: what it holds (to close), and how far signaling got.
    struct Joined: Sendable {
        let id: Int
        let loop: MediaLoop<JoinSubscriber>
        let deadline: ContinuousClock.Instant
        var channel: (any Channel)?
        var signaling: SignalingSession?
        var signalingTimeline: SignalingTimeline?
        var failure: String?
    }

    /// Binds a socket, opens the WebSocket, sends enterRoom and, on onEnterRoom, subscribe with
    /// a recvonly offer; on the answer starts ICE and DTLS. Never throws: a failure is kept in
    /// the result, which counts as a timeout.
    private func join(id: Int, deadline: ContinuousClock.Instant) async -> Joined {
        let loop = loops.loop(for: id)
        var joined = Joined(id: id, loop: loop, deadline: deadline)
        let reached = TimelineBox()
        do {
            let channel = try await loop.bindSocket { state, datagram, source in
                state.subscribers[id]?.receive(datagram, from: source, now: .now)
            }
            joined.channel = channel
            let ice = ICECredentials.random()
            let (sections, local, offer) = identity.subscribeOffer(streamID: "viewer\(id)", ice: ice)
            let remaining = deadline - .now
            guard remaining > .zero else { throw BenchError("no time left to join") }
            let signaling = try await SignalingSession.open(
                url: server.signalingURL, enter: identity.enterParams(userId: "viewer\(id)", role: .audience, room: Self.roomId),
                request: .subscribe(userId: Self.anchorId, sdp: offer), logger: logger, timeout: remaining,
                progress: { timeline in reached.timeline.withLock { $0 = timeline } })
            joined.signaling = signaling
            let certificate = identity.certificate
            try await loop.run { state in
                let (transport, tracks) = try makeClientTransport(
                    answer: signaling.answer, offered: sections, local: local, ice: ice, certificate: certificate, transport: .udp, now: .now)
                let subscriber = JoinSubscriber(channel: channel, transport: transport, tracks: tracks)
                state.subscribers[id] = subscriber
                subscriber.start(now: .now)
            }
        } catch {
            joined.failure = "\(error)"
        }
        joined.signalingTimeline = reached.timeline.withLock { $0 }
        return joined
    }

    /// Polls the loops until every one of `joined` that started ICE has its first keyframe, or `deadline`.
    private func waitForKeyframes(of joined: [Joined], until deadline: ContinuousClock.Instant) async throws {
        var waiting = Dictionary(grouping: joined.filter { $0.failure == nil }, by: { $0.id % loops.loops.count })
        while !waiting.isEmpty, ContinuousClock.now < deadline {
            for (key, members) in waiting {
                let ids = members.map(\.id)
                let pending = try await members[0].loop.run { state in ids.filter { !(state.subscribers[$0]?.hasKeyframe ?? false) } }
                let left = members.filter { pending.contains($0.id) }
                waiting[key] = left.isEmpty ? nil : left
            }
            guard server.isRunning else { throw BenchError("liveroom-server exited") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private func sample(of join: Joined) async throws -> JoinSample {
        let id = join.id
        let media = try await join.loop.run { $0.subscribers[id]?.timeline }
        return JoinSample(signaling: join.signalingTimeline, media: media, deadline: join.deadline, failure: join.failure)
    }

    /// Closes the signaling connections (the server drops the peers), then the sockets.
    private func leave(_ joined: [Joined]) async {
        await withTaskGroup(of: Void.self) { group in
            for join in joined {
                group.addTask {
                    await join.signaling?.close()
                    let id = join.id
                    let closed = (try? await join.loop.run { state in
                        guard let subscriber = state.subscribers.removeValue(forKey: id) else { return false }
                        subscriber.close()
                        return true
                    }) ?? false
                    if !closed { try? await join.channel?.close() }
                }
            }
        }
    }
}

/// How far one join's signaling got, kept while it runs.
final class TimelineBox: Sendable {
    let timeline = Mutex<SignalingTimeline?>(nil)
}
