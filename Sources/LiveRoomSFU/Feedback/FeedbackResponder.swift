import LiveRoomSecureTransport
import LiveRoomWire
import NIOCore

/// One concern of the router's RTCP, as pion's interceptors are: what the router does with the
/// feedback its peers send, with the same feedback relayed from another loop or node, and on
/// each timer turn. The router hands every RTCP packet and every relayed feedback message down
/// ``SFURouter/feedbackChain``; the first responder that takes it ends its way. Responders keep
/// no state of their own: what they remember (histories, limiters, estimates) lives on the
/// router's tracks and peers, which are confined to its event loop.
protocol FeedbackResponder: Sendable {
    /// `rtcp` from `peer` (a subscriber or a publisher of `router`): true when this responder took it.
    func received(_ rtcp: RTCPPacket, from peer: SFURouter.Peer, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool
    /// Feedback about a publisher relayed from `origin` (another loop or node): true when taken.
    func relayed(_ relay: SFURouter.Relay, from origin: SFURouter.Origin, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool
    /// The timer turn of a connected publisher of `router`: what is due to it.
    func timers(of publisher: SFURouter.Peer, tracks: [SFURouter.UpTrack], in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output])
    /// The timer turn of `router` as a whole (after its peers').
    func timers(in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output])
}

extension FeedbackResponder {
    func received(_ rtcp: RTCPPacket, from peer: SFURouter.Peer, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool { false }
    func relayed(_ relay: SFURouter.Relay, from origin: SFURouter.Origin, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool { false }
    func timers(of publisher: SFURouter.Peer, tracks: [SFURouter.UpTrack], in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) {}
    func timers(in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) {}
}

extension SFURouter {
    /// The responders, in the order a packet meets them: lost packets (NACK), keyframe requests
    /// (PLI/FIR), receivers' bandwidth estimates (REMB), and reports (sender reports passed on,
    /// receiver reports to publishers). What none takes (a subscriber's receiver report, SDES,
    /// BYE) ends there.
    static let feedbackChain: [any FeedbackResponder] = [NACKResponder(), KeyframeResponder(), BitrateResponder(), ReportResponder()]

    /// RTCP from a peer, down the chain packet by packet.
    func feedback(_ packet: [UInt8], from peer: Peer, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        guard let packets = try? RTCPPacket.parseCompound(ByteBuffer(bytes: packet)) else {
            countDropped(.malformedRTCP)
            return
        }
        for rtcp in packets {
            for responder in Self.feedbackChain where responder.received(rtcp, from: peer, in: self, now: now, into: &outputs) { break }
        }
    }

    /// Feedback relayed from `origin`, down the chain.
    func relayedFeedback(_ relay: Relay, from origin: Origin, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        for responder in Self.feedbackChain where responder.relayed(relay, from: origin, in: self, now: now, into: &outputs) { break }
    }

    /// Every responder's timer turn: each connected publisher's, then the router's.
    func feedbackTimers(now: ContinuousClock.Instant, into outputs: inout [Output]) {
        for peer in peers.values {
            guard case .publisher(_, let tracks) = peer.role, peer.transport.isConnected else { continue }
            for responder in Self.feedbackChain { responder.timers(of: peer, tracks: tracks, in: self, now: now, into: &outputs) }
        }
        for responder in Self.feedbackChain { responder.timers(in: self, now: now, into: &outputs) }
    }

    /// The peer publishing `key` on this router, with its tracks.
    func publishingPeer(_ key: PublisherKey) -> (peer: Peer, tracks: [UpTrack])? {
        guard let peer = publishers[key].flatMap({ peers[$0] }), case .publisher(_, let tracks) = peer.role else { return nil }
        return (peer, tracks)
    }

    /// RTCP packets to a peer, protected, as one output.
    func sendRTCP(_ packets: [RTCPPacket], to peer: Peer, into outputs: inout [Output]) {
        if let protected = peer.transport.protectRTCP(packets) { outputs.append(.send(protected.datagram, to: protected.to)) }
    }
}
