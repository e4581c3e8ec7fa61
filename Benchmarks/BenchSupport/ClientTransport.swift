import Foundation
import LiveRoomAuth
import LiveRoomProtocol
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore

/// Who the bench's clients are to the server: its app id and key (for UserSigs), and the
/// payload types they offer (Chrome's, as `liveroom join` offers them).
public struct BenchIdentity: Sendable {
    public static let opusPayloadType: UInt8 = 111
    public static let vp8PayloadType: UInt8 = 96

    public let sdkAppId: UInt64
    public let secretKey: String
    /// The DTLS certificate every client of the bench uses.
    public let certificate: DTLSCertificate

    public init(sdkAppId: UInt64, secretKey: String, certificate: DTLSCertificate) {
        self.sdkAppId = sdkAppId
        self.secretKey = secretKey
        self.certificate = certificate
    }

    /// `enterRoom` for `userId` with a fresh UserSig.
    public func enterParams(userId: String, role: Role, room: String) -> EnterRoomParams {
        let now = Int64(Date().timeIntervalSince1970)
        let sig = UserSig.make(sdkAppId: sdkAppId, secretKey: secretKey, identifier: userId, time: now, expire: 86_400)
        return EnterRoomParams(sdkAppId: sdkAppId, userId: userId, userSig: sig.encoded(), strRoomId: room, role: role)
    }

    /// Our side of a peer connection's transport description: DTLS active.
    public func localDescription(_ ice: ICECredentials) -> TransportDescription {
        TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active)
    }

    /// A recvonly offer for Opus and VP8, as an audience member sends with `subscribe`.
    public func subscribeOffer(streamID: String, ice: ICECredentials) -> (sections: [SDPNegotiation.OfferedSection], local: TransportDescription, sdp: String) {
        let local = localDescription(ice)
        let sections: [SDPNegotiation.OfferedSection] = [
            .init(kind: .audio, direction: .recvonly, codecs: [(.opus, Self.opusPayloadType)]),
            .init(kind: .video, direction: .recvonly, codecs: [(.vp8, Self.vp8PayloadType)]),
        ]
        let offer = SDPNegotiation.offer(sections, local: local, sessionID: UInt64.random(in: 1...UInt64(Int64.max)), streamID: streamID)
        return (sections, local, offer.serialize())
    }
}

extension MediaLoop {
    /// Publishes `media` as anchor `userId` of `room` from this loop (into its state's
    /// `publisher`): binds a socket, enters, publishes, connects ICE and DTLS (within
    /// `timeout`), then starts pacing. The session keeps the publisher in the room until closed.
    public func startPublisher(
        signalingURL: String, identity: BenchIdentity, userId: String, room: String, media: PreencodedMedia, logger: Logger,
        timeout: Duration = .seconds(15)
    ) async throws -> SignalingSession {
        let channel = try await bindSocket { state, datagram, source in
            state.publisher?.receive(datagram, from: source, now: .now)
        }
        let ice = ICECredentials.random()
        let local = identity.localDescription(ice)
        let sections: [SDPNegotiation.OfferedSection] = [
            .init(kind: .audio, direction: .sendonly, codecs: [(.opus, BenchIdentity.opusPayloadType)], localSSRC: UInt32.random(in: 1...UInt32.max)),
            .init(kind: .video, direction: .sendonly, codecs: [(.vp8, BenchIdentity.vp8PayloadType)], localSSRC: UInt32.random(in: 1...UInt32.max)),
        ]
        let offer = SDPNegotiation.offer(sections, local: local, sessionID: UInt64.random(in: 1...UInt64(Int64.max)), streamID: userId)
        let signaling: SignalingSession
        do {
            signaling = try await SignalingSession.open(
                url: signalingURL, enter: identity.enterParams(userId: userId, role: .anchor, room: room), request: .publish(sdp: offer.serialize()),
                logger: logger)
        } catch {
            try? await channel.close()
            throw error
        }
        do {
            let certificate = identity.certificate
            try await run { state in
                let (transport, tracks) = try makeClientTransport(
                    answer: signaling.answer, offered: sections, local: local, ice: ice, certificate: certificate, transport: .udp, now: .now)
                let publisher = BenchPublisher(channel: channel, transport: transport, tracks: tracks, media: media)
                state.publisher = publisher
                publisher.start(now: .now)
            }
            let deadline = ContinuousClock.now + timeout
            while !(try await run { $0.publisher?.transport.isConnected ?? false }) {
                guard ContinuousClock.now < deadline else { throw BenchError("the publisher's DTLS did not connect within \(timeout)") }
                try await Task.sleep(for: .milliseconds(20))
            }
            try await run { $0.publisher?.startPacing() }
            return signaling
        } catch {
            try? await run { state in
                state.publisher?.stop()
                state.publisher = nil
            }
            await signaling.close()
            try? await channel.close()
            throw error
        }
    }
}

/// The answer's first candidate of `transport` (for TCP, a passive one).
public func serverCandidate(in answerText: String, transport: TransportProtocol) throws -> TransportAddress {
    let remote = try TransportDescription(of: try SessionDescription.parse(answerText))
    guard let candidate = remote.candidates.first(where: { $0.transport.lowercased() == transport.rawValue }), let ip = IPAddress(candidate.address) else {
        throw BenchError("the answer has no usable \(transport.rawValue) ICE candidate")
    }
    return TransportAddress(address: ip, port: candidate.port, transport: transport)
}

/// The client side of a peer connection from our offer and the server's answer: controlling
/// ICE toward the answer's first candidate of `path`, DTLS active.
public func makeClientTransport(
    answer answerText: String, offered: [SDPNegotiation.OfferedSection], local: TransportDescription, ice: ICECredentials,
    certificate: DTLSCertificate, transport path: TransportProtocol, now: ContinuousClock.Instant
) throws -> (PeerTransport, [NegotiatedTrack]) {
    let answer = try SessionDescription.parse(answerText)
    let remote = try TransportDescription(of: answer)
    let tracks = try SDPNegotiation.tracks(ofAnswer: answer, offered: offered)
    let server = try serverCandidate(in: answerText, transport: path)
    let transport = try PeerTransport(
        ice: .controlling(ICEControllingAgent(local: ice, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddress: server, now: now)),
        certificate: certificate, localDescription: local, remoteDescription: remote)
    return (transport, tracks)
}
