import LiveRoomWire

/// Receivers' bandwidth estimates. A subscriber's REMB (the most its link carries, as its
/// receiver estimates it) is kept on its peer connection, newest first, for the port's
/// statistics and for choosing what it can be sent; it is not passed on to publishers, whose
/// bitrate one subscriber's link must not set for everyone.
struct BitrateResponder: FeedbackResponder {
    func received(_ rtcp: RTCPPacket, from peer: SFURouter.Peer, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        guard case .receiverEstimatedMaximumBitrate(let remb) = rtcp else { return false }
        if case .subscriber = peer.role { peer.downlinkEstimate = remb.bitrate }
        return true
    }
}

extension SFURouter {
    /// The lowest bandwidth estimate (bits per second) the receivers of `owner`'s subscriptions
    /// on this router last sent (REMB); nil when none sent one.
    public func downlinkEstimate(of owner: OwnerID) -> UInt64? {
        peers.values.filter { $0.owner == owner }.compactMap(\.downlinkEstimate).min()
    }
}
