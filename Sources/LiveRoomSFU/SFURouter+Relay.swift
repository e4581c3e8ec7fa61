import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Publishers that are not peer connections here: local ones (publish tasks), mirrors of
/// publishers on another loop or node (the relay), and taps.
extension SFURouter {
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
    func attachSubscribers(of key: PublisherKey, to tracks: [UpTrack]) {
        for subscriber in peers.values {
            guard case .subscriber(key, let down) = subscriber.role else { continue }
            for track in tracks {
                if let downTrack = down[track.kind], track.codec.canBeReceived(as: downTrack.codec) {
                    downTrack.reported = false
                    track.subscribers.append((subscriber, downTrack))
                }
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
    public func storedPackets(of key: PublisherKey, kind: MediaKind, sequences: [UInt16]) -> (packets: [ForwardedPacket], missing: [UInt16]) {
        guard mirrors[key] == nil, let track = upTracks(of: key)?.first(where: { $0.kind == kind }) else { return ([], []) }
        var packets: [ForwardedPacket] = []
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
    public func receiveRelay(_ relay: Relay, from origin: Origin, now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        receiveRelay(relay, from: origin, now: now, into: &outputs)
        return outputs
    }

    /// ``receiveRelay(_:from:now:)``, its outputs appended to `outputs`.
    public func receiveRelay(_ relay: Relay, from origin: Origin, now: ContinuousClock.Instant, into outputs: inout [Output]) {
        switch relay {
        case .packet(let key, let kind, let packet, let arrival):
            receiveMirrored(packet, kind: kind, of: key, from: origin, arrival: arrival, now: now, into: &outputs)
        case .published(let key, let codecs):
            mirror(key, codecs: codecs, from: origin)
        case .ended(let key):
            if mirrors[key]?.origin == origin { mirrors[key] = nil }
        case .senderReport, .keyframeRequest, .nack:
            relayedFeedback(relay, from: origin, now: now, into: &outputs)
        }
    }

    /// A packet of a publisher mirrored from `origin`, already parsed there: to this router's
    /// subscribers and taps.
    private func receiveMirrored(
        _ packet: ForwardedPacket, kind: MediaKind, of key: PublisherKey, from origin: Origin, arrival: ContinuousClock.Instant, now: ContinuousClock.Instant,
        into outputs: inout [Output]
    ) {
        guard let mirror = mirrors[key], mirror.origin == origin, let track = mirror.tracks.first(where: { $0.kind == kind }) else { return }
        if origin.isNode {
            // Another node's packets cross a network: what did not arrive is asked for again.
            counters.rtpReceived += 1
            if track.videoCodec != nil, track.ssrc == nil || track.ssrc == packet.header.ssrc {
                let lost = track.nacks.received(packet.header.sequenceNumber, now: now)
                if !lost.isEmpty { outputs.append(.relay(.nack(key, kind, lost), to: .origin(origin))) }
            }
        }
        // Forwarded as of when it reached the server, so its copies' delay counts the hand-off.
        forward(packet, on: track, of: key, mirrored: true, now: arrival, into: &outputs)
    }

    /// A publisher that started on router `origin`: mirrored here, unless this router has its own.
    private func mirror(_ key: PublisherKey, codecs: [RTPCodec], from origin: Origin) {
        // A publisher of this router's own is the newer one.
        guard publishers[key] == nil, localPublishers[key] == nil else { return }
        // Another node's answer repeated (a loop may have taken it already): the mirror stays, with its history.
        if origin.isNode, let mirror = mirrors[key], mirror.origin == origin, mirror.tracks.map(\.codec) == codecs { return }
        let tracks = codecs.map { UpTrack(kind: $0.kind, codec: $0, payloadType: 0) }
        mirrors[key] = (origin, tracks)
        attachSubscribers(of: key, to: tracks)
    }

    /// One RTP packet (unprotected) of a local publisher's `kind` track, to its subscribers and taps.
    public func sendLocal(_ packet: [UInt8], kind: MediaKind, of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        guard let track = localPublishers[key]?.first(where: { $0.kind == kind }), let packet = ForwardedPacket(packet) else { return [] }
        var outputs: [Output] = []
        forward(packet, on: track, of: key, mirrored: false, now: now, into: &outputs)
        return outputs
    }

    /// The tracks of a publisher: remote, local, or mirrored from another router.
    func upTracks(of key: PublisherKey) -> [UpTrack]? {
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
    func tapsHere(_ key: PublisherKey) -> Bool {
        guard let mirror = mirrors[key] else { return true }
        return mirror.origin.isNode && shard == 0
    }

    /// A tap asks a publisher for a keyframe (rate-limited like subscribers' requests). Every
    /// router of the port is asked; the publisher's own asks the publisher.
    public func requestKeyframe(for tap: TapID, of key: PublisherKey, now: ContinuousClock.Instant) -> [Output] {
        guard taps[key]?.contains(tap) == true, tapsHere(key) else { return [] }
        return requestKeyframe(of: key, now: now)
    }
}
