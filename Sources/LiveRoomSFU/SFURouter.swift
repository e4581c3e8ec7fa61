import Foundation
import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// The selective forwarding unit of one media port: every publisher's and subscriber's
/// peer connection, and the routes between them.
///
/// Publishers' RTP is decrypted, kept in a short history, and re-encrypted to each
/// subscriber with that subscriber's SSRC, payload type and continuous sequence numbers.
/// Subscribers' NACKs are answered from the history (or forwarded), their PLI/FIR become
/// one rate-limited PLI to the publisher, and publishers' sender reports are rewritten
/// for each subscriber. Confined to the media port's event loop; not Sendable.
public final class SFURouter {
    /// Identifies who owns a peer connection (a signaling session).
    public typealias OwnerID = UInt64

    let certificate: DTLSCertificate
    /// The server's host candidates, in every answer.
    public let candidates: [ICECandidate]
    let connectTimeout: Duration
    let consentTimeout: Duration
    var demux = MediaDemultiplexer<PeerID>()
    var peers: [PeerID: Peer] = [:]
    var publishers: [PublisherKey: PeerID] = [:]
    /// Publishers the server feeds itself (a mix published into a room): tracks without a peer connection.
    var localPublishers: [PublisherKey: [UpTrack]] = [:]
    /// Publishers of other routers of the port, fed by their relayed packets.
    var mirrors: [PublisherKey: (origin: Origin, tracks: [UpTrack])] = [:]
    /// This router's place among the port's routers, and how many there are.
    public let shard: Int
    public let shards: Int
    let relaying: Bool
    /// When set, a publisher's packets for the port's other routers go here the moment they
    /// are decrypted, before this router serves its own subscribers, instead of into the
    /// outputs: the other loops then fan out at the same time as this one.
    public var packetRelay: ((Relay) -> Void)?
    /// When set, forwarded RTP for UDP paths is written straight into the port's send batch
    /// instead of a buffer and an output each (see ``DatagramSink``).
    public var datagramSink: (any DatagramSink)?
    /// Wall-clock time (Unix seconds), for the sender reports passed on in the server's own
    /// mapping; tests set their own.
    public var wallClock: () -> Double = { Date().timeIntervalSince1970 }
    /// Publishers other nodes mirror: their packets, sender reports and end also go to
    /// ``RelayDestination/nodes`` from the router that has them.
    var exported: Set<PublisherKey> = []
    /// The taps receiving each publisher's packets; they outlive a publisher's connection.
    var taps: [PublisherKey: [TapID]] = [:]
    var nextPeer: PeerID = 1
    /// Our SSRC as the sender of RTCP feedback to publishers.
    let feedbackSSRC = UInt32.random(in: 1...UInt32.max)
    public internal(set) var counters = Counters()

    /// - Parameters:
    ///   - host: the address clients reach the media port at (the candidate in answers).
    ///   - port: the media UDP port.
    public convenience init(
        certificate: DTLSCertificate, host: String, port: UInt16, connectTimeout: Duration = .seconds(15), consentTimeout: Duration = .seconds(30)
    ) {
        self.init(certificate: certificate, hosts: [host], port: port, connectTimeout: connectTimeout, consentTimeout: consentTimeout)
    }

    /// - Parameters:
    ///   - hosts: the addresses clients may reach the media port at, best first: one host
    ///     candidate each, in every answer.
    ///   - port: the media UDP port.
    ///   - tcpPort: the ICE-TCP port (RFC 6544), if the server listens on one: a passive TCP
    ///     candidate for each host too, of lower priority than UDP.
    ///   - connectTimeout: how long a new peer connection may take to connect (ICE and DTLS).
    ///   - consentTimeout: how long a peer may send no ICE check before it is dropped (RFC 7675).
    ///   - shard: this router's place among `shards` routers serving the same port, one per
    ///     event loop (at most ``maximumShards``): its ufrags begin with a character naming it,
    ///     and with more than one it emits ``Output/unrouted(_:from:shard:)``,
    ///     ``Output/bound(_:)``, ``Output/released(_:)`` and ``Output/relay(_:to:)``.
    public init(
        certificate: DTLSCertificate, hosts: [String], port: UInt16, tcpPort: UInt16? = nil, connectTimeout: Duration = .seconds(15),
        consentTimeout: Duration = .seconds(30), shard: Int = 0, shards: Int = 1
    ) {
        precondition(shards >= 1 && shards <= Self.maximumShards && (0..<shards).contains(shard))
        self.shard = shard
        self.shards = shards
        self.relaying = shards > 1
        self.certificate = certificate
        self.connectTimeout = connectTimeout
        self.consentTimeout = consentTimeout
        let udp = hosts.enumerated().map { index, host in
            ICECandidate(
                foundation: String(index + 1), component: 1, transport: "udp", priority: Self.priority(.udp, index: index),
                address: host, port: port, type: "host")
        }
        let tcp = tcpPort.map { tcpPort in
            hosts.enumerated().map { index, host in
                ICECandidate(
                    foundation: String(hosts.count + index + 1), component: 1, transport: "tcp", priority: Self.priority(.tcp, index: index),
                    address: host, port: tcpPort, type: "host", extensions: [.init(name: "tcptype", value: "passive")])
            }
        }
        self.candidates = udp + (tcp ?? [])
    }

    /// RFC 8445 section 5.1.2.1 for component 1: a host UDP candidate has type preference 126
    /// and a local preference that falls with its place in the list; a passive ICE-TCP host
    /// candidate (RFC 6544 section 4.2) has type preference 90, as browsers give it, and local
    /// preference 2^13 x 4 (passive) plus its place, so that UDP is preferred when both work.
    static func priority(_ transport: TransportProtocol, index: Int) -> UInt32 {
        let (typePreference, localPreference) =
            switch transport {
            case .udp: (126, 65_535 - min(index, 65_535))
            case .tcp: (90, (4 << 13) | (8191 - min(index, 8191)))
            }
        return UInt32(typePreference << 24 | localPreference << 8 | (256 - 1))
    }

    public var peerCount: Int { peers.count }

    /// The most routers one port may have: a ufrag's first character names its router.
    public static let maximumShards = 64
    static let shardCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// Fresh local ICE credentials whose ufrag names this router.
    func localCredentials() -> ICECredentials {
        var credentials = ICECredentials.random()
        credentials.ufrag = String(Self.shardCharacters[shard]) + credentials.ufrag.dropFirst()
        return credentials
    }

    /// The router of this port an ICE check is for, by the first character of the ufrag in its
    /// USERNAME: nil when the character names no router of the port (there may be fewer than
    /// ``maximumShards``), so a check can never name a loop the port does not have.
    func loop(ofCheck datagram: ByteBuffer) -> Int? {
        guard let username = (try? STUNMessage.parse(datagram))?.username, let first = username.first,
            let index = Self.shardCharacters.firstIndex(of: first), index < shards
        else { return nil }
        return index
    }

    /// Whether a peer connection takes its media from `address` (a valid ICE check bound it).
    /// The media port closes ICE-TCP connections that no peer connection uses.
    public func isBound(_ address: TransportAddress) -> Bool {
        demux.peer(at: address) != nil
    }

    // MARK: Packets and timers

    /// A datagram from the media port. `handedOff`: another router of the port received it and
    /// found it is for this one; if it is not, it is dropped rather than handed on again.
    public func receive(_ datagram: ByteBuffer, from source: TransportAddress, handedOff: Bool = false, now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        receive(datagram, from: source, handedOff: handedOff, now: now, into: &outputs)
        return outputs
    }

    /// ``receive(_:from:handedOff:now:)``, its outputs appended to `outputs`: a port that keeps
    /// one array for them allocates nothing per packet here.
    public func receive(_ datagram: ByteBuffer, from source: TransportAddress, handedOff: Bool = false, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        // The demultiplexer classifies the datagram and parses STUN once; the transport takes it from there.
        let reason: DropReason
        switch demux.route(datagram, from: source) {
        case .stun(let id, let message):
            guard let peer = peers[id] else { return }
            let refused = peer.transport.drops.badSTUN
            let events = peer.transport.receive(stun: message, datagram: datagram, from: source, now: now)
            if events.isEmpty, peer.transport.drops.badSTUN > refused { countDropped(.refusedCheck) }
            handle(events, of: peer, now: now, into: &outputs)
            return
        case .dtls(let id):
            guard let peer = peers[id] else { return }
            handle(peer.transport.receive(dtls: datagram, from: source, now: now), of: peer, now: now, into: &outputs)
            return
        case .rtp(let id):
            guard let peer = peers[id] else { return }
            // Decrypted in place, parsed once, and handed on as it is (no event, no array).
            guard let packet = peer.transport.unprotectRTP(datagram, from: source, now: now) else {
                countDropped(.unprotected)
                return
            }
            forward(packet, from: peer, now: now, into: &outputs)
            return
        case .rtcp(let id):
            guard let peer = peers[id] else { return }
            let events = peer.transport.receive(rtcp: datagram, from: source, now: now)
            if events.isEmpty { countDropped(.unprotected) }
            handle(events, of: peer, now: now, into: &outputs)
            return
        case .drop(.keepalive):
            return
        case .drop(.unknownUfrag):
            // The ufrag's first character names the loop whose router made it: another loop of
            // the port gets the check once; a character that names no loop is nobody's.
            guard let owner = loop(ofCheck: datagram) else {
                reason = .unknownLoop
                break
            }
            if owner != shard, !handedOff {
                outputs.append(.unrouted(datagram, from: source, shard: owner))
                return
            }
            reason = .unknownUfrag
        case .drop(.unknownAddress) where relaying && !handedOff:
            outputs.append(.unrouted(datagram, from: source, shard: nil))
            return
        case .drop(.unknownAddress):
            reason = .unknownAddress
        case .drop(.malformedSTUN):
            reason = .malformedSTUN
        case .drop(.notARequest):
            reason = .notARequest
        case .drop(.unknownKind):
            reason = .unknownKind
        }
        countDropped(reason)
    }

    /// Counts a datagram or packet dropped for `reason`.
    public func countDropped(_ reason: DropReason) {
        counters.droppedBy[reason, default: 0] += 1
    }

    /// How often publishers get receiver reports.
    public static let reportInterval = Duration.seconds(1)

    public var nextTimeout: ContinuousClock.Instant? {
        peers.values.compactMap(\.transport.nextTimeout).min()
    }

    public func handleTimers(now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        for peer in Array(peers.values) {
            if let timeout = peer.transport.nextTimeout, now >= timeout {
                handle(peer.transport.handleTimers(now: now), of: peer, now: now, into: &outputs)
            }
            if !peer.videoBacklog.isEmpty { outputs += sendBacklog(of: peer, now: now) }
        }
        feedbackTimers(now: now, into: &outputs)
        return outputs
    }

    func handle(_ events: [PeerTransport.Event], of peer: Peer, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        for event in events {
            switch event {
            case .send(let bytes, let to):
                // In order with what the sink is given next (a new subscriber's kept keyframe).
                if to.transport == .udp, let datagramSink {
                    datagramSink.send(bytes, to: to)
                } else {
                    outputs.append(.send(bytes, to: to))
                }
            case .selected(let address):
                let forgotten = demux.bind(address, to: peer.id)
                if relaying {
                    let publishes = if case .publisher = peer.role { true } else { false }
                    outputs.append(.bound(address, publisher: publishes ? peer.owner : nil))
                    if !forgotten.isEmpty { outputs.append(.released(forgotten)) }
                }
            case .connected:
                // A new subscriber starts from the keyframe the server keeps, or asks for one.
                if case .subscriber(let key, _) = peer.role {
                    if let replay = replayKeyframe(of: key, to: peer, now: now) {
                        outputs += replay
                    } else {
                        outputs += requestKeyframe(of: key, now: now)
                    }
                }
            case .rtp(let packet):
                // Not from the media port (which decrypts RTP itself): a transport's own events.
                forward(ByteBuffer(bytes: packet), from: peer, now: now, into: &outputs)
            case .rtcp(let packet):
                feedback(packet, from: peer, now: now, into: &outputs)
            case .closed(let reason):
                let wasPublisher: PublisherKey? = if case .publisher(let key, _) = peer.role { key } else { nil }
                outputs += remove(peer.id, reason: reason)
                outputs.append(.peerClosed(owner: peer.owner, publisher: wasPublisher, reason: reason))
            }
        }
    }
}
