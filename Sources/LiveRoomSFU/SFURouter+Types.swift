import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// The router's vocabulary: what it asks its port to do (``Output``), what it relays between
/// loops and nodes, its counters and the publishers, tracks and peers it keeps.
extension SFURouter {
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
        case packet(PublisherKey, MediaKind, ForwardedPacket, arrival: ContinuousClock.Instant)
        /// A sender report of the sending router's publisher.
        case senderReport(PublisherKey, RTCPSenderReport)
        /// A mirror's subscribers need a keyframe.
        case keyframeRequest(PublisherKey)
        /// A mirror's subscribers lost these packets (by the publisher's numbers), which the
        /// mirror did not get either.
        case nack(PublisherKey, MediaKind, [UInt16])
    }

    /// Where a mirrored publisher comes from: another router of this media port (by its
    /// shard), or another node's media port (by the index the node relay gave it).
    public enum Origin: Sendable, Hashable {
        case loop(Int)
        case node(Int)

        public var isNode: Bool {
            if case .node = self { true } else { false }
        }
    }

    public enum RelayDestination: Sendable, Hashable {
        /// Every other router of the port (an origin to its mirrors).
        case mirrors
        /// A mirror's origin: a router of the port or another node's media port (the node relay).
        case origin(Origin)
        /// Every node that mirrors the publisher (the node relay; ``setExported(_:_:)``).
        case nodes
    }

    /// How many other nodes' media ports a router may mirror publishers of.
    public static let maximumNodeOrigins = 1024

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
        /// Publishers' sender reports passed on in the server's own mapping instead of theirs: a
        /// publisher's first ones, and all of one whose reports did not match (``SenderReportCheck``).
        public var senderReportsReplaced = 0
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
            senderReportsReplaced += other.senderReportsReplaced
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
        var history = PacketHistory<ForwardedPacket>()
        var keyframeRequests = KeyframeRequestLimiter()
        /// Video of a remote publisher: what did not arrive, asked for again at once.
        var nacks = NackGenerator()
        var reception: ReceiveStatistics
        /// When its packets arrive, which the publisher's sender reports are checked against.
        var capture: CaptureClock
        /// Subscriber peers receiving this track, each with its down track of this kind (held
        /// here so forwarding a packet looks nothing up).
        var subscribers: [(peer: Peer, down: DownTrack)] = []
        /// Video: the first sequence number and the timestamp of the newest keyframe, and the
        /// newest sequence number, so a new subscriber can start from the kept keyframe.
        var keyframe: (start: UInt16, timestamp: UInt32)?
        var newestSequence: UInt16?
        /// When the newest sender report passed on arrived.
        var lastSenderReport: ContinuousClock.Instant?
        /// The newest sender report passed on (in the publisher's SSRC and timestamps), which a
        /// new subscriber is sent with its first packet.
        var passedReport: RTCPSenderReport?

        init(kind: MediaKind, codec: RTPCodec, payloadType: UInt8) {
            self.kind = kind
            self.codec = codec
            self.payloadType = payloadType
            videoCodec = kind == .video ? VideoCodec(rawValue: codec.name) : nil
            reception = ReceiveStatistics(clockRate: codec.clockRate)
            capture = CaptureClock(clockRate: codec.clockRate)
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
        /// Whether the subscriber has been sent a sender report for this track since its
        /// publisher (re)started: it is sent one with its first packet, not a second later.
        var reported = false

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
        var videoBacklog: [ForwardedPacket] = []
        /// A subscriber's newest REMB: what its receiver estimates its link carries, in bits per second.
        var downlinkEstimate: UInt64?
        /// A publisher's: whether its sender reports are believed, and how they are passed on.
        var senderReports = SenderReportCheck()

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
}
