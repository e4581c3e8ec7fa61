// sfu-bench: SFU fan-out of liveroom-server. One publisher (VP8 540x960@15 at about
// 1.3 Mbit/s plus Opus at about 48 kbit/s, pre-encoded and replayed) sends through the
// server to N light subscribers (ICE, DTLS, counting from the clear RTP header, decrypting
// one packet in 16 to check it) in this process.
// For each N it reports the server's CPU (from /proc), CPU per forwarded packet and per
// subscriber, loss and forwarding delay (to the kernel's receive timestamp of each copy; and
// the server's own, from its metrics), next to the baseline measured in the same run:
// the crypto floor (SRTP unprotect once plus N x (protect + loopback UDP send)).
//
// With --transports udp,tcp each subscriber count is measured with the subscribers on UDP and
// then on ICE-TCP (RFC 6544, RFC 4571 framing), so TCP's cost is seen next to UDP's.
// With --subscriber-rooms own,pk it is measured with the subscribers in the publisher's room and
// then in another room linked to it by a cross-room PK (connectOtherRoom), so a PK viewer's
// cost is seen next to a local one's.
// With --media-loops 1,2 the whole sweep runs once per count of the server's media loops (a
// server each), so two loops are seen next to one; the share column is the busiest loop's part
// of the forwarding (from the server's per-loop counters in /metrics).
//
// The subscribers' loops run at SCHED_IDLE unless --subscriber-priority normal: on a machine the
// server shares with them they then use only CPU the server leaves, as subscribers on other
// machines would, and never keep its loops waiting (the publisher has a loop of its own at
// normal priority). A delay is then counted when the bench gets to read the packet, which is
// never earlier than the server sent it.
//
// With --nodes 1,2,3 the servers run in cluster mode on a PostgreSQL server the bench starts
// (Debian's postgresql; as the postgres user when run as root): for each count K, K nodes, the
// publisher on the first (the room's home), the subscribers spread over the K nodes in turn
// (each connects its signaling and gets its media where it connected). Each row is followed by
// one line per node (its subscribers, CPU, CPU per subscriber, delay) and a summary against the
// same N on one node: CPU per subscriber per node, the relay's extra delay (subscribers on
// other nodes against those on the home), and what each extra node costs the home.
//
// Usage: sfu-bench --server-binary .build/release/liveroom-server --subscribers 1,10,25,50 --seconds 10 [--transports udp,tcp] [--subscriber-rooms own,pk] [--media-loops 1,2] [--nodes 1,2,3] [--subscriber-priority idle|normal] [--json]
// Build with -c release.

import ArgumentParser
import BenchSupport
import Foundation
import LiveRoomAuth
import LiveRoomProtocol
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import NIOPosix
import PostgresTestSupport

@main
struct SFUBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfu-bench",
        abstract: "Measures liveroom-server's SFU fan-out: one publisher to N subscribers on loopback, against the crypto floor.")

    @Option(help: "The liveroom-server executable (a release build).")
    var serverBinary: String
    @Option(help: "Subscriber counts to measure, comma separated, in increasing order.")
    var subscribers: String = "1,10,25,50"
    @Option(help: "Measurement window for each subscriber count, in seconds.")
    var seconds: Int = 10
    @Option(help: "Warm-up once every subscriber receives, in seconds.")
    var warmup: Double = 1
    @Option(help: "Stop after the first subscriber count whose loss exceeds this percentage.")
    var maxLoss: Double = 5
    @Option(help: "VP8 target bitrate in kbit/s.")
    var videoKbps: Int = 1300
    @Option(help: "Event loops for the bench's clients (default: one per core).")
    var threads: Int?
    @Option(help: "Subscriber transports to measure for each count, comma separated: udp, tcp (ICE-TCP).")
    var transports: String = "udp"
    @Option(help: "Where the subscribers are, comma separated: own (the publisher's room), pk (a room linked to it by a cross-room PK).")
    var subscriberRooms: String = "own"
    @Option(help: "The server's media loops, comma separated: the sweep runs once for each, a server each (default: the server's own default).")
    var mediaLoops: String?
    @Option(help: "Cluster mode: node counts, comma separated; for each, that many servers on one PostgreSQL, subscribers spread over them.")
    var nodes: String?
    @Option(help: "The bench's subscriber loops' CPU priority: idle (SCHED_IDLE: they take only CPU the server leaves, as subscribers on other machines would) or normal.")
    var subscriberPriority: SubscriberPriority = .idle
    @Flag(help: "Print one JSON object per subscriber count (progress and notes go to standard error).")
    var json = false

    func validate() throws {
        guard (try? subscriberCounts()) != nil else { throw ValidationError("--subscribers must be positive integers separated by commas") }
        guard (try? subscriberTransports()) != nil else { throw ValidationError("--transports must be udp and/or tcp, separated by commas") }
        guard (try? rooms()) != nil else { throw ValidationError("--subscriber-rooms must be own and/or pk, separated by commas") }
        guard seconds >= 2 else { throw ValidationError("--seconds must be at least 2") }
        guard (try? loopCounts()) != nil else { throw ValidationError("--media-loops must be positive integers separated by commas") }
        // Without --nodes there is one server and no cluster (nodeCounts() is nil, not an error).
        do { _ = try nodeCounts() } catch { throw ValidationError("--nodes must be integers from 1 to 8 separated by commas") }
    }

    /// nil: no cluster, one server alone.
    func nodeCounts() throws -> [Int]? {
        guard let nodes else { return nil }
        let counts = nodes.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ (1...8).contains($0 ?? 0) }) else { throw ValidationError("bad --nodes") }
        return counts.map { $0! }
    }

    /// nil: the server's default.
    func loopCounts() throws -> [Int?] {
        guard let mediaLoops else { return [nil] }
        let counts = mediaLoops.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) > 0 }) else { throw ValidationError("bad --media-loops") }
        return counts
    }

    func subscriberCounts() throws -> [Int] {
        let counts = subscribers.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) > 0 }) else { throw ValidationError("bad --subscribers") }
        return counts.map { $0! }
    }

    func rooms() throws -> [SubscriberRoom] {
        let parsed = subscriberRooms.split(separator: ",").map { SubscriberRoom(rawValue: $0.trimmingCharacters(in: .whitespaces).lowercased()) }
        guard !parsed.isEmpty, parsed.allSatisfy({ $0 != nil }) else { throw ValidationError("bad --subscriber-rooms") }
        return parsed.map { $0! }
    }

    func subscriberTransports() throws -> [TransportProtocol] {
        let parsed = transports.split(separator: ",").map { TransportProtocol(rawValue: $0.trimmingCharacters(in: .whitespaces).lowercased()) }
        guard !parsed.isEmpty, parsed.allSatisfy({ $0 != nil }) else { throw ValidationError("bad --transports") }
        return parsed.map { $0! }
    }

    func run() async throws {
        let counts = try subscriberCounts()
        let transports = try subscriberTransports()
        let rooms = try rooms()
        var logger = Logger(label: "sfu-bench")
        logger.logLevel = .warning
        let report = Report(json: json)

        progress("pre-encoding 4 s of VP8 540x960@15 at \(videoKbps) kbit/s (noisy test card) and 200 Opus frames…")
        let media = try PreencodedMedia.make(width: 540, height: 960, fps: 15, videoKbps: videoKbps, seconds: 4, audioKbps: 56, audioFrameCount: 200)
        progress(String(format: "replayed media: VP8 %.0f kbit/s, Opus %.1f kbit/s (codec payload)", media.videoKbps, media.audioKbps))

        // Cluster mode: one PostgreSQL for the whole run (nodes stopped with SIGTERM leave it).
        let database: PostgresTestServer?
        if try nodeCounts() != nil {
            progress("starting PostgreSQL (initdb, pg_ctl)…")
            let server = try PostgresTestServer()
            try server.start()
            database = server
        } else {
            database = nil
        }
        defer { database?.stop() }
        var singleNode: [Int: Double] = [:]
        for mediaLoops in try loopCounts() {
            for nodeCount in try nodeCounts() ?? [1] {
                // Every subscriber is a WebSocket from 127.0.0.1: lift the per-address cap above the largest N.
                var arguments = ["--max-connections-per-address", String(max(100, (counts.max() ?? 0) + 10))] + (mediaLoops.map { ["--media-loops", String($0)] } ?? [])
                // The PK room links by connectOtherRoom without a request: the bench measures forwarding, not consent.
                if rooms.contains(.pk) { arguments.append("--open-pk-links") }
                var nodes: [ServerProcess] = []
                if let database {
                    arguments += ["--cluster-db", database.url]
                    for index in 1...nodeCount {
                        nodes.append(try await ServerProcess.start(
                            binary: serverBinary, sdkAppId: Bench.sdkAppId, secretKey: Bench.secretKey, extraArguments: arguments + ["--node-id", "n\(index)"]))
                    }
                    progress("\(nodeCount) cluster node(s): " + nodes.map { "pid \($0.pid) at \($0.httpURL)" }.joined(separator: ", "))
                } else {
                    nodes = [try await ServerProcess.start(binary: serverBinary, sdkAppId: Bench.sdkAppId, secretKey: Bench.secretKey, extraArguments: arguments)]
                }
                let server = nodes[0]
                progress("liveroom-server pid \(server.pid) at \(server.httpURL), media loops: \(mediaLoops.map(String.init) ?? "default")")
                // An interrupted run stops every node and the PostgreSQL it started.
                let started = nodes
                let signalSources = onSignals {
                    for node in started { node.terminateNow() }
                    if let database {
                        database.stop()
                        try? FileManager.default.removeItem(atPath: database.directory)
                    }
                }
                defer { withExtendedLifetime(signalSources) {} }
                let loops = try await MediaLoops<BenchSubscriber>(
                    threads: threads ?? System.coreCount, publisherLoop: true, idleSubscribers: subscriberPriority == .idle)
                let identity = BenchIdentity(sdkAppId: Bench.sdkAppId, secretKey: Bench.secretKey, certificate: try DTLSCertificate(commonName: "sfu-bench"))
                let bench = Bench(
                    server: server, nodes: database == nil ? [] : nodes, mediaLoops: mediaLoops, subscriberPriority: subscriberPriority, loops: loops,
                    identity: identity, media: media, logger: logger)
                do {
                    try await bench.run(
                        counts: counts, transports: transports, rooms: rooms, seconds: seconds, warmup: warmup, maxLoss: maxLoss, report: report,
                        singleNode: &singleNode)
                } catch {
                    await loops.shutdown()
                    for node in nodes { await node.stop() }
                    throw error
                }
                await loops.shutdown()
                for node in nodes { await node.stop() }
            }
        }
    }
}

func progress(_ message: String) {
    FileHandle.standardError.write(Data(("sfu-bench: " + message + "\n").utf8))
}

/// How much CPU the bench's subscriber loops may take from the server.
enum SubscriberPriority: String, Sendable, ExpressibleByArgument {
    case idle
    case normal
}

/// Where the subscribers are: in the publisher's room, or in another room linked to it by a PK.
enum SubscriberRoom: String, Sendable {
    case own
    case pk
}

/// One run: the server, the bench's loops, the publisher, and subscribers that come and go.
struct Bench: Sendable {
    static let sdkAppId: UInt64 = 1_400_000_000
    static let secretKey = "bench"
    static let roomId = "sfu-bench"
    /// The room PK subscribers are in, linked to ``roomId`` by its anchor ``pkAnchorId``.
    static let pkRoomId = "sfu-bench-pk"
    static let pkAnchorId = "pk-anchor"
    static let anchorId = "anchor"
    /// The SRTP profile DTLS negotiates here (both sides prefer AEAD_AES_128_GCM), for the floor.
    static let srtpProfile = SRTPProtectionProfile.aeadAES128GCM

    let server: ServerProcess
    /// In cluster mode, every node, ``server`` (the room's home) first; empty otherwise.
    let nodes: [ServerProcess]
    /// The server's media loops, when the bench set them.
    let mediaLoops: Int?
    let subscriberPriority: SubscriberPriority
    let loops: MediaLoops<BenchSubscriber>
    let identity: BenchIdentity
    let media: PreencodedMedia
    let logger: Logger

    /// Runs the sweep. `singleNode` has CPU % per subscriber by N of a cluster run on one node,
    /// filled by that run and read by those on more nodes (each node against one node serving
    /// as many subscribers as it does).
    func run(
        counts: [Int], transports: [TransportProtocol], rooms: [SubscriberRoom], seconds: Int, warmup: Double, maxLoss: Double, report: Report,
        singleNode: inout [Int: Double]
    ) async throws {
        let signaling = try await startPublisher()
        progress("publisher connected; sending")
        // An anchor of the PK room links it with the publisher's room.
        var pkLink: SignalingSession?
        if rooms.contains(.pk) {
            pkLink = try await SignalingSession.open(
                url: server.signalingURL, enter: identity.enterParams(userId: Self.pkAnchorId, role: .anchor, room: Self.pkRoomId),
                request: .connectOtherRoom(room: .string(Self.roomId), userId: Self.anchorId), logger: logger)
            progress("room \(Self.pkRoomId) linked with \(Self.roomId) by a PK")
        }
        try await Task.sleep(for: .seconds(2))
        report.printHeader(media: media, server: server, loops: loops.subscriberLoops.count, subscriberPriority: subscriberPriority, seconds: seconds)

        // The idle server: the publisher alone (N = 0).
        let idleWindow = try await measure(subscribers: 0, seconds: seconds)
        let idleFloor = try CryptoFloor.measure(subscribers: 0, profile: Self.srtpProfile)
        let idle = Row(subscribers: 0, transport: .udp, room: .own, mediaLoops: mediaLoops, window: idleWindow, floor: idleFloor, idleCPUPercent: nil)
        report.print(idle)
        let idleNodes = nodes.isEmpty
            ? nil : ClusterRow(window: idleWindow, subscribersByNode: Array(repeating: 0, count: nodes.count), idle: nil, singleNode: [:])
        if let idleNodes { report.print(idleNodes) }

        var stoppedAt: Int?
        var nextID = 1
        counts: for n in counts {
            let floor = try await measureFloor(subscribers: n, packetsPerSecond: idle.publishedPacketsPerSecond)
            let oneSocketFloor = try CryptoFloor.measure(subscribers: n, profile: Self.srtpProfile)
            for transport in transports {
                for room in rooms {
                progress("connecting \(n) subscribers over \(transport.rawValue) in the \(room.rawValue) room…")
                let connectStart = ContinuousClock.now
                let subscribers = try await connectSubscribers(count: n, firstID: nextID, transport: transport, room: room)
                nextID += n
                try await waitUntilReceiving(count: n, timeout: .seconds(30))
                progress("all \(n) receiving after \(format(seconds: ContinuousClock.now - connectStart)); warming up")
                try await Task.sleep(for: .seconds(warmup))
                let window = try await measure(subscribers: n, seconds: seconds)
                await disconnect(subscribers)
                let row = Row(
                    subscribers: n, transport: transport, room: room, mediaLoops: mediaLoops, window: window, floor: floor, oneSocketFloor: oneSocketFloor,
                    idleCPUPercent: idle.serverCPUPercentMean)
                report.print(row)
                if let idleNodes {
                    var byNode = Array(repeating: 0, count: nodes.count)
                    for subscriber in subscribers { byNode[node(ofSubscriber: subscriber.id)] += 1 }
                    let cluster = ClusterRow(window: window, subscribersByNode: byNode, idle: idleNodes, singleNode: singleNode)
                    report.print(cluster)
                    if nodes.count == 1, let perSubscriber = cluster.nodeRows.first?.cpuPercentPerSubscriber { singleNode[n] = perSubscriber }
                }
                try await Task.sleep(for: .seconds(1))
                if row.lossPercent > maxLoss {
                    stoppedAt = n
                    break counts
                }
                }
            }
        }
        report.printFooter(stoppedAt: stoppedAt, maxLoss: maxLoss)
        await pkLink?.close()
        await signaling.close()
    }

    /// The crypto floor for `n` subscribers: copies to `n` sockets bound on the bench's
    /// subscriber loops (read there and dropped, as the subscribers read theirs), inputs paced
    /// at the publisher's packet rate.
    private func measureFloor(subscribers n: Int, packetsPerSecond: Double) async throws -> CryptoFloor.Figures {
        var channels: [any Channel] = []
        defer { for channel in channels { channel.close(promise: nil) } }
        var destinations: [sockaddr_in] = []
        for index in 0..<n {
            let channel = try await loops.loop(for: index).bindSocket { _, _, _ in }
            channels.append(channel)
            guard let address = channel.localAddress.flatMap(TransportAddress.init)?.ipv4SocketAddress else {
                throw BenchError("a floor socket has no IPv4 address")
            }
            destinations.append(address)
        }
        let pace = Duration.seconds(1) / max(1, packetsPerSecond)
        return try CryptoFloor.measure(subscribers: n, profile: Self.srtpProfile, destinations: destinations, pace: pace)
    }

    // MARK: Publisher and subscribers

    private func startPublisher() async throws -> SignalingSession {
        try await loops.loops[0].startPublisher(
            signalingURL: server.signalingURL, identity: identity, userId: Self.anchorId, room: Self.roomId, media: media, logger: logger)
    }

    struct ConnectedSubscriber: Sendable {
        let id: Int
        let loop: MediaLoop<BenchSubscriber>
        let signaling: SignalingSession
    }

    private func connectSubscribers(count: Int, firstID: Int, transport: TransportProtocol, room: SubscriberRoom) async throws -> [ConnectedSubscriber] {
        try await withThrowingTaskGroup(of: ConnectedSubscriber.self) { group in
            var connected: [ConnectedSubscriber] = []
            var next = 0
            // A few at a time: each is a WebSocket, an enterRoom, a subscribe and a DTLS handshake.
            while next < min(8, count) {
                let id = firstID + next
                group.addTask { try await connectSubscriber(id: id, transport: transport, room: room) }
                next += 1
            }
            do {
                while let subscriber = try await group.next() {
                    connected.append(subscriber)
                    if next < count {
                        let id = firstID + next
                        group.addTask { try await connectSubscriber(id: id, transport: transport, room: room) }
                        next += 1
                    }
                }
            } catch {
                await disconnect(connected)
                throw error
            }
            return connected
        }
    }

    /// The node subscriber `id` connects to (0 without a cluster): the nodes in turn.
    func node(ofSubscriber id: Int) -> Int {
        nodes.isEmpty ? 0 : id % nodes.count
    }

    private func connectSubscriber(id: Int, transport path: TransportProtocol, room: SubscriberRoom) async throws -> ConnectedSubscriber {
        let loop = loops.loop(for: id)
        let node = node(ofSubscriber: id)
        let signalingURL = nodes.isEmpty ? server.signalingURL : nodes[node].signalingURL
        let ice = ICECredentials.random()
        let (sections, local, offer) = identity.subscribeOffer(streamID: "viewer\(id)", ice: ice)
        let route: MediaLoop<BenchSubscriber>.Route = { state, datagram, source in
            state.subscribers[id]?.receive(datagram, from: source, arrival: state.kernelArrival, now: .now)
        }
        // A UDP socket is bound before signaling; an ICE-TCP connection needs the answer's candidate.
        var channel: (any Channel)? = path == .udp ? try await loop.bindSocket(kernelArrival: true, route: route) : nil
        let signaling: SignalingSession
        do {
            signaling = try await SignalingSession.open(
                url: signalingURL, enter: identity.enterParams(userId: "viewer\(id)", role: .audience, room: room == .pk ? Self.pkRoomId : Self.roomId),
                request: .subscribe(userId: Self.anchorId, sdp: offer), logger: logger)
            if path == .tcp {
                let candidate = try serverCandidate(in: signaling.answer, transport: .tcp)
                channel = try await loop.connectTCP(to: candidate, route: route)
            }
        } catch {
            try? await channel?.close()
            throw error
        }
        let (certificate, connected) = (identity.certificate, channel!)
        do {
            try await loop.run { state in
                let (transport, tracks) = try makeClientTransport(
                    answer: signaling.answer, offered: sections, local: local, ice: ice, certificate: certificate, transport: path, now: .now)
                let subscriber = BenchSubscriber(channel: connected, framed: path == .tcp, transport: transport, tracks: tracks, tally: state.tally, node: node)
                state.subscribers[id] = subscriber
                subscriber.start(now: .now)
            }
        } catch {
            await signaling.close()
            try? await connected.close()
            throw error
        }
        return ConnectedSubscriber(id: id, loop: loop, signaling: signaling)
    }

    private func waitUntilReceiving(count: Int, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            var receiving = 0
            for loop in loops.loops {
                receiving += try await loop.run { state in state.subscribers.values.filter(\.isReceiving).count }
            }
            if receiving >= count { return }
            guard ContinuousClock.now < deadline else { throw BenchError("only \(receiving) of \(count) subscribers receive audio and video after \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Closes the signaling connections (the server drops the peers), then the sockets.
    private func disconnect(_ subscribers: [ConnectedSubscriber]) async {
        await withTaskGroup(of: Void.self) { group in
            for subscriber in subscribers {
                group.addTask {
                    await subscriber.signaling.close()
                    let id = subscriber.id
                    try? await subscriber.loop.run { state in state.subscribers.removeValue(forKey: id)?.close() }
                }
            }
        }
    }

    // MARK: Measurement

    /// Cumulative counters at one moment.
    struct Sample: Sendable {
        var at: ContinuousClock.Instant
        var serverTicks: UInt64
        /// Each node's CPU ticks, in cluster mode (``nodes``' order).
        var nodeTicks: [UInt64]
        var benchCPUSeconds: Double
        var published: PublishedCounts
        var received: TallySnapshot
        var serverThreads: [Int: ThreadSchedStat]
        /// Receive-buffer drops at the server's sockets and at the bench's.
        var serverSocketDrops: Int
        var benchSocketDrops: Int
        /// Packets each media loop has forwarded (the server's /metrics; empty for a server without them).
        var loopForwarded: [Int]
        /// The server's fan-out delay histogram (empty for a server without it).
        var fanOut: PrometheusHistogram
    }

    private func sample() async throws -> Sample {
        let published = try await loops.loops[0].run { $0.publisher?.counts ?? PublishedCounts() }
        var received = TallySnapshot()
        for loop in loops.loops {
            let snapshot = try await loop.run { $0.tally.snapshot }
            received = received + snapshot
        }
        let metrics = await serverMetrics()
        return Sample(
            at: .now, serverTicks: try server.cpuTicks(), nodeTicks: try nodes.map { try $0.cpuTicks() }, benchCPUSeconds: benchCPUSeconds(), published: published, received: received,
            serverThreads: server.threadSchedStats(), serverSocketDrops: udpReceiveDrops(pid: server.pid), benchSocketDrops: udpReceiveDrops(pid: getpid()),
            loopForwarded: metrics.loopForwarded, fanOut: metrics.fanOut)
    }

    /// From the server's metrics: `liveroom_media_loop_rtp_forwarded_total` by loop, and the
    /// buckets of `liveroom_media_fanout_delay_seconds`.
    private func serverMetrics() async -> (loopForwarded: [Int], fanOut: PrometheusHistogram) {
        guard let text = await serverMetricsText(server.httpURL) else { return ([], PrometheusHistogram(named: "", in: "")) }
        var byLoop: [Int: Int] = [:]
        let loopPrefix = #"liveroom_media_loop_rtp_forwarded_total{loop=""#
        for line in text.split(separator: "\n") where line.hasPrefix(loopPrefix) {
            let rest = line.dropFirst(loopPrefix.count)
            guard let quote = rest.firstIndex(of: "\""), let value = Double(rest.split(separator: " ").last ?? ""), let loop = Int(rest[..<quote]) else { continue }
            byLoop[loop] = Int(value)
        }
        return ((0..<byLoop.count).map { byLoop[$0] ?? 0 }, PrometheusHistogram(named: "liveroom_media_fanout_delay_seconds", in: text))
    }

    /// Samples every second for `seconds`, and collects the delays of the window.
    private func measure(subscribers n: Int, seconds: Int) async throws -> Window {
        guard server.isRunning, nodes.allSatisfy(\.isRunning) else { throw BenchError("liveroom-server exited") }
        progress("measuring N=\(n) for \(seconds) s")
        for loop in loops.loops { try await loop.run { $0.tally.resetDelays() } }
        var samples = [try await sample()]
        let start = ContinuousClock.now
        for second in 1...seconds {
            try await Task.sleep(until: start + .seconds(second), clock: .continuous)
            samples.append(try await sample())
        }
        var nodeDelays = [[UInt64]](repeating: [UInt64](repeating: 0, count: ReceiveTally.bucketCount), count: max(1, nodes.count))
        for loop in loops.loops {
            let histograms = try await loop.run { $0.tally.nodeDelays }
            for (node, histogram) in histograms.enumerated() where node < nodeDelays.count {
                for (i, count) in histogram.enumerated() where count > 0 { nodeDelays[node][i] += UInt64(count) }
            }
        }
        if let reason = try await loops.loops[0].run({ $0.publisher?.closedReason }) {
            throw BenchError("the publisher's connection closed: \(reason)")
        }
        let received = samples.last!.received - samples.first!.received
        var duplicates = 0
        for loop in loops.loops { duplicates += try await loop.run { $0.tally.duplicatePackets } }
        if duplicates > 0 { progress("\(duplicates) duplicate packets so far among those checked") }
        if received.undecryptablePackets > 0 {
            var failures: [String: Int] = [:]
            for loop in loops.loops { failures.merge(try await loop.run { $0.tally.failures }, uniquingKeysWith: +) }
            throw BenchError("\(received.undecryptablePackets) of \(received.verifiedPackets) packets checked did not decrypt: \(failures)")
        }
        return Window(subscribers: n, samples: samples, nodeDelays: nodeDelays)
    }
}

/// What one measurement window saw.
struct Window: Sendable {
    var subscribers: Int
    var samples: [Bench.Sample]
    /// Forwarding delays, ``ReceiveTally`` buckets, by the node the subscribers get their media from.
    var nodeDelays: [[UInt64]]

    /// Forwarding delays of every subscriber.
    var delays: [UInt64] { Self.sum(nodeDelays) }

    static func sum(_ histograms: some Collection<[UInt64]>) -> [UInt64] {
        guard var total = histograms.first else { return [] }
        for histogram in histograms.dropFirst() {
            for (i, count) in histogram.enumerated() where count > 0 { total[i] += count }
        }
        return total
    }

    var first: Bench.Sample { samples.first! }
    var last: Bench.Sample { samples.last! }
    var elapsedSeconds: Double { (last.at - first.at).seconds }

    /// Per-second values of `f(previous, next, seconds)`.
    func perSecond(_ f: (Bench.Sample, Bench.Sample, Double) -> Double?) -> [Double] {
        zip(samples, samples.dropFirst()).compactMap { f($0, $1, ($1.at - $0.at).seconds) }
    }

    /// The server thread with the most CPU time in the window (the media event loop, once
    /// media flows), as % of one core; and the run-queue wait of all server threads, as % of
    /// the window.
    var serverThreads: (busiestCPUPercent: Double, waitPercent: Double) {
        var busiest: UInt64 = 0, waiting: UInt64 = 0
        for (tid, end) in last.serverThreads {
            let start = first.serverThreads[tid] ?? ThreadSchedStat(runningNanoseconds: 0, waitingNanoseconds: 0)
            busiest = max(busiest, end.runningNanoseconds &- start.runningNanoseconds)
            waiting += end.waitingNanoseconds &- start.waitingNanoseconds
        }
        let window = elapsedSeconds * 1e9
        return (Double(busiest) / window * 100, Double(waiting) / window * 100)
    }

    /// The busiest media loop's share of the packets forwarded in the window, in %; nil with
    /// one loop or without per-loop figures.
    var busiestLoopSharePercent: Double? {
        guard first.loopForwarded.count == last.loopForwarded.count, last.loopForwarded.count > 1 else { return nil }
        let forwarded = zip(first.loopForwarded, last.loopForwarded).map { $1 - $0 }
        let total = forwarded.reduce(0, +)
        return total > 0 ? Double(forwarded.max() ?? 0) * 100 / Double(total) : nil
    }

    /// The server's fan-out delay at quantile `q` over the window, in milliseconds, interpolated
    /// within its histogram's buckets; nil without the histogram.
    func serverFanOutMilliseconds(quantile q: Double) -> Double? {
        last.fanOut.since(first.fanOut)?.interpolatedMilliseconds(quantile: q)
    }

    /// The delay at quantile `q`, in milliseconds (bucket midpoints).
    func delayMilliseconds(quantile q: Double) -> Double {
        Self.delayMilliseconds(delays, quantile: q)
    }

    /// The delay at quantile `q` of a histogram, in milliseconds (bucket midpoints).
    static func delayMilliseconds(_ delays: [UInt64], quantile q: Double) -> Double {
        let total = delays.reduce(0, +)
        guard total > 0 else { return .nan }
        let target = UInt64((Double(total) * q).rounded(.up))
        var seen: UInt64 = 0
        for (bucket, count) in delays.enumerated() {
            seen += count
            if seen >= max(1, target) { return (Double(bucket) + 0.5) * Double(ReceiveTally.bucketNanoseconds) / 1e6 }
        }
        return .nan
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

func format(seconds duration: Duration) -> String { String(format: "%.1f s", duration.seconds) }
