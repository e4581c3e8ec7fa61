import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Synchronization

/// The node relay of one media port (cluster mode): publishers of other nodes this node
/// mirrors for its viewers, and publishers of this node other nodes mirror. Shared by the
/// port's loops; what a datagram asks is carried out on every loop (``Action``), each router
/// owning its part (the publisher's own router exports it, every router mirrors).
///
/// Every datagram is sealed (``NodeRelayDatagram``); one that does not open is dropped and
/// counted. A node asks to mirror only from a media address of a node alive in the cluster
/// database (``setPeers(_:)``); packets are taken only from the node a mirror was asked of,
/// keyframe requests and NACKs only from a node that mirrors the publisher.
final class NodeMediaRelay: Sendable {
    /// What every loop of the port does with a datagram (or a turn of the timer).
    enum Action: Sendable {
        /// `node` (re)asked for `key`: the publisher's router answers with its tracks.
        case export(SFURouter.PublisherKey, to: TransportAddress, isNew: Bool)
        /// `node` no longer mirrors `key`.
        case unexport(SFURouter.PublisherKey, to: TransportAddress)
        /// A message for the routers, from the node known as `origin`.
        case relay(SFURouter.Relay, origin: SFURouter.Origin)
        /// `node` lost these packets of `key`: resent from the publisher's router's history.
        case resend(SFURouter.PublisherKey, MediaKind, [UInt16], to: TransportAddress, origin: SFURouter.Origin)

        var isMedia: Bool {
            if case .relay(.packet, _) = self { true } else { false }
        }
    }

    private struct State {
        var opener: NodeRelayOpener
        var mirrors: MirrorBook
        var exports: ExportBook
        /// The media addresses of the other live nodes.
        var peers: Set<TransportAddress> = []
        var refused = 0
        var unknownSource = 0
        var received = 0
    }

    /// The application's secret key, which the datagrams' keys derive from.
    let secretKey: String
    private let state: Mutex<State>
    private let sentCount = Atomic<Int>(0)
    private let packetsSentCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)
    /// How long a new mirror waits for the publisher's node to answer.
    static let answerTimeout = Duration.seconds(3)

    init(secretKey: String, maximumMirrors: Int = 256, maximumExports: Int = 1024, grace: Duration = .seconds(5)) {
        let secret = NodeRelayDatagram.secret(fromSecretKey: secretKey)
        self.secretKey = secretKey
        state = Mutex(
            State(opener: NodeRelayOpener(secret: secret), mirrors: MirrorBook(maximumMirrors: maximumMirrors, grace: grace),
                exports: ExportBook(maximumExports: maximumExports)))
    }

    /// The media addresses (`host:port`) of the other live nodes, from the cluster database.
    func setPeers(_ addresses: Set<TransportAddress>) {
        state.withLock { $0.peers = addresses }
    }

    /// A node relay datagram from `source`: what the loops do with it, nil when it is dropped.
    func receive(_ datagram: [UInt8], from source: TransportAddress, now: ContinuousClock.Instant) -> Action? {
        state.withLock { state -> Action? in
            let message: NodeRelayMessage
            do throws(NodeRelayError) {
                message = try state.opener.open(datagram)
            } catch {
                state.refused += 1
                return nil
            }
            state.received += 1
            switch message {
            case .mirror(let key):
                guard state.peers.contains(source) else {
                    state.unknownSource += 1
                    return nil
                }
                guard let isNew = state.exports.mirror(key, to: source, now: now) else {
                    state.refused += 1
                    return nil
                }
                return .export(key, to: source, isNew: isNew)
            case .stop(let key):
                return state.exports.stop(key, to: source) ? .unexport(key, to: source) : nil
            case .published(let key, let codecs):
                guard state.mirrors.mirrors[key]?.home == source else {
                    state.unknownSource += 1
                    return nil
                }
                guard state.mirrors.published(key, codecs: codecs, from: source), let origin = state.mirrors.mirrors[key]?.origin else { return nil }
                return .relay(.published(key, codecs: codecs), origin: origin)
            case .ended(let key):
                guard state.mirrors.ended(key, from: source), let origin = state.mirrors.mirrors[key]?.origin else { return nil }
                return .relay(.ended(key), origin: origin)
            case .packet, .senderReport:
                guard state.mirrors.isLive(message.key, from: source), let origin = state.mirrors.mirrors[message.key]?.origin,
                    let relay = message.relay(arrival: now)
                else {
                    state.unknownSource += 1
                    return nil
                }
                return .relay(relay, origin: origin)
            case .keyframeRequest(let key):
                guard state.exports.isMirrored(key, by: source) else {
                    state.unknownSource += 1
                    return nil
                }
                return .relay(.keyframeRequest(key), origin: Self.viewerNode)
            case .nack(let key, let kind, let lost):
                guard state.exports.isMirrored(key, by: source) else {
                    state.unknownSource += 1
                    return nil
                }
                return .resend(key, kind, lost, to: source, origin: Self.viewerNode)
            }
        }
    }

    /// The origin a publisher's router hears a viewing node's keyframe requests and NACKs
    /// from: any node (the router answers its own publisher's, whoever asks).
    static let viewerNode = SFURouter.Origin.node(0)

    /// `viewer` watches `key` of the node at `home`: the message to send now, if any.
    func want(_ key: SFURouter.PublisherKey, from home: TransportAddress, viewer: UInt64, now: ContinuousClock.Instant) throws(MirrorBook.Refusal) -> Bool {
        try state.withLock { state throws(MirrorBook.Refusal) in try state.mirrors.want(key, from: home, viewer: viewer, now: now) }
    }

    /// The publisher's tracks and the routers' origin for it, once its node answered.
    func mirrored(_ key: SFURouter.PublisherKey) -> (codecs: [RTPCodec], origin: SFURouter.Origin)? {
        state.withLock { state in
            state.mirrors.mirrors[key].flatMap { mirror in mirror.codecs.map { ($0, mirror.origin) } }
        }
    }

    /// `viewer` stopped watching what `matching` selects (everything when nil).
    func release(viewer: UInt64, now: ContinuousClock.Instant, matching: (@Sendable (SFURouter.PublisherKey) -> Bool)? = nil) {
        state.withLock { $0.mirrors.release(viewer: viewer, now: now, matching: matching) }
    }

    /// The home a mirror's origin stands for (where its keyframe requests and NACKs go).
    func home(ofOrigin origin: SFURouter.Origin) -> TransportAddress? {
        state.withLock { $0.mirrors.home(ofOrigin: origin) }
    }

    /// A turn of the timer: mirrors to ask for again and to stop, exports expired.
    func tick(now: ContinuousClock.Instant) -> (send: [(NodeRelayMessage, TransportAddress)], actions: [Action]) {
        state.withLock { state in
            let (ask, stop) = state.mirrors.tick(now: now)
            var send = ask.map { (NodeRelayMessage.mirror($0.0), $0.1) }
            var actions: [Action] = []
            for (key, mirror) in stop {
                send.append((.stop(key), mirror.home))
                actions.append(.relay(.ended(key), origin: mirror.origin))
            }
            for (key, node) in state.exports.expire(now: now) { actions.append(.unexport(key, to: node)) }
            return (send, actions)
        }
    }

    func countSent(packet: Bool) {
        sentCount.add(1, ordering: .relaxed)
        if packet { packetsSentCount.add(1, ordering: .relaxed) }
    }

    func countFailed() {
        failedCount.add(1, ordering: .relaxed)
    }

    var statistics: NodeRelayStatistics {
        state.withLock { state in
            NodeRelayStatistics(
                mirrors: state.mirrors.mirrors.count, mirrorViewers: state.mirrors.mirrors.values.reduce(0) { $0 + $1.viewers.count },
                exports: state.exports.count, received: state.received, refused: state.refused, unknownSource: state.unknownSource,
                sent: sentCount.load(ordering: .relaxed), packetsSent: packetsSentCount.load(ordering: .relaxed),
                mirrorsFailed: failedCount.load(ordering: .relaxed))
        }
    }

    /// A node's media address as registered (`host:port`, `[v6]:port`).
    static func address(_ text: String) -> TransportAddress? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return IPAddress(host).map { TransportAddress(address: $0, port: port) }
    }
}

/// The node relay's numbers, for metrics (`liveroom_cluster_relay_*`).
struct NodeRelayStatistics: Sendable {
    /// Publishers of other nodes mirrored here, and the local viewers they serve.
    var mirrors = 0
    var mirrorViewers = 0
    /// (publisher, node) pairs this node sends: one per publisher per mirroring node.
    var exports = 0
    var received = 0
    /// Datagrams that did not authenticate (or were replayed, or over a bound).
    var refused = 0
    /// Authenticated datagrams from a source not entitled to them (not a live node, not the mirror's home).
    var unknownSource = 0
    var sent = 0
    var packetsSent = 0
    /// Mirrors whose node did not answer in time.
    var mirrorsFailed = 0

    func exposition() -> String {
        let lines: [(String, String, String, Int)] = [
            ("liveroom_cluster_relay_mirrors", "gauge", "Publishers of other nodes this node mirrors now (one copy each, however many viewers).", mirrors),
            ("liveroom_cluster_relay_mirror_viewers", "gauge", "Local viewers of mirrored publishers.", mirrorViewers),
            ("liveroom_cluster_relay_exports", "gauge", "Copies of this node's publishers sent to other nodes now (one per publisher per node).", exports),
            ("liveroom_cluster_relay_datagrams_received_total", "counter", "Node relay datagrams received that authenticated.", received),
            ("liveroom_cluster_relay_datagrams_refused_total", "counter", "Node relay datagrams refused: not authentic, replayed or over a bound.", refused),
            ("liveroom_cluster_relay_unknown_source_total", "counter", "Authentic node relay datagrams dropped: not from a live node or the mirror's home.", unknownSource),
            ("liveroom_cluster_relay_datagrams_sent_total", "counter", "Node relay datagrams sent.", sent),
            ("liveroom_cluster_relay_packets_sent_total", "counter", "RTP packets sent to other nodes' mirrors.", packetsSent),
            ("liveroom_cluster_relay_mirrors_failed_total", "counter", "Mirrors whose publisher's node did not answer in time.", mirrorsFailed),
        ]
        return lines.map { "# HELP \($0.0) \($0.2)\n# TYPE \($0.0) \($0.1)\n\($0.0) \($0.3)\n" }.joined()
    }
}
