import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import NIOPosix
import Synchronization

@testable import LiveRoomServer

/// A media port that records what the hub asks of it and answers offers at once.
final class FakeMediaPort: MediaPort {
    /// One call from the hub.
    enum Call: Hashable {
        case publish(owner: UInt64, roomId: String, userId: String)
        case subscribe(owner: UInt64, roomId: String, publisherId: String)
        case unsubscribe(owner: UInt64, publisherId: String)
        case restartICE(owner: UInt64, target: SFURouter.ICERestartTarget)
        case stopPublishing(roomId: String, userId: String)
        case close(owner: UInt64)
        case setTap(SFURouter.TapID, publishers: Set<SFURouter.PublisherKey>)
        case publishLocal(SFURouter.PublisherKey)
        case stopLocal(SFURouter.PublisherKey)
    }

    private let recorded = Mutex<[Call]>([])
    private let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
    /// Offers containing this text are refused, as the SFU refuses a bad SDP.
    static let badOffer = "bad offer"

    var calls: [Call] { recorded.withLock { $0 } }

    private func record(_ call: Call) {
        recorded.withLock { $0.append(call) }
    }

    func mirror(for tap: SFURouter.TapID, publishers: [SFURouter.PublisherKey: TransportAddress]) {}

    func subscribeMirrored(owner: UInt64, key: SFURouter.PublisherKey, offer: String, home: TransportAddress) async throws -> String {
        record(.subscribe(owner: owner, roomId: key.roomId, publisherId: key.userId))
        return "mirrored answer to \(key.userId) from \(home)"
    }

    func publish(owner: UInt64, roomId: String, userId: String, offer: String) -> EventLoopFuture<(answer: String, audio: Bool, video: Bool)> {
        record(.publish(owner: owner, roomId: roomId, userId: userId))
        guard !offer.contains(Self.badOffer) else { return eventLoop.makeFailedFuture(NegotiationError("refused")) }
        return eventLoop.makeSucceededFuture((answer: "answer to \(userId)", audio: true, video: true))
    }

    func subscribe(owner: UInt64, roomId: String, publisherId: String, offer: String) -> EventLoopFuture<String> {
        record(.subscribe(owner: owner, roomId: roomId, publisherId: publisherId))
        return eventLoop.makeSucceededFuture("answer for \(publisherId)")
    }

    func restartICE(
        owner: UInt64, target: SFURouter.ICERestartTarget, remote: ICECredentials, fingerprint: SDPFingerprint?
    ) -> EventLoopFuture<SFURouter.ICERestartAnswer?> {
        record(.restartICE(owner: owner, target: target))
        return eventLoop.makeSucceededFuture(.init(sdp: "restarted answer", local: ICECredentials(ufrag: "new1", pwd: "newpassword0123456789abcd"), candidates: []))
    }

    func unsubscribe(owner: UInt64, publisherId: String, roomId: String?) { record(.unsubscribe(owner: owner, publisherId: publisherId)) }
    func setForwarding(owners: [UInt64], publisher: SFURouter.PublisherKey, audio: Bool, video: Bool) {}
    func stopPublishing(roomId: String, userId: String) { record(.stopPublishing(roomId: roomId, userId: userId)) }
    func close(owner: UInt64) { record(.close(owner: owner)) }
    func setTap(_ tap: SFURouter.TapID, publishers: Set<SFURouter.PublisherKey>, sink: @escaping TapSink) {
        record(.setTap(tap, publishers: publishers))
    }
    func requestKeyframe(for tap: SFURouter.TapID, of publisher: SFURouter.PublisherKey) {}
    func publishLocal(_ key: SFURouter.PublisherKey, codecs: [RTPCodec], onKeyframeRequest: @escaping @Sendable () -> Void) {
        record(.publishLocal(key))
    }
    func stopLocal(_ key: SFURouter.PublisherKey) { record(.stopLocal(key)) }
    func sendLocal(_ packets: [(packet: [UInt8], kind: MediaKind)], of key: SFURouter.PublisherKey) {}
    func statistics() async throws -> MediaStatistics { MediaStatistics() }
}
