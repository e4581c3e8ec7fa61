import LiveRoomRTP
import LiveRoomTransport
import LiveRoomWire

/// Lost packets. A subscriber's NACK is answered from the publisher's history; what the history
/// no longer holds is asked of the publisher (or of the mirror's origin). Video of a publisher
/// here that did not arrive is asked for at once (``SFURouter/sendNACK(_:to:track:ssrc:into:)``,
/// as packets arrive) and again on the timer until it comes, as is another node's mirrored video.
struct NACKResponder: FeedbackResponder {
    func received(_ rtcp: RTCPPacket, from peer: SFURouter.Peer, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        guard case .genericNACK(let nack) = rtcp else { return false }
        guard case .subscriber(let key, let tracks) = peer.role, let (kind, down) = tracks.first(where: { $0.value.ssrc == nack.mediaSSRC }),
            let up = router.upTracks(of: key)?.first(where: { $0.kind == kind }), up.ssrc != nil
        else { return true }
        var missing: [UInt16] = []
        var asked: Set<UInt16> = []
        for lost in nack.lostSequenceNumbers where asked.count < SFURouter.maximumResentPerNACK && asked.insert(lost).inserted {
            guard let source = down.rewriter.sourceSequence(for: lost) else { continue }
            guard let stored = up.history.packet(sequenceNumber: source) else {
                missing.append(source)
                continue
            }
            // Sent into the port's batch (no output) or as an output: counted either way.
            let forwarded = router.counters.rtpForwarded
            let header = stored.header
            router.resend(stored.bytes, ssrc: header.ssrc, sequence: header.sequenceNumber, timestamp: header.timestamp, kind: kind, to: peer, now: now, into: &outputs)
            if router.counters.rtpForwarded > forwarded { router.counters.retransmitted += 1 }
        }
        guard !missing.isEmpty, !forward(missing, kind: kind, of: key, in: router, into: &outputs), let mirror = router.mirrors[key] else { return true }
        outputs.append(.relay(.nack(key, kind, missing), to: .origin(mirror.origin)))
        return true
    }

    /// A mirror's subscribers lost packets it did not get either: asked of the publisher here.
    func relayed(_ relay: SFURouter.Relay, from origin: SFURouter.Origin, in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) -> Bool {
        guard case .nack(let key, let kind, let lost) = relay else { return false }
        _ = forward(lost, kind: kind, of: key, in: router, into: &outputs)
        return true
    }

    /// Asks the peer publishing `key` on this router for `lost` of its `kind` stream, which no
    /// history here holds; false when no peer here publishes it.
    private func forward(_ lost: [UInt16], kind: MediaKind, of key: SFURouter.PublisherKey, in router: SFURouter, into outputs: inout [SFURouter.Output]) -> Bool {
        guard let (publisher, tracks) = router.publishingPeer(key) else { return false }
        if let ssrc = tracks.first(where: { $0.kind == kind })?.ssrc {
            router.counters.nacksForwarded += 1
            router.sendNACK(lost, ssrc: ssrc, to: publisher, into: &outputs)
        }
        return true
    }

    /// Video still missing from a publisher here, asked for again.
    func timers(of publisher: SFURouter.Peer, tracks: [SFURouter.UpTrack], in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) {
        for track in tracks where track.videoCodec != nil {
            router.sendNACK(track.nacks.due(now: now), to: publisher, track: track, into: &outputs)
        }
    }

    /// Video still missing from another node's mirrored publishers, asked of that node again.
    func timers(in router: SFURouter, now: ContinuousClock.Instant, into outputs: inout [SFURouter.Output]) {
        for (key, mirror) in router.mirrors where mirror.origin.isNode {
            for track in mirror.tracks where track.videoCodec != nil {
                let lost = track.nacks.due(now: now)
                if !lost.isEmpty { outputs.append(.relay(.nack(key, track.kind, lost), to: .origin(mirror.origin))) }
            }
        }
    }
}

extension SFURouter {
    /// A NACK to a publisher for the packets of `track` (its SSRC, or `ssrc` before it is known) that did not arrive.
    func sendNACK(_ lost: [UInt16], to publisher: Peer, track: UpTrack, ssrc: UInt32? = nil, into outputs: inout [Output]) {
        guard !lost.isEmpty, let mediaSSRC = track.ssrc ?? ssrc else { return }
        counters.nacksSent += 1
        sendNACK(lost, ssrc: mediaSSRC, to: publisher, into: &outputs)
    }

    /// The NACK itself: the server asks `publisher` for `lost` of its stream `ssrc`.
    func sendNACK(_ lost: [UInt16], ssrc: UInt32, to publisher: Peer, into outputs: inout [Output]) {
        sendRTCP([.genericNACK(RTCPGenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: ssrc, lostSequenceNumbers: lost))], to: publisher, into: &outputs)
    }
}
