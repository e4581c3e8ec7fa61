import BenchSupport
import Foundation
import LiveRoomProtocol
import LiveRoomWire
import NIOCore

/// The figures of one subscriber count. CPU percentages are of one core; "per packet" is
/// per forwarded packet (publisher packets × N), or per received publisher packet for N = 0.
struct Row: Sendable {
    var subscribers: Int
    /// The subscribers' path: UDP or ICE-TCP.
    var transport: TransportProtocol
    /// The publisher's room, or a room linked to it by a PK.
    var room: SubscriberRoom
    /// The server's media loops (nil: its default), and the busiest loop's share of the forwarding in %.
    var mediaLoops: Int?
    var busiestLoopSharePercent: Double?
    var seconds: Double
    var publishedPacketsPerSecond: Double
    var publishedKbps: Double
    var forwardedPacketsPerSecond: Double
    var receivedPacketsPerSecond: Double
    /// From sequence gaps, per SSRC.
    var lossPercent: Double
    /// Received ÷ (published × N).
    var deliveredPercent: Double
    var delayP50Milliseconds: Double
    var delayP99Milliseconds: Double
    /// The server's own fan-out delay (arrival to send of each copy, from its histogram).
    var serverFanOutP50Milliseconds: Double?
    var serverFanOutP99Milliseconds: Double?
    /// Medians of the per-second samples.
    var serverCPUPercent: Double
    var benchCPUPercent: Double
    /// The busiest server thread (the media loop) in % of one core, and the run-queue wait of
    /// all server threads in % of the window (CPU the machine's other load took from it).
    var serverBusiestThreadPercent: Double
    var serverWaitPercent: Double
    /// Datagrams dropped in the window because a receive buffer was full: at the server's media
    /// socket (what the publisher and subscribers send it) and at the subscribers' sockets.
    var serverSocketDrops: Int
    var benchSocketDrops: Int
    /// Over the whole window (1 s samples of 100 Hz ticks are too coarse for per-packet figures).
    var serverCPUPercentMean: Double
    var serverMicrosecondsPerPacket: Double
    /// (server CPU − idle server CPU) ÷ forwarded packets: the cost of forwarding alone.
    var marginalMicrosecondsPerPacket: Double?
    /// (server CPU − idle server CPU) ÷ N, window means.
    var cpuPercentPerSubscriber: Double?
    var floorMicrosecondsPerPacket: Double
    /// The floor with every copy sent to one socket in a tight loop (``CryptoFloor``).
    var oneSocketFloorMicrosecondsPerPacket: Double?
    var floorCPUPercent: Double
    var serverToFloor: Double

    init(
        subscribers n: Int, transport: TransportProtocol, room: SubscriberRoom, mediaLoops: Int?, window: Window, floor: CryptoFloor.Figures,
        oneSocketFloor: CryptoFloor.Figures? = nil, idleCPUPercent: Double?
    ) {
        self.transport = transport
        self.room = room
        self.mediaLoops = mediaLoops
        busiestLoopSharePercent = window.busiestLoopSharePercent
        let elapsed = window.elapsedSeconds
        let published = window.last.published.packets - window.first.published.packets
        let received = window.last.received - window.first.received
        let packetsPerInput = Double(max(1, n))
        subscribers = n
        seconds = elapsed
        publishedPacketsPerSecond = Double(published) / elapsed
        publishedKbps = Double(window.last.published.bytes - window.first.published.bytes) * 8 / elapsed / 1000
        forwardedPacketsPerSecond = Double(published * n) / elapsed
        receivedPacketsPerSecond = Double(received.receivedPackets) / elapsed
        lossPercent = received.expectedPackets > 0 ? Double(max(0, received.expectedPackets - received.receivedPackets)) * 100 / Double(received.expectedPackets) : 0
        deliveredPercent = n > 0 && published > 0 ? Double(received.receivedPackets) * 100 / Double(published * n) : .nan
        delayP50Milliseconds = window.delayMilliseconds(quantile: 0.5)
        delayP99Milliseconds = window.delayMilliseconds(quantile: 0.99)
        serverFanOutP50Milliseconds = window.serverFanOutMilliseconds(quantile: 0.5)
        serverFanOutP99Milliseconds = window.serverFanOutMilliseconds(quantile: 0.99)
        let ticks = clockTicksPerSecond
        serverCPUPercent = median(window.perSecond { a, b, dt in Double(b.serverTicks - a.serverTicks) / ticks / dt * 100 })
        benchCPUPercent = median(window.perSecond { a, b, dt in (b.benchCPUSeconds - a.benchCPUSeconds) / dt * 100 })
        (serverBusiestThreadPercent, serverWaitPercent) = window.serverThreads
        serverSocketDrops = window.last.serverSocketDrops - window.first.serverSocketDrops
        benchSocketDrops = window.last.benchSocketDrops - window.first.benchSocketDrops
        let serverCPU = Double(window.last.serverTicks - window.first.serverTicks) / ticks / elapsed * 100
        serverCPUPercentMean = serverCPU
        let packets = Double(published) * packetsPerInput
        serverMicrosecondsPerPacket = packets > 0 ? serverCPU / 100 * elapsed * 1e6 / packets : .nan
        marginalMicrosecondsPerPacket = idleCPUPercent.flatMap { n > 0 && packets > 0 ? (serverCPU - $0) / 100 * elapsed * 1e6 / packets : nil }
        cpuPercentPerSubscriber = idleCPUPercent.flatMap { n > 0 ? (serverCPU - $0) / Double(n) : nil }
        floorMicrosecondsPerPacket = floor.microsecondsPerPacket
        oneSocketFloorMicrosecondsPerPacket = oneSocketFloor?.microsecondsPerPacket
        floorCPUPercent = floor.microsecondsPerPacket * publishedPacketsPerSecond * packetsPerInput / 1e4
        serverToFloor = serverMicrosecondsPerPacket / floor.microsecondsPerPacket
    }

    var json: JSONValue {
        func number(_ value: Double?) -> JSONValue {
            guard let value, value.isFinite else { return .null }
            return .number((value * 1000).rounded() / 1000)
        }
        return .object([
            "subscribers": .number(Double(subscribers)),
            "transport": .string(transport.rawValue),
            "room": .string(room.rawValue),
            "mediaLoops": mediaLoops.map { .number(Double($0)) } ?? .null,
            "busiestLoopSharePercent": number(busiestLoopSharePercent),
            "seconds": number(seconds),
            "publishedPacketsPerSecond": number(publishedPacketsPerSecond),
            "publishedKbps": number(publishedKbps),
            "forwardedPacketsPerSecond": number(forwardedPacketsPerSecond),
            "receivedPacketsPerSecond": number(receivedPacketsPerSecond),
            "lossPercent": number(lossPercent),
            "deliveredPercent": number(deliveredPercent),
            "delayP50Milliseconds": number(delayP50Milliseconds),
            "delayP99Milliseconds": number(delayP99Milliseconds),
            "serverFanOutP50Milliseconds": number(serverFanOutP50Milliseconds),
            "serverFanOutP99Milliseconds": number(serverFanOutP99Milliseconds),
            "serverCPUPercent": number(serverCPUPercent),
            "serverCPUPercentMean": number(serverCPUPercentMean),
            "serverMicrosecondsPerPacket": number(serverMicrosecondsPerPacket),
            "marginalMicrosecondsPerPacket": number(marginalMicrosecondsPerPacket),
            "cpuPercentPerSubscriber": number(cpuPercentPerSubscriber),
            "floorMicrosecondsPerPacket": number(floorMicrosecondsPerPacket),
            "oneSocketFloorMicrosecondsPerPacket": number(oneSocketFloorMicrosecondsPerPacket),
            "floorCPUPercent": number(floorCPUPercent),
            "serverToFloor": number(serverToFloor),
            "benchCPUPercent": number(benchCPUPercent),
            "serverBusiestThreadPercent": number(serverBusiestThreadPercent),
            "serverWaitPercent": number(serverWaitPercent),
            "serverSocketDrops": .number(Double(serverSocketDrops)),
            "benchSocketDrops": .number(Double(benchSocketDrops)),
        ])
    }
}

/// Cluster mode: each node's part of one window (nodes in order, the room's home first), and
/// the figures against one node.
struct ClusterRow: Sendable {
    struct Node: Sendable {
        var subscribers: Int
        /// Window mean, % of one core.
        var cpuPercent: Double
        /// (CPU − the node's idle CPU) ÷ its subscribers.
        var cpuPercentPerSubscriber: Double?
        var delayP50Milliseconds: Double
        var delayP99Milliseconds: Double
    }

    var nodeRows: [Node]
    /// Each node's CPU per subscriber ÷ that of one node alone serving as many subscribers as
    /// it does (same run; nil when the run on one node had no such N).
    var toSingleNode: [Double?]
    /// Delay of the subscribers on the other nodes minus that of those on the home, p50 and p99.
    var relayExtraP50Milliseconds: Double?
    var relayExtraP99Milliseconds: Double?
    /// What each node beyond the first costs the home: (home CPU − its idle CPU − its
    /// subscribers × one node's CPU per subscriber at that N) ÷ (nodes − 1), % of one core.
    var homeCPUPercentPerExtraNode: Double?

    /// `singleNode`: CPU % per subscriber of one node alone, by its subscriber count.
    init(window: Window, subscribersByNode: [Int], idle: ClusterRow?, singleNode: [Int: Double]) {
        let elapsed = window.elapsedSeconds
        nodeRows = subscribersByNode.indices.map { index in
            let ticks = Double(window.last.nodeTicks[index] &- window.first.nodeTicks[index])
            let cpu = ticks / clockTicksPerSecond / elapsed * 100
            let subscribers = subscribersByNode[index]
            let delays = index < window.nodeDelays.count ? window.nodeDelays[index] : []
            return Node(
                subscribers: subscribers, cpuPercent: cpu,
                cpuPercentPerSubscriber: idle.flatMap { subscribers > 0 ? (cpu - $0.nodeRows[index].cpuPercent) / Double(subscribers) : nil },
                delayP50Milliseconds: Window.delayMilliseconds(delays, quantile: 0.5), delayP99Milliseconds: Window.delayMilliseconds(delays, quantile: 0.99))
        }
        toSingleNode = nodeRows.map { row in singleNode[row.subscribers].flatMap { single in row.cpuPercentPerSubscriber.map { $0 / single } } }
        if nodeRows.count > 1 {
            let others = Window.sum(window.nodeDelays.dropFirst())
            let home = window.nodeDelays.first ?? []
            relayExtraP50Milliseconds = Window.delayMilliseconds(others, quantile: 0.5) - Window.delayMilliseconds(home, quantile: 0.5)
            relayExtraP99Milliseconds = Window.delayMilliseconds(others, quantile: 0.99) - Window.delayMilliseconds(home, quantile: 0.99)
            if let idle, let single = singleNode[nodeRows[0].subscribers] {
                let home = nodeRows[0]
                homeCPUPercentPerExtraNode = (home.cpuPercent - idle.nodeRows[0].cpuPercent - Double(home.subscribers) * single) / Double(nodeRows.count - 1)
            }
        }
    }

    var json: JSONValue {
        func number(_ value: Double?) -> JSONValue {
            guard let value, value.isFinite else { return .null }
            return .number((value * 1000).rounded() / 1000)
        }
        return .object([
            "cluster": .array(zip(nodeRows, toSingleNode).enumerated().map { index, pair in
                .object([
                    "node": .number(Double(index + 1)), "subscribers": .number(Double(pair.0.subscribers)), "cpuPercent": number(pair.0.cpuPercent),
                    "cpuPercentPerSubscriber": number(pair.0.cpuPercentPerSubscriber), "toSingleNode": number(pair.1),
                    "delayP50Milliseconds": number(pair.0.delayP50Milliseconds), "delayP99Milliseconds": number(pair.0.delayP99Milliseconds),
                ])
            }),
            "relayExtraP50Milliseconds": number(relayExtraP50Milliseconds), "relayExtraP99Milliseconds": number(relayExtraP99Milliseconds),
            "homeCPUPercentPerExtraNode": number(homeCPUPercentPerExtraNode),
        ])
    }
}

/// Prints the table (or JSON lines) as rows come in.
struct Report: Sendable {
    let json: Bool

    private static let columns: [(title: String, width: Int)] = [
        ("N", 4), ("path", 5), ("room", 5), ("loops", 6), ("CPU% p50", 9), ("CPU% mean", 10), ("µs/pkt", 7), ("floor µs", 9), ("ratio", 6), ("1-sock µs", 10), ("marg µs", 8), ("floor CPU%", 11), ("CPU%/sub", 9),
        ("fwd pkt/s", 10), ("recv pkt/s", 11), ("loss%", 7), ("drops s/b", 10), ("delay p50", 10), ("p99 ms", 7), ("srv p50", 8), ("srv p99", 8), ("loop%", 6), ("share%", 7), ("wait%", 6), ("bench CPU%", 11),
    ]

    private func out(_ line: String) {
        if json { progress(line) } else { Swift.print(line) }
    }

    func printHeader(media: PreencodedMedia, server: ServerProcess, loops: Int, subscriberPriority: SubscriberPriority, seconds: Int) {
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        out("sfu-bench: liveroom-server pid \(server.pid), 1 publisher -> N subscribers on loopback, \(seconds) s windows, medians of 1 s samples")
        out(String(format: "media: VP8 %dx%d@%d %.0f kbit/s + Opus %.1f kbit/s (pre-encoded, replayed), RTP payload <= %d bytes, send-time header extension",
                   media.width, media.height, media.fps, media.videoKbps, media.audioKbps, BenchPublisher.maxPayloadSize))
        let sizes = media.frameSizes
        out("video frames: key frame every 2 s, \(sizes.keyframe) bytes (\((sizes.keyframe + 1199) / 1200) packets); other frames \(sizes.interframe) bytes on average")
        out("machine: \(System.coreCount) cores, load average \(load) at start; bench subscriber loops: \(loops) at \(subscriberPriority == .idle ? "SCHED_IDLE" : "normal priority") and 1 publisher loop; SRTP \(Bench.srtpProfile.openSSLName)")
        out("baseline (floor): SRTP unprotect once + N x (copy, SRTP protect, loopback UDP send via sendmmsg), CPU µs per forwarded packet,")
        out("at the publisher's packet rate to N sockets read by the bench's subscriber loops; 1-sock µs: the same in a tight loop to one socket")
        if !json {
            out("")
            out(Self.columns.map { pad($0.title, $0.width) }.joined(separator: " "))
        }
    }

    func print(_ row: Row) {
        if json {
            Swift.print(row.json.jsonText)
            fflush(nil)
            return
        }
        func f(_ value: Double?, _ digits: Int) -> String {
            guard let value, value.isFinite else { return "-" }
            return String(format: "%.\(digits)f", value)
        }
        let cells = [
            String(row.subscribers), row.transport.rawValue, row.room.rawValue, row.mediaLoops.map(String.init) ?? "dflt", f(row.serverCPUPercent, 1), f(row.serverCPUPercentMean, 1), f(row.serverMicrosecondsPerPacket, 2),
            f(row.floorMicrosecondsPerPacket, 2), f(row.serverToFloor, 2), f(row.oneSocketFloorMicrosecondsPerPacket, 2), f(row.marginalMicrosecondsPerPacket, 2), f(row.floorCPUPercent, 1),
            f(row.cpuPercentPerSubscriber, 3), f(row.forwardedPacketsPerSecond, 0),
            f(row.receivedPacketsPerSecond, 0), f(row.lossPercent, 2), "\(row.serverSocketDrops)/\(row.benchSocketDrops)", f(row.delayP50Milliseconds, 2), f(row.delayP99Milliseconds, 2),
            f(row.serverFanOutP50Milliseconds, 2), f(row.serverFanOutP99Milliseconds, 2),
            f(row.serverBusiestThreadPercent, 1), f(row.busiestLoopSharePercent, 1), f(row.serverWaitPercent, 1), f(row.benchCPUPercent, 1),
        ]
        Swift.print(zip(cells, Self.columns).map { pad($0, $1.width) }.joined(separator: " "))
        fflush(nil)
    }

    /// The lines of a cluster window, under its row.
    func print(_ cluster: ClusterRow) {
        if json {
            Swift.print(cluster.json.jsonText)
            fflush(nil)
            return
        }
        func f(_ value: Double?, _ digits: Int) -> String {
            guard let value, value.isFinite else { return "-" }
            return String(format: "%.\(digits)f", value)
        }
        for (index, node) in cluster.nodeRows.enumerated() {
            Swift.print(
                "    node n\(index + 1)\(index == 0 ? " (home)" : ""): \(node.subscribers) subscribers, CPU% \(f(node.cpuPercent, 1)), CPU%/sub \(f(node.cpuPercentPerSubscriber, 3))"
                    + " (x\(f(cluster.toSingleNode[index], 2)) one node's), delay p50 \(f(node.delayP50Milliseconds, 2)) ms, p99 \(f(node.delayP99Milliseconds, 2)) ms")
        }
        if cluster.nodeRows.count > 1 {
            Swift.print(
                "    relay: extra delay p50 \(f(cluster.relayExtraP50Milliseconds, 2)) ms, p99 \(f(cluster.relayExtraP99Milliseconds, 2)) ms;"
                    + " home CPU% per extra node \(f(cluster.homeCPUPercentPerExtraNode, 2))")
        }
        fflush(nil)
    }

    func printFooter(stoppedAt: Int?, maxLoss: Double) {
        if let stoppedAt {
            out(String(format: "stopped after N=%d: loss above %.1f%%", stoppedAt, maxLoss))
        }
        out("server CPU is utime+stime of /proc/<pid>/stat, % of one core; CPU% p50 and bench CPU% are medians of 1 s samples, the rest window totals")
        out("µs/pkt = server CPU per forwarded packet (publisher packets x N); marg µs = the same after subtracting the idle server (N=0)")
        out("CPU%/sub = (CPU% mean - idle CPU% mean) / N; floor CPU% = floor µs x forwarded packets/s; ratio = µs/pkt / floor µs")
        out("loops = the server's media loops (--media-loops; dflt: one per core); share% = the busiest loop's part of the packets forwarded")
        out("delay = publisher's send time to the bench reading the copy; srv = the server's own fan-out delay, from a packet's read to each")
        out("copy's sendmmsg (liveroom_media_fanout_delay_seconds, interpolated in its buckets)")
        out("loop% = the busiest server thread (a media event loop) in % of one core; wait% = run-queue wait of all server")
        out("threads in % of the window (/proc/<pid>/task/*/schedstat): CPU the server wanted while other processes had it")
        out("drops s/b = datagrams dropped for a full receive buffer in the window, at the server's sockets / at the bench's (/proc/net/udp)")
        out("N=0 is the idle server (publisher only): its µs/pkt and floor are per received publisher packet")
        out("path = the subscribers' transport: udp, or tcp (ICE-TCP, RFC 4571 framing); the publisher is on UDP; drops count UDP only")
        out("room = where the subscribers are: own (the publisher's room) or pk (another room linked to it by connectOtherRoom)")
        out("cluster mode (--nodes): under each row, each node's subscribers, CPU (window mean), CPU%/sub = (CPU - the node's idle CPU) / its")
        out("subscribers, x one node's = that / CPU%/sub of the run on one node with as many subscribers (- when that N was not measured);")
        out("relay extra delay = delay of the subscribers on the other nodes minus that of those on the home; home CPU% per extra node =")
        out("(home CPU - home idle - its subscribers x one node's CPU%/sub at that N) / (nodes - 1); the CPU% columns of the row are the home's")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
