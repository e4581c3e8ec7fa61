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

    public enum Output {
        /// Write this datagram.
        case send(ByteBuffer, to: TransportAddress)
        /// A peer connection closed by itself (not connected in time, consent expired, DTLS
        /// closed); `publisher` is set when it was publishing.
        case peerClosed(owner: OwnerID, publisher: PublisherKey?, reason: String)
        /// A publisher's RTP packet (decrypted, parsed once on its way through) for a tap
        /// inside the server, such as a mixer.
        case tapped(TapID, publisher: PublisherKey, codec: RTPCodec, packet: RTPPacket)
        /// A subscriber asks a local publisher (one the server feeds) for a keyframe.
        case localKeyframeRequest(PublisherKey)
        /// A datagram for no peer connection of this router, which may belong to another router
        /// of the same port (another loop): `shard` names it when the datagram does (the ufrag
        /// of an ICE check), else the port looks its source address up. Only with several shards.
        case unrouted(ByteBuffer, from: TransportAddress, shard: Int?)
        /// A valid check bound `address` to one of this router's peer connections; `publisher`
        /// is its owner when that connection publishes (its packets are the ones every loop
        /// forwards; the newest address it was bound to is the one its media comes from).
        case bound(TransportAddress, publisher: OwnerID?)
        /// These addresses no longer lead to this router's peer connections.
        case released([TransportAddress])
        /// A message for the other routers of the port (``Relay``).
        case relay(Relay, to: RelayDestination)
    }

    /// What the routers of one media port (one per event loop, each owning its own peer
    /// connections) tell each other about publishers. A publisher's router (its origin) sends
    /// its packets to every other router, which keeps a mirror of its tracks, so a subscriber
    /// on any loop is served by its own loop; mirrors ask the origin for keyframes and lost packets.
    public enum Relay: Sendable {
        /// A publisher started on the sending router, with these tracks.
        case published(PublisherKey, codecs: [RTPCodec])
        /// The sending router's publisher ended.
        case ended(PublisherKey)
        /// One RTP packet (decrypted) of the sending router's publisher, and when it reached the server.
        case packet(PublisherKey, MediaKind, [UInt8], arrival: ContinuousClock.Instant)
        /// A sender report of the sending router's publisher.
        case senderReport(PublisherKey, RTCPSenderReport)
        /// A mirror's subscribers need a keyframe.
        case keyframeRequest(PublisherKey)
        /// A mirror's subscribers lost these packets (by the publisher's numbers), which the
        /// mirror did not get either.
        case nack(PublisherKey, MediaKind, [UInt16])
    }

    public enum RelayDestination: Sendable, Hashable {
        /// Every other router of the port (an origin to its mirrors).
        case mirrors
        /// One router (a mirror to its origin); an origin from ``nodeOrigin(_:)`` is another
        /// node's media port (the node relay).
        case shard(Int)
        /// Every node that mirrors the publisher (the node relay; ``setExported(_:_:)``).
        case nodes
    }

    /// How many other nodes' media ports a router may mirror publishers of.
    public static let maximumNodeOrigins = 1024

    /// The origin by which a router knows the relays of the `index`th other node: past the
    /// port's own routers.
    public static func nodeOrigin(_ index: Int) -> Int { maximumShards + index }

    /// Whether `origin` is another node rather than a router of the port.
    public static func isNodeOrigin(_ origin: Int) -> Bool { origin >= maximumShards }

    /// Identifies a receiver of publishers' RTP inside the server (a publish task's mixer).
    public typealias TapID = UInt64

    /// Counters for metrics and benchmarks.
    public struct Counters: Sendable, Hashable {
        public var rtpReceived = 0
        public var rtpForwarded = 0
        public var bytesForwarded = 0
        public var retransmitted = 0
        public var nacksForwarded = 0
        /// NACKs the server sent publishers for video that did not arrive.
        public var nacksSent = 0
        /// New subscribers started from the kept keyframe instead of a new one.
        public var keyframesReplayed = 0
        public var keyframeRequests = 0
        /// Datagrams and packets dropped, by why.
        public var droppedBy: [DropReason: Int] = [:]

        /// Everything dropped, whatever the reason.
        public var dropped: Int { droppedBy.values.reduce(0, +) }

        public init() {}

        /// Adds another router's counters to these.
        public mutating func add(_ other: Counters) {
            rtpReceived += other.rtpReceived
            rtpForwarded += other.rtpForwarded
            bytesForwarded += other.bytesForwarded
            retransmitted += other.retransmitted
            nacksForwarded += other.nacksForwarded
            nacksSent += other.nacksSent
            keyframesReplayed += other.keyframesReplayed
            keyframeRequests += other.keyframeRequests
            droppedBy.merge(other.droppedBy, uniquingKeysWith: +)
        }
    }

    /// Why the media port dropped a datagram or a packet (the `reason` of
    /// `liveroom_media_dropped_total`). Nothing a client sends is trapped on: what names nothing
    /// the server has is dropped and counted under one of these.
    public enum DropReason: String, Sendable, Hashable, CaseIterable {
        /// A datagram that looks like STUN and does not parse.
        case malformedSTUN = "malformed_stun"
        /// STUN that is not a Binding request (an ICE-lite server sends no checks).
        case notARequest = "not_a_request"
        /// A check whose ufrag names no peer connection of the loop it names.
        case unknownUfrag = "unknown_ufrag"
        /// A check whose ufrag names no media loop of the port (its first character).
        case unknownLoop = "unknown_loop"
        /// DTLS, RTP or RTCP from an address no valid check bound.
        case unknownAddress = "unknown_address"
        /// A datagram of none of the kinds the port takes (RFC 7983).
        case unknownKind = "unknown_kind"
        /// An ICE check that did not pass its peer connection's checks (integrity, role).
        case refusedCheck = "refused_check"
        /// SRTP or SRTCP that did not authenticate or decrypt, or came before DTLS finished.
        case unprotected = "unprotected"
        /// Decrypted RTP that does not parse, or whose payload type the connection did not negotiate.
        case unknownPayloadType = "unknown_payload_type"
        /// Decrypted RTCP that does not parse.
        case malformedRTCP = "malformed_rtcp"
    }

    public struct PublisherKey: Hashable, Sendable {
        public var roomId: String
        public var userId: String

        public init(roomId: String, userId: String) {
            self.roomId = roomId
            self.userId = userId
        }
    }

    final class UpTrack {
        let kind: MediaKind
        let codec: RTPCodec
        let payloadType: UInt8
        /// The publisher's id for the SEI header extension, when it is not the one the server
        /// uses inside (``SEIHeaderExtension/defaultID``): its packets are renumbered on arrival.
        var seiExtensionID: UInt8?
        /// The video payload format whose keyframes the track notices; nil for audio.
        let videoCodec: VideoCodec?
        var ssrc: UInt32?
        var history = PacketHistory()
        var keyframeRequests = KeyframeRequestLimiter()
        /// Video of a remote publisher: what did not arrive, asked for again at once.
        var nacks = NackGenerator()
        var reception: ReceiveStatistics
        /// Subscriber peers receiving this track, each with its down track of this kind (held
        /// here so forwarding a packet looks nothing up).
        var subscribers: [(peer: Peer, down: DownTrack)] = []
        /// Video: the first sequence number and the timestamp of the newest keyframe, and the
        /// newest sequence number, so a new subscriber can start from the kept keyframe.
        var keyframe: (start: UInt16, timestamp: UInt32)?
        var newestSequence: UInt16?
        /// When the newest sender report passed on arrived.
        var lastSenderReport: ContinuousClock.Instant?

        init(kind: MediaKind, codec: RTPCodec, payloadType: UInt8) {
            self.kind = kind
            self.codec = codec
            self.payloadType = payloadType
            videoCodec = kind == .video ? VideoCodec(rawValue: codec.name) : nil
            reception = ReceiveStatistics(clockRate: codec.clockRate)
        }
    }

    /// One kind of a subscriber's media: a class, so forwarding a packet updates its numbering
    /// in place instead of copying the state out of the peer's role and writing it back.
    final class DownTrack {
        let kind: MediaKind
        let codec: RTPCodec
        let payloadType: UInt8
        let ssrc: UInt32
        /// The subscriber's id for the SEI header extension, when it is not the server's.
        let seiExtensionID: UInt8?
        var rewriter: SequenceRewriter
        /// Not forwarded now (a PK forward mode leaves this kind out).
        var paused = false
        /// Forwarding resumes at the next keyframe (video after a pause).
        var awaitingKeyframe = false

        init(kind: MediaKind, codec: RTPCodec, payloadType: UInt8, ssrc: UInt32, seiExtensionID: UInt8?, rewriter: SequenceRewriter) {
            self.kind = kind
            self.codec = codec
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.seiExtensionID = seiExtensionID
            self.rewriter = rewriter
        }
    }

    enum Role {
        case publisher(key: PublisherKey, tracks: [UpTrack])
        case subscriber(publisher: PublisherKey, tracks: [MediaKind: DownTrack])
    }

    typealias PeerID = UInt64

    final class Peer {
        let id: PeerID
        let owner: OwnerID
        let transport: PeerTransport
        var role: Role
        /// The answer given, which an ICE restart gives again with new credentials.
        var answer: SessionDescription
        /// When a publisher is next sent a receiver report.
        var reports = ReportSchedule(interval: SFURouter.reportInterval)
        /// A subscriber's video still to send from the kept keyframe on, paced, with the live
        /// packets that came meanwhile queued behind it (in order).
        var videoBacklog: [(packet: [UInt8], header: RTPHeader)] = []

        init(id: PeerID, owner: OwnerID, transport: PeerTransport, role: Role, answer: SessionDescription) {
            self.id = id
            self.owner = owner
            self.transport = transport
            self.role = role
            self.answer = answer
        }
    }

    /// Which of an owner's peer connections an ICE restart is for.
    public enum ICERestartTarget: Sendable, Hashable {
        /// The owner's publishing connection.
        case publishing
        /// The owner's subscription to this publisher; nil: its only subscription (a WHEP session).
        case subscription(publisherId: String?)
    }

    /// What an ICE restart answers: the earlier answer with the new credentials, and those
    /// credentials with the candidates (a WHIP/WHEP PATCH answers with just these).
    public struct ICERestartAnswer: Sendable {
        public var sdp: String
        public var local: ICECredentials
        public var candidates: [ICECandidate]

        public init(sdp: String, local: ICECredentials, candidates: [ICECandidate]) {
            self.sdp = sdp
            self.local = local
            self.candidates = candidates
        }
    }

    private let certificate: DTLSCertificate
    /// The server's host candidates, in every answer.
    public let candidates: [ICECandidate]
    private let connectTimeout: Duration
    private let consentTimeout: Duration
    private var demux = MediaDemultiplexer<PeerID>()
    private var peers: [PeerID: Peer] = [:]
    private var publishers: [PublisherKey: PeerID] = [:]
    /// Publishers the server feeds itself (a mix published into a room): tracks without a peer connection.
    private var localPublishers: [PublisherKey: [UpTrack]] = [:]
    /// Publishers of other routers of the port, fed by their relayed packets.
    private var mirrors: [PublisherKey: (origin: Int, tracks: [UpTrack])] = [:]
    /// This router's place among the port's routers, and how many there are.
    public let shard: Int
    public let shards: Int
    private let relaying: Bool
    /// When set, a publisher's packets for the port's other routers go here the moment they
    /// are decrypted, before this router serves its own subscribers, instead of into the
    /// outputs: the other loops then fan out at the same time as this one.
    public var packetRelay: ((Relay) -> Void)?
    /// When set, forwarded RTP for UDP paths is written straight into the port's send batch
    /// instead of a buffer and an output each (see ``DatagramSink``).
    public var datagramSink: (any DatagramSink)?
    /// Publishers other nodes mirror: their packets, sender reports and end also go to
    /// ``RelayDestination/nodes`` from the router that has them.
    private var exported: Set<PublisherKey> = []
    /// The taps receiving each publisher's packets; they outlive a publisher's connection.
    private var taps: [PublisherKey: [TapID]] = [:]
    private var nextPeer: PeerID = 1
    /// Our SSRC as the sender of RTCP feedback to publishers.
    private let feedbackSSRC = UInt32.random(in: 1...UInt32.max)
    public private(set) var counters = Counters()

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
    private static let shardCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// Fresh local ICE credentials whose ufrag names this router.
    private func localCredentials() -> ICECredentials {
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

    // MARK: Negotiation

    /// Answers a publisher's offer. Replaces any earlier publishing connection of the same user.
    public func publish(owner: OwnerID, roomId: String, userId: String, offer offerText: String, now: ContinuousClock.Instant)
        throws(NegotiationError) -> (answer: String, audio: Bool, video: Bool)
    {
        let offer = try parse(offerText)
        let remote = try TransportDescription(of: offer)
        let local = localDescription(answering: remote)
        let (answer, negotiated) = try SDPNegotiation.answer(to: offer, local: local, sessionID: UInt64.random(in: 1...UInt64(Int64.max))) {
            kind, direction, codecs in
            guard direction == .sendonly || direction == .sendrecv else { return .init(codec: nil) }
            return .init(codec: codecs.first)
        }
        let tracks = negotiated.filter { $0.direction == .recvonly || $0.direction == .sendrecv }.map { negotiated in
            let track = UpTrack(kind: negotiated.kind, codec: negotiated.codec, payloadType: negotiated.payloadType)
            track.seiExtensionID = negotiated.seiExtensionID == SEIHeaderExtension.defaultID ? nil : negotiated.seiExtensionID
            return track
        }
        guard !tracks.isEmpty else { throw NegotiationError("a publish offer needs sendonly audio or video") }
        let key = PublisherKey(roomId: roomId, userId: userId)
        _ = stopPublishing(roomId: roomId, userId: userId)
        let transport = try makeTransport(local: local, remote: remote, now: now)
        let peer = add(Peer(id: 0, owner: owner, transport: transport, role: .publisher(key: key, tracks: tracks), answer: answer), local: local)
        publishers[key] = peer.id
        mirrors[key] = nil
        attachSubscribers(of: key, to: tracks)
        return (answer.serialize(), tracks.contains { $0.kind == .audio }, tracks.contains { $0.kind == .video })
    }

    /// Answers a subscriber's offer for one publisher's media.
    public func subscribe(owner: OwnerID, roomId: String, publisherId: String, offer offerText: String, now: ContinuousClock.Instant)
        throws(NegotiationError) -> String
    {
        let key = PublisherKey(roomId: roomId, userId: publisherId)
        guard let upTracks = upTracks(of: key) else {
            throw NegotiationError("\(publisherId) is not publishing")
        }
        let offer = try parse(offerText)
        let remote = try TransportDescription(of: offer)
        let local = localDescription(answering: remote)
        var planned: [MediaKind: (UInt32, RTPCodec)] = [:]
        let (answer, negotiated) = try SDPNegotiation.answer(to: offer, local: local, sessionID: UInt64.random(in: 1...UInt64(Int64.max))) {
            kind, direction, codecs in
            guard direction == .recvonly || direction == .sendrecv, planned[kind] == nil,
                let up = upTracks.first(where: { $0.kind == kind }), codecs.contains(up.codec)
            else { return .init(codec: nil) }
            let ssrc = UInt32.random(in: 1...UInt32.max)
            planned[kind] = (ssrc, up.codec)
            return .init(codec: up.codec, localSSRC: ssrc, msid: (publisherId, "\(publisherId)-\(kind.rawValue)"))
        }
        var down: [MediaKind: DownTrack] = [:]
        for track in negotiated {
            guard let ssrc = track.localSSRC else { continue }
            down[track.kind] = DownTrack(
                kind: track.kind, codec: track.codec, payloadType: track.payloadType, ssrc: ssrc,
                seiExtensionID: track.seiExtensionID == SEIHeaderExtension.defaultID ? nil : track.seiExtensionID,
                rewriter: SequenceRewriter(clockRate: track.codec.clockRate))
        }
        guard !down.isEmpty else { throw NegotiationError("the offer receives none of \(publisherId)'s media in a codec it publishes") }
        unsubscribe(owner: owner, publisherId: publisherId, roomId: roomId)
        let transport = try makeTransport(local: local, remote: remote, now: now)
        let peer = add(Peer(id: 0, owner: owner, transport: transport, role: .subscriber(publisher: key, tracks: down), answer: answer), local: local)
        for up in upTracks {
            if let track = down[up.kind] { up.subscribers.append((peer, track)) }
        }
        return answer.serialize()
    }

    /// Restarts ICE on one of `owner`'s peer connections with the client's new credentials
    /// (`remote`): new server credentials, checks accepted again from any path, DTLS and SRTP
    /// kept. `fingerprint`, when the client sent a whole offer, must be the one it connected with.
    /// Nil when `remote` are the credentials in use: there is nothing to restart.
    public func restartICE(
        owner: OwnerID, target: ICERestartTarget, remote: ICECredentials, fingerprint: SDPFingerprint?, now: ContinuousClock.Instant
    ) throws(NegotiationError) -> ICERestartAnswer? {
        guard let peer = connection(of: owner, for: target), !peer.transport.isClosed else {
            switch target {
            case .publishing: throw NegotiationError("there is no publishing connection to restart")
            case .subscription(let publisherId?): throw NegotiationError("there is no subscription to \(publisherId) to restart")
            case .subscription(nil): throw NegotiationError("there is no subscription to restart")
            }
        }
        let current = peer.transport.iceCredentials
        guard remote.ufrag != current.remote.ufrag else { return nil }
        if let fingerprint, fingerprint != peer.transport.remoteDescription.fingerprint {
            throw NegotiationError("an ICE restart keeps the DTLS certificate: the offer has another fingerprint")
        }
        let local = localCredentials()
        let agent = ICELiteAgent(local: local, remoteUfrag: remote.ufrag, now: now, consentTimeout: consentTimeout)
        _ = peer.transport.restartICE(.lite(agent), local: local, remote: remote, now: now)
        demux.unregister(ufrag: current.local.ufrag)
        demux.register(ufrag: local.ufrag, peer: peer.id)
        peer.answer = SDPNegotiation.restartingICE(peer.answer, credentials: local)
        return ICERestartAnswer(sdp: peer.answer.serialize(), local: local, candidates: candidates)
    }

    /// Whether `owner` has the peer connection `target` names on this router.
    public func hasConnection(of owner: OwnerID, for target: ICERestartTarget) -> Bool {
        connection(of: owner, for: target) != nil
    }

    private func connection(of owner: OwnerID, for target: ICERestartTarget) -> Peer? {
        peers.values.first { peer in
            guard peer.owner == owner else { return false }
            switch (target, peer.role) {
            case (.publishing, .publisher): return true
            case (.subscription(let publisherId), .subscriber(let key, _)): return publisherId == nil || publisherId == key.userId
            default: return false
            }
        }
    }

    /// Stops `owner`'s subscription to a publisher.
    public func unsubscribe(owner: OwnerID, publisherId: String, roomId: String? = nil) {
        for peer in peers.values where peer.owner == owner {
            if case .subscriber(let key, _) = peer.role, key.userId == publisherId, roomId == nil || key.roomId == roomId {
                _ = remove(peer.id, reason: "unsubscribed")
            }
        }
    }

    /// Pauses or resumes the kinds of `publisher`'s media that `owner`'s subscription to it
    /// receives (a PK forward mode). Video resumes at the next keyframe, which is asked for.
    public func setForwarding(owner: OwnerID, publisher: PublisherKey, audio: Bool, video: Bool, now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        for peer in peers.values where peer.owner == owner {
            guard case .subscriber(let key, let tracks) = peer.role, key == publisher else { continue }
            for (kind, down) in tracks {
                let pause = kind == .audio ? !audio : !video
                if down.paused, !pause {
                    down.awaitingKeyframe = kind == .video
                    if kind == .video { outputs += requestKeyframe(of: key, now: now) }
                }
                down.paused = pause
            }
        }
        return outputs
    }

    /// Closes a user's publishing connection; its subscribers stop receiving it.
    public func stopPublishing(roomId: String, userId: String) -> [Output] {
        guard let id = publishers[PublisherKey(roomId: roomId, userId: userId)] else { return [] }
        return remove(id, reason: "stopped publishing")
    }

    /// Closes every connection `owner` has.
    public func close(owner: OwnerID) -> [Output] {
        peers.values.filter { $0.owner == owner }.map(\.id).flatMap { remove($0, reason: "session closed") }
    }

    // MARK: Local publishers

    /// Starts (or restarts) a publisher the server feeds with ``sendLocal(_:kind:of:now:)``,
    /// which subscribers receive like any other. Subscribers of an earlier one carry on.
    public func publishLocal(_ key: PublisherKey, codecs: [RTPCodec]) {
        let tracks = codecs.map { UpTrack(kind: $0.kind, codec: $0, payloadType: 0) }
        localPublishers[key] = tracks
        mirrors[key] = nil
        attachSubscribers(of: key, to: tracks)
    }

    /// Subscribers still connected from an earlier publish of the same user carry on with new
    /// tracks: their streams continue with the same SSRC and the next sequence numbers.
    private func attachSubscribers(of key: PublisherKey, to tracks: [UpTrack]) {
        for subscriber in peers.values {
            guard case .subscriber(key, let down) = subscriber.role else { continue }
            for track in tracks {
                if let downTrack = down[track.kind], downTrack.codec == track.codec { track.subscribers.append((subscriber, downTrack)) }
            }
        }
    }

    /// Ends a local publisher.
    public func stopLocal(_ key: PublisherKey) -> [Output] {
        guard localPublishers.removeValue(forKey: key) != nil else { return [] }
        var outputs: [Output] = []
        if relaying { outputs.append(.relay(.ended(key), to: .mirrors)) }
        if exported.contains(key) { outputs.append(.relay(.ended(key), to: .nodes)) }
        return outputs
    }

    // MARK: The node relay

    /// Whether other nodes mirror `key`: its packets then also go to ``RelayDestination/nodes``.
    public func setExported(_ key: PublisherKey, _ isExported: Bool) {
        if isExported { exported.insert(key) } else { exported.remove(key) }
    }

    /// The tracks of `key` when it publishes on this router (not a mirror): what a node that
    /// asks to mirror it is answered.
    public func ownTracks(of key: PublisherKey) -> [RTPCodec]? {
        if let peer = publishers[key].flatMap({ peers[$0] }), case .publisher(_, let tracks) = peer.role { return tracks.map(\.codec) }
        return localPublishers[key]?.map(\.codec)
    }

    /// Whether `key` has tracks here (published, local or mirrored).
    public func hasTracks(of key: PublisherKey) -> Bool { upTracks(of: key) != nil }

    /// Packets of this router's own publisher `key` kept in its history, for a node whose copy
    /// lost them; `missing` are those no longer (or never) kept.
    public func storedPackets(of key: PublisherKey, kind: MediaKind, sequences: [UInt16]) -> (packets: [[UInt8]], missing: [UInt16]) {
        guard mirrors[key] == nil, let track = upTracks(of: key)?.first(where: { $0.kind == kind }) else { return ([], []) }
        var packets: [[UInt8]] = []
        var missing: [UInt16] = []
        for sequence in sequences {
            if let stored = track.history.packet(sequenceNumber: sequence) { packets.append(stored) } else { missing.append(sequence) }
        }
        counters.retransmitted += packets.count
        return (packets, missing)
    }

    /// Tells the other routers of the port about a publisher (remote or local) that just
    /// started here, so their subscribers can follow it.
    public func announce(_ key: PublisherKey) -> [Output] {
        guard relaying, mirrors[key] == nil, let tracks = upTracks(of: key) else { return [] }
        return [.relay(.published(key, codecs: tracks.map(\.codec)), to: .mirrors)]
    }

    /// A message from router `origin` of the same port.
    public func receiveRelay(_ relay: Relay, from origin: Int, now: ContinuousClock.Instant) -> [Output] {
        switch relay {
        case .published(let key, let codecs):
            // A publisher of this router's own is the newer one.
            guard publishers[key] == nil, localPublishers[key] == nil else { return [] }
            // Another node's answer repeated (a loop may have taken it already): the mirror stays, with its history.
            if Self.isNodeOrigin(origin), let mirror = mirrors[key], mirror.origin == origin, mirror.tracks.map(\.codec) == codecs { return [] }
            let tracks = codecs.map { UpTrack(kind: $0.kind, codec: $0, payloadType: 0) }
            mirrors[key] = (origin, tracks)
            attachSubscribers(of: key, to: tracks)
        case .ended(let key):
            if mirrors[key]?.origin == origin { mirrors[key] = nil }
        case .packet(let key, let kind, let packet, let arrival):
            guard let mirror = mirrors[key], mirror.origin == origin, let track = mirror.tracks.first(where: { $0.kind == kind }),
                let parsed = try? RTPPacket.parse(ByteBuffer(bytes: packet))
            else { return [] }
            var outputs: [Output] = []
            if Self.isNodeOrigin(origin) {
                // Another node's packets cross a network: what did not arrive is asked for again.
                counters.rtpReceived += 1
                if track.videoCodec != nil, track.ssrc == nil || track.ssrc == parsed.header.ssrc {
                    let lost = track.nacks.received(parsed.header.sequenceNumber, now: now)
                    if !lost.isEmpty { outputs.append(.relay(.nack(key, kind, lost), to: .shard(origin))) }
                }
            }
            // Forwarded as of when it reached the server, so its copies' delay counts the hand-off.
            return outputs + forward(packet, parsed: parsed, on: track, of: key, mirrored: true, now: arrival)
        case .senderReport(let key, let report):
            guard let mirror = mirrors[key], mirror.origin == origin, let up = mirror.tracks.first(where: { $0.ssrc == report.ssrc }) else { return [] }
            return forwardSenderReport(report, on: up)
        case .keyframeRequest(let key):
            // Only a publisher of this router's own: a request is never relayed twice.
            guard mirrors[key] == nil else { return [] }
            return requestKeyframe(of: key, now: now)
        case .nack(let key, let kind, let lost):
            guard let publisher = publishers[key].flatMap({ peers[$0] }), case .publisher(_, let tracks) = publisher.role,
                let ssrc = tracks.first(where: { $0.kind == kind })?.ssrc
            else { return [] }
            counters.nacksForwarded += 1
            return sendRTCP([.genericNACK(RTCPGenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: ssrc, lostSequenceNumbers: lost))], to: publisher)
        }
        return []
    }

    /// One RTP packet (unprotected) of a local publisher's `kind` track, to its subscribers and taps.
    public func sendLocal(_ packet: [UInt8], kind: MediaKind, of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        guard let track = localPublishers[key]?.first(where: { $0.kind == kind }), let parsed = try? RTPPacket.parse(ByteBuffer(bytes: packet)) else {
            return []
        }
        return forward(packet, parsed: parsed, on: track, of: key, mirrored: false, now: now)
    }

    /// The tracks of a publisher: remote, local, or mirrored from another router.
    private func upTracks(of key: PublisherKey) -> [UpTrack]? {
        if let peer = publishers[key].flatMap({ peers[$0] }), case .publisher(_, let tracks) = peer.role { return tracks }
        return localPublishers[key] ?? mirrors[key]?.tracks
    }

    // MARK: Taps

    /// Sets the publishers whose packets `tap` receives, replacing the earlier set. A
    /// publisher new to the tap is asked for a keyframe, so decoding can start.
    public func setTap(_ tap: TapID, publishers keys: Set<PublisherKey>, now: ContinuousClock.Instant) -> [Output] {
        for (key, ids) in taps where ids.contains(tap) && !keys.contains(key) {
            let rest = ids.filter { $0 != tap }
            taps[key] = rest.isEmpty ? nil : rest
        }
        var outputs: [Output] = []
        for key in keys where taps[key]?.contains(tap) != true {
            taps[key, default: []].append(tap)
            // Every router of the port is told of the tap: the publisher's own asks.
            if tapsHere(key) { outputs += requestKeyframe(of: key, now: now) }
        }
        return outputs
    }

    /// Whether this router hands `key`'s packets to taps: its own publishers, and another
    /// node's publisher mirrored here on the first router (every router mirrors it; one taps).
    private func tapsHere(_ key: PublisherKey) -> Bool {
        guard let mirror = mirrors[key] else { return true }
        return Self.isNodeOrigin(mirror.origin) && shard == 0
    }

    /// A tap asks a publisher for a keyframe (rate-limited like subscribers' requests). Every
    /// router of the port is asked; the publisher's own asks the publisher.
    public func requestKeyframe(for tap: TapID, of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        guard taps[key]?.contains(tap) == true, tapsHere(key) else { return [] }
        return requestKeyframe(of: key, now: now)
    }

    // MARK: Packets and timers

    /// A datagram from the media port. `handedOff`: another router of the port received it and
    /// found it is for this one; if it is not, it is dropped rather than handed on again.
    public func receive(_ datagram: ByteBuffer, from source: TransportAddress, handedOff: Bool = false, now: ContinuousClock.Instant) -> [Output] {
        // The demultiplexer classifies the datagram and parses STUN once; the transport takes it from there.
        let reason: DropReason
        switch demux.route(datagram, from: source) {
        case .stun(let id, let message):
            guard let peer = peers[id] else { return [] }
            let refused = peer.transport.drops.badSTUN
            let events = peer.transport.receive(stun: message, datagram: datagram, from: source, now: now)
            if events.isEmpty, peer.transport.drops.badSTUN > refused { countDropped(.refusedCheck) }
            return handle(events, of: peer, now: now)
        case .dtls(let id):
            guard let peer = peers[id] else { return [] }
            return handle(peer.transport.receive(dtls: datagram, from: source, now: now), of: peer, now: now)
        case .rtp(let id):
            guard let peer = peers[id] else { return [] }
            let events = peer.transport.receive(rtp: datagram, from: source)
            if events.isEmpty { countDropped(.unprotected) }
            return handle(events, of: peer, now: now)
        case .rtcp(let id):
            guard let peer = peers[id] else { return [] }
            let events = peer.transport.receive(rtcp: datagram, from: source)
            if events.isEmpty { countDropped(.unprotected) }
            return handle(events, of: peer, now: now)
        case .drop(.keepalive):
            return []
        case .drop(.unknownUfrag):
            // The ufrag's first character names the loop whose router made it: another loop of
            // the port gets the check once; a character that names no loop is nobody's.
            guard let owner = loop(ofCheck: datagram) else {
                reason = .unknownLoop
                break
            }
            if owner != shard, !handedOff { return [.unrouted(datagram, from: source, shard: owner)] }
            reason = .unknownUfrag
        case .drop(.unknownAddress) where relaying && !handedOff:
            return [.unrouted(datagram, from: source, shard: nil)]
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
        return []
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
                outputs += handle(peer.transport.handleTimers(now: now), of: peer, now: now)
            }
            if !peer.videoBacklog.isEmpty { outputs += sendBacklog(of: peer, now: now) }
            if case .publisher(_, let tracks) = peer.role, peer.transport.isConnected {
                for track in tracks where track.keyframeRequests.due(now: now) {
                    outputs += sendPLI(to: peer, track: track)
                }
                for track in tracks where track.videoCodec != nil {
                    outputs += sendNACK(track.nacks.due(now: now), to: peer, track: track)
                }
                // A receiver report a second: loss and LSR/DLSR (the publisher's RTT) per stream.
                if peer.reports.due(now: now) {
                    let blocks = tracks.compactMap { track in track.ssrc.flatMap { track.reception.reportBlock(ssrc: $0, now: now) } }
                    if !blocks.isEmpty {
                        outputs += sendRTCP([.receiverReport(RTCPReceiverReport(ssrc: feedbackSSRC, reportBlocks: blocks))], to: peer)
                    }
                }
            }
        }
        // Mirrors of other nodes' video: what is still missing is asked for again.
        for (key, mirror) in mirrors where Self.isNodeOrigin(mirror.origin) {
            for track in mirror.tracks where track.videoCodec != nil {
                let lost = track.nacks.due(now: now)
                if !lost.isEmpty { outputs.append(.relay(.nack(key, track.kind, lost), to: .shard(mirror.origin))) }
            }
        }
        return outputs
    }

    private func handle(_ events: [PeerTransport.Event], of peer: Peer, now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
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
                outputs += forward(packet, from: peer, now: now)
            case .rtcp(let packet):
                outputs += feedback(packet, from: peer, now: now)
            case .closed(let reason):
                let wasPublisher: PublisherKey? = if case .publisher(let key, _) = peer.role { key } else { nil }
                outputs += remove(peer.id, reason: reason)
                outputs.append(.peerClosed(owner: peer.owner, publisher: wasPublisher, reason: reason))
            }
        }
        return outputs
    }

    /// A publisher's RTP to every subscriber of its track, and to the taps on the publisher.
    private func forward(_ packet: [UInt8], from peer: Peer, now: ContinuousClock.Instant) -> [Output] {
        guard case .publisher(let key, let tracks) = peer.role, var parsed = try? RTPPacket.parse(ByteBuffer(bytes: packet)),
            let track = tracks.first(where: { $0.payloadType == parsed.header.payloadType })
        else {
            countDropped(.unknownPayloadType)
            return []
        }
        // Video that did not arrive is asked for at once, before any subscriber notices the gap.
        var outputs: [Output] = []
        if track.videoCodec != nil, track.ssrc == nil || track.ssrc == parsed.header.ssrc {
            outputs = sendNACK(track.nacks.received(parsed.header.sequenceNumber, now: now), to: peer, track: track, ssrc: parsed.header.ssrc)
        }
        // A publisher that numbers the SEI extension its own way: renumbered once, here.
        if let id = track.seiExtensionID, parsed.header.hasExtension {
            var renumbered = packet
            if RTPHeaderExtension.renumber(id, to: SEIHeaderExtension.defaultID, inPacket: &renumbered),
                let reparsed = try? RTPPacket.parse(ByteBuffer(bytes: renumbered))
            {
                parsed = reparsed
                return outputs + forward(renumbered, parsed: parsed, on: track, of: key, mirrored: false, now: now)
            }
        }
        return outputs + forward(packet, parsed: parsed, on: track, of: key, mirrored: false, now: now)
    }

    /// A NACK to a publisher for the packets of `track` (its SSRC, or `ssrc` before it is known) that did not arrive.
    private func sendNACK(_ lost: [UInt16], to publisher: Peer, track: UpTrack, ssrc: UInt32? = nil) -> [Output] {
        guard !lost.isEmpty, let mediaSSRC = track.ssrc ?? ssrc else { return [] }
        counters.nacksSent += 1
        return sendRTCP([.genericNACK(RTCPGenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: mediaSSRC, lostSequenceNumbers: lost))], to: publisher)
    }

    /// Forwards one packet, parsed once here: the header and payload view serve the
    /// statistics, keyframe detection and taps; each subscriber's copy is rewritten in place.
    /// A publisher of this router's own (not `mirrored`) is also relayed to the port's other routers.
    private func forward(
        _ packet: [UInt8], parsed: RTPPacket, on track: UpTrack, of key: PublisherKey, mirrored: Bool, now: ContinuousClock.Instant
    ) -> [Output] {
        let (ssrc, sequence, timestamp) = (parsed.header.ssrc, parsed.header.sequenceNumber, parsed.header.timestamp)
        if track.ssrc != ssrc {
            // A new source: what was kept of the old one no longer lines up with its numbers.
            track.keyframe = nil
            track.newestSequence = nil
            if track.ssrc != nil { track.nacks = NackGenerator() }
        }
        track.ssrc = ssrc
        track.history.store(sequenceNumber: sequence, packet: packet)
        var outputs: [Output] = []
        if !mirrored {
            counters.rtpReceived += 1
            track.reception.record(sequenceNumber: sequence, timestamp: timestamp, bytes: packet.count, arrival: now)
            if relaying {
                if let packetRelay {
                    packetRelay(.packet(key, track.kind, packet, arrival: now))
                } else {
                    outputs.append(.relay(.packet(key, track.kind, packet, arrival: now), to: .mirrors))
                }
            }
            if !exported.isEmpty, exported.contains(key) { outputs.append(.relay(.packet(key, track.kind, packet, arrival: now), to: .nodes)) }
        }
        // Most rooms have no task: skip hashing the key for every packet then.
        if !taps.isEmpty, let tapIDs = taps[key], tapsHere(key) {
            for tap in tapIDs { outputs.append(.tapped(tap, publisher: key, codec: track.codec, packet: parsed)) }
        }
        var keyframe = false
        if let codec = track.videoCodec {
            if VideoPayloadFormat.describe(parsed.payload, codec: codec).marksKeyframe {
                track.keyframeRequests.keyframeReceived()
                keyframe = true
                // An H.264 keyframe marks several packets (parameter sets, IDR slices): the first one counts.
                if track.keyframe?.timestamp != timestamp { track.keyframe = (sequence, timestamp) }
            }
            if track.newestSequence.map({ sequence.isNewer(than: $0) }) ?? true { track.newestSequence = sequence }
        }
        if datagramSink == nil { outputs.reserveCapacity(outputs.count + track.subscribers.count) }
        for (subscriber, down) in track.subscribers {
            // A subscriber still being sent the kept keyframe gets live video behind it.
            if track.kind == .video, !subscriber.videoBacklog.isEmpty {
                // A backlog that cannot drain (the publisher sends faster than the replay's pace)
                // is given up: the subscriber waits for the next keyframe instead, which is asked for.
                guard subscriber.videoBacklog.count < Self.maximumBacklogPackets else {
                    subscriber.videoBacklog = []
                    down.awaitingKeyframe = true
                    outputs += requestKeyframe(of: key, now: now)
                    continue
                }
                subscriber.videoBacklog.append((packet, parsed.header))
                continue
            }
            guard subscriber.transport.isConnected,
                let output = send(
                    packet, ssrc: ssrc, sequence: sequence, timestamp: timestamp, on: down, keyframe: keyframe, to: subscriber, arrival: now, now: now)
            else { continue }
            outputs.append(output)
        }
        return outputs
    }

    private static let allocator = ByteBufferAllocator()

    /// The most packets a new subscriber is sent from the kept keyframe on (about 2 s of 1.3 Mbps
    /// video); a longer stretch is not replayed and a keyframe is asked for instead.
    public static let maximumReplayPackets = 320

    /// Sends a subscriber that just connected the publisher's newest keyframe and every video
    /// packet since, from the history, so it can decode at once instead of waiting for a new
    /// keyframe: the first ``replayPacketsPerTurn`` (the keyframe, as a rule) at once, the rest
    /// paced by the timer, live packets queued behind them. Nil (nothing sent) when there is no
    /// keyframe, a packet of the stretch is no longer (or never was) in the history, or the
    /// stretch is too long.
    private func replayKeyframe(of key: PublisherKey, to subscriber: Peer, now: ContinuousClock.Instant) -> [Output]? {
        guard case .subscriber(_, let tracks) = subscriber.role, tracks[.video] != nil,
            let video = upTracks(of: key)?.first(where: { $0.kind == .video }), let (start, _) = video.keyframe,
            let newest = video.newestSequence
        else { return nil }
        let count = Int(newest &- start) + 1
        guard count <= min(Self.maximumReplayPackets, video.history.capacity) else { return nil }
        var packets: [(packet: [UInt8], header: RTPHeader)] = []
        packets.reserveCapacity(count)
        for offset in 0..<count {
            guard let stored = video.history.packet(sequenceNumber: start &+ UInt16(offset)),
                let header = try? RTPPacket.parse(ByteBuffer(bytes: stored)).header
            else { return nil }
            packets.append((stored, header))
        }
        counters.keyframesReplayed += 1
        subscriber.videoBacklog = packets
        return sendBacklog(of: subscriber, now: now)
    }

    /// The most video packets a new subscriber's backlog (the replay and the live packets queued
    /// behind it) holds.
    public static let maximumBacklogPackets = 2 * maximumReplayPackets

    /// The shortest time between two sender reports of one track that are passed on (publishers
    /// send one every second or so).
    public static let senderReportInterval = Duration.milliseconds(100)

    /// The most sequence numbers of one NACK a subscriber is resent (duplicates counted once).
    public static let maximumResentPerNACK = 128

    /// Packets of a replay sent at once, and then each timer turn (20 ms), so a new
    /// subscriber's receive buffer and the loop's other work are not flooded.
    public static let replayPacketsPerTurn = 64

    /// Sends the next packets of a subscriber's video backlog.
    private func sendBacklog(of subscriber: Peer, now: ContinuousClock.Instant) -> [Output] {
        let batch = subscriber.videoBacklog.prefix(Self.replayPacketsPerTurn)
        subscriber.videoBacklog.removeFirst(batch.count)
        return batch.compactMap { queued in
            send(
                queued.packet, ssrc: queued.header.ssrc, sequence: queued.header.sequenceNumber, timestamp: queued.header.timestamp, kind: .video,
                keyframe: false, to: subscriber, now: now)
        }
    }

    /// ``send(_:ssrc:sequence:timestamp:on:keyframe:to:now:)`` on the subscriber's down track of `kind`.
    private func send(
        _ packet: [UInt8], ssrc: UInt32, sequence: UInt16, timestamp: UInt32, kind: MediaKind, keyframe: Bool = false, to subscriber: Peer,
        now: ContinuousClock.Instant
    ) -> Output? {
        guard case .subscriber(_, let tracks) = subscriber.role, let down = tracks[kind] else { return nil }
        return send(packet, ssrc: ssrc, sequence: sequence, timestamp: timestamp, on: down, keyframe: keyframe, to: subscriber, arrival: nil, now: now)
    }

    /// Rewrites (in place, in a copy of the bytes) and encrypts one packet for one subscriber:
    /// into the ``datagramSink`` when there is one (nil returned), or as a `.send` output.
    private func send(
        _ packet: [UInt8], ssrc: UInt32, sequence: UInt16, timestamp: UInt32, on down: DownTrack, keyframe: Bool, to subscriber: Peer,
        arrival: ContinuousClock.Instant?, now: ContinuousClock.Instant
    ) -> Output? {
        guard !down.paused, let address = subscriber.transport.remoteAddress else { return nil }
        if down.awaitingKeyframe {
            guard keyframe else { return nil }
            // The stream goes on one after the last packet sent before the pause.
            down.awaitingKeyframe = false
            down.rewriter.sourceChanged()
        }
        let (outSequence, outTimestamp) = down.rewriter.rewrite(ssrc: ssrc, sequence: sequence, timestamp: timestamp, now: now)
        var source = packet
        if let id = down.seiExtensionID, packet[0] & 0x10 != 0 {
            RTPHeaderExtension.renumber(SEIHeaderExtension.defaultID, to: id, inPacket: &source)
        }
        // One copy, into the datagram's own storage: the header is rewritten and the packet
        // encrypted there, in place.
        let transport = subscriber.transport
        func write(into bytes: UnsafeMutableRawBufferPointer) -> Int? {
            source.withUnsafeBytes { bytes.copyMemory(from: $0) }
            bytes[1] = (bytes[1] & 0x80) | down.payloadType
            bytes.storeBytes(of: outSequence.bigEndian, toByteOffset: 2, as: UInt16.self)
            bytes.storeBytes(of: outTimestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
            bytes.storeBytes(of: down.ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
            return transport.protectRTP(bytes, length: source.count)
        }
        let capacity = source.count + SRTPSession.maximumTrailerLength
        var output: Output?
        var length: Int?
        if address.transport == .udp, let datagramSink {
            length = datagramSink.write(to: address, capacity: capacity, arrival: arrival, write)
        } else {
            var out = Self.allocator.buffer(capacity: capacity)
            out.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { bytes in
                write(into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<capacity])) ?? 0
            }
            if out.readableBytes > 0 {
                length = out.readableBytes
                output = .send(out, to: address)
            }
        }
        guard let length else { return nil }
        counters.rtpForwarded += 1
        counters.bytesForwarded += length
        return output
    }

    /// RTCP from a peer: subscribers' NACK and PLI/FIR, publishers' sender reports.
    private func feedback(_ packet: [UInt8], from peer: Peer, now: ContinuousClock.Instant) -> [Output] {
        guard let packets = try? RTCPPacket.parseCompound(ByteBuffer(bytes: packet)) else {
            countDropped(.malformedRTCP)
            return []
        }
        var outputs: [Output] = []
        switch peer.role {
        case .subscriber(let key, let tracks):
            guard let upTracks = upTracks(of: key) else { return [] }
            let publisher = publishers[key].flatMap { peers[$0] }
            for rtcp in packets {
                switch rtcp {
                case .genericNACK(let nack):
                    guard let (kind, down) = tracks.first(where: { $0.value.ssrc == nack.mediaSSRC }),
                        let up = upTracks.first(where: { $0.kind == kind }), let upSSRC = up.ssrc
                    else { continue }
                    var missing: [UInt16] = []
                    var asked: Set<UInt16> = []
                    for lost in nack.lostSequenceNumbers where asked.count < Self.maximumResentPerNACK && asked.insert(lost).inserted {
                        guard let source = down.rewriter.sourceSequence(for: lost) else { continue }
                        guard let stored = up.history.packet(sequenceNumber: source), let header = try? RTPPacket.parse(ByteBuffer(bytes: stored)).header
                        else {
                            missing.append(source)
                            continue
                        }
                        // Sent into the port's batch (no output) or as an output: counted either way.
                        let forwarded = counters.rtpForwarded
                        if let output = send(stored, ssrc: header.ssrc, sequence: header.sequenceNumber, timestamp: header.timestamp, kind: kind, to: peer, now: now) {
                            outputs.append(output)
                        }
                        if counters.rtpForwarded > forwarded { counters.retransmitted += 1 }
                    }
                    if !missing.isEmpty, let publisher {
                        counters.nacksForwarded += 1
                        outputs += sendRTCP([.genericNACK(RTCPGenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: upSSRC, lostSequenceNumbers: missing))], to: publisher)
                    } else if !missing.isEmpty, let mirror = mirrors[key] {
                        outputs.append(.relay(.nack(key, kind, missing), to: .shard(mirror.origin)))
                    }
                case .pictureLossIndication(let pli):
                    if tracks[.video]?.ssrc == pli.mediaSSRC { outputs += requestKeyframe(of: key, now: now) }
                case .fullIntraRequest:
                    outputs += requestKeyframe(of: key, now: now)
                default:
                    break
                }
            }
        case .publisher(let key, let upTracks):
            // Each subscriber gets the publisher's sender reports in its own SSRC and timestamps.
            for case .senderReport(let report) in packets {
                // One a track per ``senderReportInterval`` is passed on: a flood of them (70 fit in
                // one packet) would become as many packets to every subscriber and loop.
                guard let up = upTracks.first(where: { $0.ssrc == report.ssrc }),
                    up.lastSenderReport.map({ now - $0 >= Self.senderReportInterval }) ?? true
                else { continue }
                up.lastSenderReport = now
                up.reception.receivedSenderReport(report, at: now)
                outputs += forwardSenderReport(report, on: up)
                if relaying { outputs.append(.relay(.senderReport(key, report), to: .mirrors)) }
                if exported.contains(key) { outputs.append(.relay(.senderReport(key, report), to: .nodes)) }
            }
        }
        return outputs
    }

    /// Each subscriber of `up` gets the publisher's sender report in its own SSRC and timestamps.
    private func forwardSenderReport(_ report: RTCPSenderReport, on up: UpTrack) -> [Output] {
        var outputs: [Output] = []
        for (subscriber, down) in up.subscribers {
            guard let rtpTimestamp = down.rewriter.outputTimestamp(for: report.rtpTimestamp) else { continue }
            var rewritten = report
            rewritten.ssrc = down.ssrc
            rewritten.rtpTimestamp = rtpTimestamp
            rewritten.reportBlocks = []
            outputs += sendRTCP([.senderReport(rewritten)], to: subscriber)
        }
        return outputs
    }

    private func requestKeyframe(of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        if let mirror = mirrors[key] {
            // The origin's limiter holds back the requests of every router.
            return [.relay(.keyframeRequest(key), to: .shard(mirror.origin))]
        }
        if let local = localPublishers[key] {
            guard let video = local.first(where: { $0.kind == .video }), video.keyframeRequests.request(now: now) else { return [] }
            return [.localKeyframeRequest(key)]
        }
        guard let publisher = publishers[key].flatMap({ peers[$0] }), case .publisher(_, let tracks) = publisher.role,
            let video = tracks.first(where: { $0.kind == .video }), video.keyframeRequests.request(now: now)
        else { return [] }
        return sendPLI(to: publisher, track: video)
    }

    private func sendPLI(to publisher: Peer, track: UpTrack) -> [Output] {
        guard let ssrc = track.ssrc else { return [] }
        counters.keyframeRequests += 1
        return sendRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: feedbackSSRC, mediaSSRC: ssrc))], to: publisher)
    }

    private func sendRTCP(_ packets: [RTCPPacket], to peer: Peer) -> [Output] {
        peer.transport.protectRTCP(packets).map { [.send($0.datagram, to: $0.to)] } ?? []
    }

    // MARK: Peers

    private func parse(_ text: String) throws(NegotiationError) -> SessionDescription {
        do {
            return try SessionDescription.parse(text)
        } catch {
            throw NegotiationError("the offer is not valid SDP: \(error.message)")
        }
    }

    private func localDescription(answering remote: TransportDescription) -> TransportDescription {
        let credentials = localCredentials()
        return TransportDescription(
            iceUfrag: credentials.ufrag, icePwd: credentials.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate),
            setup: remote.setup == .passive ? .active : .passive, candidates: candidates, iceLite: true)
    }

    private func makeTransport(local: TransportDescription, remote: TransportDescription, now: ContinuousClock.Instant) throws(NegotiationError) -> PeerTransport {
        let agent = ICELiteAgent(
            local: ICECredentials(ufrag: local.iceUfrag, pwd: local.icePwd), remoteUfrag: remote.iceUfrag, now: now, consentTimeout: consentTimeout)
        return try PeerTransport(
            ice: .lite(agent), certificate: certificate, localDescription: local, remoteDescription: remote, connectDeadline: now + connectTimeout)
    }

    private func add(_ template: Peer, local: TransportDescription) -> Peer {
        let peer = Peer(id: nextPeer, owner: template.owner, transport: template.transport, role: template.role, answer: template.answer)
        nextPeer += 1
        peers[peer.id] = peer
        demux.register(ufrag: local.iceUfrag, peer: peer.id)
        return peer
    }

    private func remove(_ id: PeerID, reason: String) -> [Output] {
        guard let peer = peers.removeValue(forKey: id) else { return [] }
        var outputs: [Output] = []
        let released = demux.unregister(id)
        if relaying, !released.isEmpty { outputs.append(.released(released)) }
        switch peer.role {
        case .publisher(let key, _):
            // Subscribers of this publisher keep their connections; they simply get no media
            // until the user publishes again.
            if publishers[key] == id {
                publishers[key] = nil
                if relaying { outputs.append(.relay(.ended(key), to: .mirrors)) }
                if exported.contains(key) { outputs.append(.relay(.ended(key), to: .nodes)) }
            }
        case .subscriber(let key, _):
            for track in upTracks(of: key) ?? [] { track.subscribers.removeAll { $0.peer.id == id } }
        }
        for case .send(let bytes, let to) in peer.transport.close(reason: reason) {
            outputs.append(.send(bytes, to: to))
        }
        return outputs
    }
}
