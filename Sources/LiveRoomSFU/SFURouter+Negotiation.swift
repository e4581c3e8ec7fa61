import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// Negotiation: peer connections made, restarted and closed for publishers and subscribers.
extension SFURouter {
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
                let up = upTracks.first(where: { $0.kind == kind }), let codec = codecs.first(where: up.codec.canBeReceived(as:))
            else { return .init(codec: nil) }
            let ssrc = UInt32.random(in: 1...UInt32.max)
            planned[kind] = (ssrc, codec)
            return .init(codec: codec, localSSRC: ssrc, msid: (publisherId, "\(publisherId)-\(kind.rawValue)"))
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

    func connection(of owner: OwnerID, for target: ICERestartTarget) -> Peer? {
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

    // MARK: Peers

    func parse(_ text: String) throws(NegotiationError) -> SessionDescription {
        do {
            return try SessionDescription.parse(text)
        } catch {
            throw NegotiationError("the offer is not valid SDP: \(error.message)")
        }
    }

    func localDescription(answering remote: TransportDescription) -> TransportDescription {
        let credentials = localCredentials()
        return TransportDescription(
            iceUfrag: credentials.ufrag, icePwd: credentials.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate),
            setup: remote.setup == .passive ? .active : .passive, candidates: candidates, iceLite: true)
    }

    func makeTransport(local: TransportDescription, remote: TransportDescription, now: ContinuousClock.Instant) throws(NegotiationError) -> PeerTransport {
        let agent = ICELiteAgent(
            local: ICECredentials(ufrag: local.iceUfrag, pwd: local.icePwd), remoteUfrag: remote.iceUfrag, now: now, consentTimeout: consentTimeout)
        return try PeerTransport(
            ice: .lite(agent), certificate: certificate, localDescription: local, remoteDescription: remote, connectDeadline: now + connectTimeout)
    }

    func add(_ template: Peer, local: TransportDescription) -> Peer {
        let peer = Peer(id: nextPeer, owner: template.owner, transport: template.transport, role: template.role, answer: template.answer)
        nextPeer += 1
        peers[peer.id] = peer
        demux.register(ufrag: local.iceUfrag, peer: peer.id)
        return peer
    }

    func remove(_ id: PeerID, reason: String) -> [Output] {
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
