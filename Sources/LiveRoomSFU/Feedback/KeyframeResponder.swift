import LiveRoomRTP
import LiveRoomWire

/// Keyframe requests. A subscriber's PLI (for its video) or FIR, a mirror's request and a tap's
/// become one rate-limited PLI to the publisher (``KeyframeRequestLimiter``): a request that
/// comes too soon after the last is sent when the limit allows, on the timer.
struct KeyframeResponder: FeedbackResponder {
    func received(_ rtcp: RTCPPacket, from peer: SFURouter.Peer, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        switch rtcp {
        case .pictureLossIndication(let pli):
            if case .subscriber(let key, let tracks) = peer.role, tracks[.video]?.ssrc == pli.mediaSSRC { outputs += router.requestKeyframe(of: key, now: now) }
        case .fullIntraRequest:
            if case .subscriber(let key, _) = peer.role { outputs += router.requestKeyframe(of: key, now: now) }
        default:
            return false
        }
        return true
    }

    /// A mirror's subscribers need a keyframe: only a publisher of this router's own is asked,
    /// so a request is never relayed twice.
    func relayed(_ relay: SFURouter.Relay, from origin: SFURouter.Origin, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        guard case .keyframeRequest(let key) = relay else { return false }
        if router.mirrors[key] == nil { outputs += router.requestKeyframe(of: key, now: now) }
        return true
    }

    /// Requests held back by the limit, sent once it allows.
    func timers(of publisher: SFURouter.Peer, tracks: [SFURouter.UpTrack], in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) {
        for track in tracks where track.keyframeRequests.due(now: now) {
            router.sendPLI(to: publisher, track: track, into: &outputs)
        }
    }
}

extension SFURouter {
    /// Asks `key`'s publisher for a keyframe: a mirror asks its origin (whose limiter holds back
    /// the requests of every router), a local publisher is told, a peer is sent a PLI when its
    /// video's limiter allows.
    func requestKeyframe(of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        if let mirror = mirrors[key] { return [.relay(.keyframeRequest(key), to: .origin(mirror.origin))] }
        if let local = localPublishers[key] {
            guard let video = local.first(where: { $0.kind == .video }), video.keyframeRequests.request(now: now) else { return [] }
            return [.localKeyframeRequest(key)]
        }
        guard let (publisher, tracks) = publishingPeer(key), let video = tracks.first(where: { $0.kind == .video }), video.keyframeRequests.request(now: now)
        else { return [] }
        var outputs: [Output] = []
        sendPLI(to: publisher, track: video, into: &outputs)
        return outputs
    }

    func sendPLI(to publisher: Peer, track: UpTrack, into outputs: inout [Output]) {
        guard let ssrc = track.ssrc else { return }
        counters.keyframeRequests += 1
        sendRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: feedbackSSRC, mediaSSRC: ssrc))], to: publisher, into: &outputs)
    }
}
