import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Where a tap's packets go; called on the media loop, so it must only hand them on.
typealias TapSink = @Sendable (SFURouter.PublisherKey, RTPCodec, RTPPacket) -> Void

/// What the room hub needs of the media port: negotiate and tear down peer connections,
/// tap publishers for tasks, and publish a task's mix as a local publisher. ``MediaService``
/// is the real one; tests use a fake. Commands run in call order.
protocol MediaPort: Sendable {
    /// Negotiates a publisher's peer connection: the SDP answer and what it sends.
    func publish(owner: UInt64, roomId: String, userId: String, offer: String) -> EventLoopFuture<(answer: String, audio: Bool, video: Bool)>
    /// Negotiates a subscriber's peer connection to a publisher: the SDP answer.
    func subscribe(owner: UInt64, roomId: String, publisherId: String, offer: String) -> EventLoopFuture<String>
    /// Cluster mode: negotiates a subscriber's peer connection to a publisher of another node
    /// (its media port at `home`), served from this node's mirror of it: the SDP answer.
    func subscribeMirrored(owner: UInt64, key: SFURouter.PublisherKey, offer: String, home: TransportAddress) async throws -> String
    /// Restarts ICE on one of `owner`'s peer connections with the client's new credentials
    /// (and, from a whole offer, the DTLS fingerprint it must keep); nil when they are the ones in use.
    func restartICE(
        owner: UInt64, target: SFURouter.ICERestartTarget, remote: ICECredentials, fingerprint: SDPFingerprint?
    ) -> EventLoopFuture<SFURouter.ICERestartAnswer?>
    /// Closes `owner`'s subscription to `publisherId` (of `roomId`, when given).
    func unsubscribe(owner: UInt64, publisherId: String, roomId: String?)
    /// Pauses or resumes the kinds `owners`' subscriptions to `publisher` receive (PK forward modes).
    func setForwarding(owners: [UInt64], publisher: SFURouter.PublisherKey, audio: Bool, video: Bool)
    func stopPublishing(roomId: String, userId: String)
    /// Closes every peer connection of a session.
    func close(owner: UInt64)
    /// Sets the publishers `tap` receives (an empty set removes the tap) and where their packets go.
    func setTap(_ tap: SFURouter.TapID, publishers: Set<SFURouter.PublisherKey>, sink: @escaping TapSink)
    /// Cluster mode: mirrors the publishers of other nodes `tap` receives, from their nodes' media ports.
    func mirror(for tap: SFURouter.TapID, publishers: [SFURouter.PublisherKey: TransportAddress])
    /// A tap asks a publisher for a keyframe.
    func requestKeyframe(for tap: SFURouter.TapID, of publisher: SFURouter.PublisherKey)
    /// Starts a publisher the server feeds itself (a mix published into a room).
    /// `onKeyframeRequest` runs on the media loop when a subscriber needs a keyframe.
    func publishLocal(_ key: SFURouter.PublisherKey, codecs: [RTPCodec], onKeyframeRequest: @escaping @Sendable () -> Void)
    func stopLocal(_ key: SFURouter.PublisherKey)
    /// RTP packets (unprotected) of a local publisher, sent on in order.
    func sendLocal(_ packets: [(packet: [UInt8], kind: MediaKind)], of key: SFURouter.PublisherKey)
    /// The routers' counters and their number of peer connections.
    func statistics() async throws -> MediaStatistics
}

/// What the media port has done, for metrics: its routers' counters in total and by loop.
struct MediaStatistics: Sendable {
    var counters = SFURouter.Counters()
    var peers = 0
    /// Each loop's router's counters.
    var loops: [SFURouter.Counters] = []
    /// Hand-offs between loops dropped because the loop they were for had too many waiting.
    var handoffsDropped = 0
    /// Datagrams not sent because a media socket's send buffer was full.
    var sendDropped = 0
    /// From a live packet's arrival to the sending of each copy, all loops together.
    var fanOutDelays = DelayHistogram()
    /// Cluster mode: the node relay's numbers.
    var relay: NodeRelayStatistics?

    mutating func add(_ loop: SFURouter.Counters, peers: Int) {
        counters.add(loop)
        self.peers += peers
        loops.append(loop)
    }
}
