import LiveRoomSFU
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOCore
import NIOEmbedded

/// The media port's packet path as the server runs it, on embedded channels, for the fuzz
/// targets (`FuzzTesting/`) and the tests that replay what they find: two loops, each a
/// ``MediaChannelHandler`` with its own router, joined by ``MediaLoops``; a publisher on the
/// first loop and a subscriber of it on the second, each a real client peer connection that
/// went through ICE, DTLS and SRTP; the node relay with one peer node; and ICE-TCP connections.
///
/// An input is a list of operations (``run(_:)``), each a byte naming it and a byte giving the
/// length of its bytes: a raw datagram, a real ICE check with bytes changed, RTP or RTCP that
/// the clients protect with their SRTP keys (so it reaches the SFU), a node relay datagram
/// sealed with the cluster's key (so it reaches the relay's decoding), a turn of the timers.
/// ``runTCP(_:)`` feeds bytes to a new ICE-TCP connection through its RFC 4571 framing.
public final class MediaPortHarness {
    private final class Client {
        let address: TransportAddress
        let loop: Int
        let transport: PeerTransport
        /// The client's first ICE check, signed with the session's credentials.
        var check: [UInt8] = []
        let ssrc: UInt32

        init(address: TransportAddress, loop: Int, transport: PeerTransport, ssrc: UInt32) {
            self.address = address
            self.loop = loop
            self.transport = transport
            self.ssrc = ssrc
        }
    }

    private let certificate: DTLSCertificate
    private var routers: [SFURouter] = []
    private var handlers: [MediaChannelHandler] = []
    private var channels: [EmbeddedChannel] = []
    private var clients: [Client] = []
    private let relay: NodeMediaRelay
    private var sealer: NodeRelaySealer
    private let secretKey = "fuzz-cluster-secret-key"
    private let serverAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)
    private let strangerAddress = TransportAddress(address: IPAddress("127.0.0.9")!, port: 40_999)
    private let nodeAddress = TransportAddress(address: IPAddress("127.0.0.2")!, port: 7882)
    private var tcpPort: UInt16 = 50_000
    private var lastKeepalive = ContinuousClock.now
    private let key = SFURouter.PublisherKey(roomId: "room", userId: "anchor")

    /// Sets up the loops and connects the two sessions.
    public init() throws {
        certificate = try DTLSCertificate()
        relay = NodeMediaRelay(secretKey: secretKey)
        relay.setPeers([nodeAddress])
        sealer = NodeRelaySealer(secret: NodeRelayDatagram.secret(fromSecretKey: secretKey))
        try build()
    }

    /// Operations, by the low three bits of their byte: `0` a raw datagram, `1` a real check with
    /// bytes changed, `2` RTP from the publisher, `3` RTCP from a client (or a NACK made of the
    /// bytes), `4` a sealed node relay datagram, `5`–`7` the timers. Bit 3 picks the loop, bits
    /// 4–5 the source (or client; for RTP bit 4 keeps the negotiated payload type and SSRC).
    public func run(_ input: [UInt8]) {
        if routers.contains(where: { $0.peerCount == 0 }) || clients.contains(where: { !$0.transport.isConnected }) {
            try? build()
        }
        // The clients keep their sessions' consent (RFC 7675) as real ones do, once a second.
        if ContinuousClock.now - lastKeepalive >= .seconds(1) {
            lastKeepalive = .now
            for client in clients {
                for case .send(let bytes, _) in client.transport.handleTimers(now: .now) { deliver(Array(buffer: bytes), from: client.address, to: client.loop) }
            }
        }
        var index = 0
        while index + 1 < input.count {
            let (operation, length) = (input[index], Int(input[index + 1]))
            let bytes = Array(input[(index + 2)..<min(input.count, index + 2 + length)])
            index += 2 + length
            let loop = Int(operation >> 3) & 1
            switch operation & 7 {
            case 0:
                let source = [clients[0].address, clients[1].address, strangerAddress, nodeAddress][Int(operation >> 4) & 3]
                deliver(bytes, from: source, to: loop)
            case 1:
                let client = clients[Int(operation >> 4) & 1]
                var check = client.check
                for pair in stride(from: 0, to: bytes.count - 1, by: 2) where !check.isEmpty {
                    check[Int(bytes[pair]) % check.count] ^= bytes[pair + 1]
                }
                deliver(check, from: client.address, to: loop)
            case 2:
                var packet = bytes + [UInt8](repeating: 0, count: max(0, 12 - bytes.count))
                if operation & 0x10 != 0 {
                    // Keep the version, the payload type and the SSRC the session negotiated.
                    packet[0] = 0x80 | (packet[0] & 0x3F)
                    packet[1] = (packet[1] & 0x80) | 96
                    withUnsafeBytes(of: clients[0].ssrc.bigEndian) { packet.replaceSubrange(8..<12, with: $0) }
                }
                if let protected = clients[0].transport.protectRTP(&packet) {
                    deliver(Array(buffer: protected), from: clients[0].address, to: loop)
                }
            case 3:
                let client = clients[Int(operation >> 4) & 1]
                let packets: [RTCPPacket]
                if let parsed = try? RTCPPacket.parseCompound(ByteBuffer(bytes: bytes)), !parsed.isEmpty {
                    packets = parsed
                } else {
                    let lost = stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
                    packets = [.genericNACK(RTCPGenericNACK(senderSSRC: client.ssrc, mediaSSRC: bytes.first.map(UInt32.init) ?? 0, lostSequenceNumbers: lost))]
                }
                if let (datagram, _) = client.transport.protectRTCP(packets) {
                    deliver(Array(buffer: datagram), from: client.address, to: loop)
                }
            case 4:
                if let datagram = try? sealer.seal(body: bytes) { deliver(datagram, from: nodeAddress, to: loop) }
            default:
                for handler in handlers { handler.runTimers() }
            }
            pump()
        }
        pump()
    }

    /// Feeds `stream` to a new ICE-TCP connection on the first loop, through its framing.
    public func runTCP(_ stream: [UInt8]) {
        tcpPort = tcpPort == 60_000 ? 50_000 : tcpPort + 1
        let channel = EmbeddedChannel(loop: channels[0].embeddedEventLoop)
        defer { _ = try? channel.finish() }
        guard (try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: Int(tcpPort))).wait()) != nil,
            let address = handlers[0].acceptTCP(channel)
        else { return }
        do {
            try channel.pipeline.syncOperations.addHandlers([
                ByteToMessageHandler(ICETCPFraming.Decoder()), ICETCPConnectionHandler(media: handlers[0], address: address),
            ])
            try channel.writeInbound(ByteBuffer(bytes: stream))
        } catch {
            // A frame the framing refuses closes the connection: what the fuzz target wants to reach.
        }
        pump()
        _ = try? channel.close().wait()
    }

    /// Everything the routers count, all loops together.
    public var counters: SFURouter.Counters {
        var total = SFURouter.Counters()
        for router in routers { total.add(router.counters) }
        return total
    }

    // MARK: Setting up

    private func build() throws {
        // The old loops and handlers hold each other (as in the server, for its whole life): let go.
        for handler in handlers { handler.loops = nil }
        for channel in channels { _ = try? channel.finish() }
        routers = (0..<2).map { SFURouter(certificate: certificate, hosts: ["127.0.0.1"], port: 7882, shard: $0, shards: 2) }
        handlers = routers.map { MediaChannelHandler(router: $0, logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })) { _, _, _ in } }
        channels = handlers.map { EmbeddedChannel(handler: $0, loop: EmbeddedEventLoop()) }
        let shared = MediaLoops(members: zip(channels, handlers).map { channel, handler in
            MediaLoops.Member(eventLoop: channel.embeddedEventLoop, handler: NIOLoopBound(handler, eventLoop: channel.embeddedEventLoop))
        })
        for handler in handlers {
            handler.loops = shared
            handler.nodeRelay = relay
        }
        clients = []
        let now = ContinuousClock.now
        let publisher = try client(port: 40_001, loop: 0, sections: [
            SDPNegotiation.OfferedSection(kind: .audio, direction: .sendonly, codecs: [(.opus, 111)], localSSRC: 1111),
            SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 2222),
        ]) { offer in try self.routers[0].publish(owner: 1, roomId: self.key.roomId, userId: self.key.userId, offer: offer, now: now).answer }
        handlers[0].emit(routers[0].announce(key))
        pump()
        let subscriber = try client(port: 40_002, loop: 1, sections: [
            SDPNegotiation.OfferedSection(kind: .audio, direction: .recvonly, codecs: [(.opus, 111)], localSSRC: 3333),
            SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.vp8, 96)], localSSRC: 4444),
        ]) { offer in try self.routers[1].subscribe(owner: 2, roomId: self.key.roomId, publisherId: self.key.userId, offer: offer, now: now) }
        clients = [publisher, subscriber]
        for client in clients {
            for case .send(let bytes, _) in client.transport.start(now: .now) {
                if client.check.isEmpty { client.check = Array(buffer: bytes) }
                deliver(Array(buffer: bytes), from: client.address, to: client.loop)
            }
        }
        pump()
        // The node mirrors the publisher: its packets are exported to the node's address.
        if let mirror = try? sealer.seal(.mirror(key)) { deliver(mirror, from: nodeAddress, to: 0) }
        pump()
    }

    private func client(
        port: UInt16, loop: Int, sections: [SDPNegotiation.OfferedSection], negotiate: (String) throws -> String
    ) throws -> Client {
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let local = TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active)
        let offer = SDPNegotiation.offer(sections, local: local, sessionID: 1, streamID: "fuzz\(port)")
        let remote = try TransportDescription(of: try SessionDescription.parse(try negotiate(offer.serialize())))
        let transport = try PeerTransport(
            ice: .controlling(ICEControllingAgent(local: ice, remote: ICECredentials(ufrag: remote.iceUfrag, pwd: remote.icePwd), remoteAddress: serverAddress, now: .now)),
            certificate: certificate, localDescription: local, remoteDescription: remote)
        return Client(address: TransportAddress(address: IPAddress("127.0.0.1")!, port: port), loop: loop, transport: transport, ssrc: sections.last?.localSSRC ?? 1)
    }

    // MARK: Moving packets

    private func deliver(_ bytes: [UInt8], from source: TransportAddress, to loop: Int) {
        guard let remote = source.socketAddress else { return }
        _ = try? channels[loop].writeInbound(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: bytes)))
    }

    /// Runs what the loops handed each other and carries what they wrote to the clients, and the
    /// clients' answers back, until nothing moves (at most 64 rounds).
    private func pump() {
        for _ in 0..<64 {
            var moved = false
            for channel in channels { channel.embeddedEventLoop.run() }
            for channel in channels {
                while let envelope = try? channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
                    moved = true
                    guard let to = TransportAddress(envelope.remoteAddress), let client = clients.first(where: { $0.address == to }) else { continue }
                    for case .send(let bytes, _) in client.transport.receive(envelope.data, from: serverAddress, now: .now) {
                        deliver(Array(buffer: bytes), from: client.address, to: client.loop)
                    }
                }
            }
            if !moved { return }
        }
    }
}
