import LiveRoomSecureTransport
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import LiveRoomServer

/// The media port's channel handler on an `EmbeddedChannel`: datagrams in, the SFU's replies out.
@Suite struct MediaChannelHandlerTests {
    let now = ContinuousClock.now
    let clientAddress = try! SocketAddress(ipAddress: "127.0.0.1", port: 40_100)

    @Test func datagramsReachTheRouterAndItsRepliesAreWrittenOut() throws {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        let closed = Mutex<[String]>([])
        let handler = MediaChannelHandler(router: router, logger: Logger(label: "media-test")) { _, publisher, _ in
            closed.withLock { $0.append(publisher?.userId ?? "subscriber") }
        }
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }

        // A publisher negotiates, then its ICE check comes in as a datagram: the STUN answer goes back to it.
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let local = TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active)
        let sections = [SDPNegotiation.OfferedSection(kind: .audio, direction: .sendonly, codecs: [(.opus, 111)], localSSRC: 1111)]
        let offer = SDPNegotiation.offer(sections, local: local, sessionID: 1, streamID: "client")
        let answer = try SessionDescription.parse(try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer.serialize(), now: now).answer)
        let remote = try TransportDescription(of: answer)
        let candidate = try #require(remote.candidates.first)
        let server = TransportAddress(address: IPAddress(candidate.address)!, port: candidate.port)
        let client = try PeerTransport(
            ice: .controlling(ICEControllingAgent(local: ice, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddress: server, now: now)),
            certificate: certificate, localDescription: local, remoteDescription: remote)
        let checks = client.start(now: now).compactMap { event -> ByteBuffer? in
            if case .send(let bytes, _) = event { return bytes }
            return nil
        }
        let check = try #require(checks.first)
        #expect(STUNMessage.isProbablySTUN(check))
        try channel.writeInbound(AddressedEnvelope(remoteAddress: clientAddress, data: check))
        let reply = try #require(try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self))
        #expect(reply.remoteAddress == clientAddress)
        #expect(STUNMessage.isProbablySTUN(reply.data))
        let heard = client.receive(reply.data, from: server, now: now)
        #expect(!heard.isEmpty, "the client takes the server's answer")

        // Garbage from anywhere is dropped and counted; nothing goes out.
        let before = router.counters.dropped
        try channel.writeInbound(AddressedEnvelope(remoteAddress: try SocketAddress(ipAddress: "127.0.0.1", port: 40_200), data: ByteBuffer(bytes: [0xFF, 0x00, 0x13, 0x37])))
        #expect(router.counters.dropped == before + 1)
        #expect(try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) == nil)

        // A publisher the router lets go of is reported to the hub.
        handler.emit(router.stopPublishing(roomId: "room", userId: "anchor"))
        #expect(closed.withLock { $0 }.isEmpty, "a stop asked for by the hub is not reported back")
    }
}
