import LiveRoomRTP
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomSFU

/// Routers of one port, as the media loops run them: the "kernel" gives each client's datagrams
/// to one router by its address, whichever router owns its peer connection, and what a router
/// hands to another is carried out there in order (as ``MediaLoops`` does between event loops).
final class ShardedNetwork {
    let routers: [SFURouter]
    var clients: [FakeClient] = []
    /// Which router a valid check bound each client address to.
    var owners: [TransportAddress: Int] = [:]
    let serverAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)
    var now: ContinuousClock.Instant
    /// Datagrams to these clients are lost.
    var losing: Set<TransportAddress> = []

    enum Work {
        case toClient(ByteBuffer, TransportAddress)
        case toRouter(Int, ByteBuffer, from: TransportAddress, handedOff: Bool)
        case relay(Int, SFURouter.Relay, from: Int)
    }

    private var queue: [Work] = []

    init(shards: Int, certificate: DTLSCertificate, now: ContinuousClock.Instant) {
        routers = (0..<shards).map { SFURouter(certificate: certificate, hosts: ["127.0.0.1"], port: 7882, shard: $0, shards: shards) }
        self.now = now
    }

    /// The kernel's choice of socket: by the client's port.
    func socket(of client: TransportAddress) -> Int { Int(client.port) % routers.count }

    func client(port: UInt16, on shard: Int, sections: [SDPNegotiation.OfferedSection], negotiate: (SFURouter, String) throws -> String) throws -> FakeClient {
        let client = try FakeClient(port: port, sections: sections, negotiate: { try negotiate(routers[shard], $0) }, now: now)
        clients.append(client)
        send(from: client, client.transport.start(now: now))
        return client
    }

    func send(from client: FakeClient, _ events: [PeerTransport.Event]) {
        for case .send(let bytes, _) in events { queue.append(.toRouter(socket(of: client.address), bytes, from: client.address, handedOff: false)) }
        run()
    }

    func send(from client: FakeClient, rtp packet: [UInt8]) throws {
        var packet = packet
        send(from: client, [.send(try #require(client.transport.protectRTP(&packet)), to: client.address)])
    }

    func send(from client: FakeClient, rtcp packets: [RTCPPacket]) throws {
        send(from: client, [.send(try #require(client.transport.protectRTCP(packets)).datagram, to: client.address)])
    }

    /// Carries out what router `shard` returned.
    func deliver(_ outputs: [SFURouter.Output], of shard: Int) {
        for output in outputs {
            switch output {
            case .send(let bytes, let to):
                queue.append(.toClient(bytes, to))
            case .unrouted(let datagram, let source, let named):
                if let owner = named ?? owners[source], owner != shard {
                    queue.append(.toRouter(owner, datagram, from: source, handedOff: true))
                } else {
                    routers[shard].countDropped(named == nil ? .unknownAddress : .unknownLoop)
                }
            case .bound(let address, _):
                owners[address] = shard
            case .released(let addresses):
                for address in addresses where owners[address] == shard { owners[address] = nil }
            case .relay(let relay, .mirrors):
                for other in routers.indices where other != shard { queue.append(.relay(other, relay, from: shard)) }
            case .relay(let relay, .origin(.loop(let other))):
                queue.append(.relay(other, relay, from: shard))
            case .peerClosed, .tapped, .localKeyframeRequest, .relay(_, .nodes), .relay(_, .origin(.node)):
                break
            }
        }
        run()
    }

    private var running = false

    private func run() {
        guard !running else { return }
        running = true
        defer { running = false }
        var rounds = 0
        while !queue.isEmpty, rounds < 5000 {
            rounds += 1
            switch queue.removeFirst() {
            case .toClient(let bytes, let to):
                guard !losing.contains(to), let client = clients.first(where: { $0.address == to }) else { continue }
                for event in client.transport.receive(bytes, from: serverAddress, now: now) {
                    switch event {
                    case .send(let b, _): queue.append(.toRouter(socket(of: client.address), b, from: client.address, handedOff: false))
                    case .rtp(let p): client.rtp.append(p)
                    case .rtcp(let p): client.rtcp.append(p)
                    default: break
                    }
                }
            case .toRouter(let shard, let bytes, let source, let handedOff):
                running = false
                deliver(routers[shard].receive(bytes, from: source, handedOff: handedOff, now: now), of: shard)
                running = true
            case .relay(let shard, let relay, let origin):
                running = false
                deliver(routers[shard].receiveRelay(relay, from: .loop(origin), now: now), of: shard)
                running = true
            }
        }
    }
}

@Suite struct ShardedRouterTests {
    let now = ContinuousClock.now
    let publishing = [SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 2222)]
    let receiving = [SDPNegotiation.OfferedSection(kind: .video, direction: .recvonly, codecs: [(.vp8, 98)])]

    func vp8(seq: UInt16, ts: UInt32, keyframe: Bool, ssrc: UInt32 = 2222) -> [UInt8] {
        var p: [UInt8] = [0x80, 96, UInt8(seq >> 8), UInt8(seq & 0xFF)]
        for shift in [24, 16, 8, 0] { p.append(UInt8(truncatingIfNeeded: ts >> UInt32(shift))) }
        for shift in [24, 16, 8, 0] { p.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        return p + (keyframe ? [0x10, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A] : [0x10, 0x11, 0x02, 0x00])
    }

    func sequence(_ packet: [UInt8]) -> UInt16 { UInt16(packet[2]) << 8 | UInt16(packet[3]) }

    func rtcp(_ client: FakeClient) -> [RTCPPacket] {
        client.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.flatMap { $0 }
    }

    @Test func subscribersOnEveryRouterGetAPublisherWhoseDatagramsReachAnother() throws {
        let network = ShardedNetwork(shards: 2, certificate: try DTLSCertificate(), now: now)
        let (r0, r1) = (network.routers[0], network.routers[1])
        // The publisher's connection is on router 0, but the kernel gives its datagrams (odd
        // port) to router 1, which hands them over: checks by the ufrag, the rest by the address.
        let publisher = try network.client(port: 40_201, on: 0, sections: publishing) { router, offer in
            try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer, now: now).answer
        }
        #expect(publisher.transport.isConnected)
        #expect(network.owners[publisher.address] == 0)
        network.deliver(r0.announce(SFURouter.PublisherKey(roomId: "room", userId: "anchor")), of: 0)

        // Subscribers on both routers, each reached either way round.
        func subscriber(_ port: UInt16, owner: UInt64, on shard: Int) throws -> FakeClient {
            let client = try network.client(port: port, on: shard, sections: receiving) { router, offer in
                try router.subscribe(owner: owner, roomId: "room", publisherId: "anchor", offer: offer, now: now)
            }
            #expect(client.transport.isConnected)
            return client
        }
        let local = try subscriber(40_202, owner: 2, on: 0)
        let crossed = try subscriber(40_204, owner: 3, on: 1)
        let mirrored = try subscriber(40_203, owner: 4, on: 1)
        #expect(r0.peerCount == 2 && r1.peerCount == 2)

        for (seq, ts, key) in [(100, 3000, true), (101, 6000, false), (102, 9000, false)] as [(UInt16, UInt32, Bool)] {
            try network.send(from: publisher, rtp: vp8(seq: seq, ts: ts, keyframe: key))
        }
        for client in [local, crossed, mirrored] {
            #expect(client.rtp.map { Array($0[12...]) } == [100, 101, 102].map { Array(vp8(seq: $0, ts: 0, keyframe: $0 == 100)[12...]) })
            let numbers = client.rtp.map(sequence)
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "\(numbers)")
        }
        #expect(r0.counters.rtpReceived == 3 && r1.counters.rtpReceived == 0, "a packet is received once, by its publisher's router")
        #expect(r0.counters.rtpForwarded == 3 && r1.counters.rtpForwarded == 6, "each router forwards to its own subscribers")

        // A mirror answers a NACK from what it was relayed, and passes on one for a packet it never got.
        network.losing = [crossed.address]
        try network.send(from: publisher, rtp: vp8(seq: 103, ts: 12000, keyframe: false))
        network.losing = []
        let down = try #require(crossed.tracks.first?.remoteSSRCs.first)
        let lost = try #require(crossed.rtp.last.map(sequence)) &+ 1
        try network.send(from: crossed, rtcp: [.genericNACK(RTCPGenericNACK(senderSSRC: 5, mediaSSRC: down, lostSequenceNumbers: [lost]))])
        #expect(crossed.rtp.count == 4 && crossed.rtp.last.map(sequence) == lost && r1.counters.retransmitted == 1)
        try network.send(from: crossed, rtcp: [.genericNACK(RTCPGenericNACK(senderSSRC: 5, mediaSSRC: down, lostSequenceNumbers: [sequence(crossed.rtp[0]) &- 2]))])
        let nacks = rtcp(publisher).compactMap { if case .genericNACK(let n) = $0 { n } else { nil } }
        #expect(nacks.last?.lostSequenceNumbers == [98] && nacks.last?.mediaSSRC == 2222 && r0.counters.nacksForwarded == 1)

        // A mirror's subscriber asks for a keyframe: the publisher's router asks the publisher.
        network.now = now + .seconds(2)
        let mirroredSSRC = try #require(mirrored.tracks.first?.remoteSSRCs.first)
        try network.send(from: mirrored, rtcp: [.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: mirroredSSRC))])
        #expect(rtcp(publisher).contains { if case .pictureLossIndication = $0 { true } else { false } } && r0.counters.keyframeRequests == 1)
        network.now = now

        // Sender reports reach every router's subscribers in their own SSRC (this first one in
        // the publisher's router's mapping: its wall clock, and the timestamp of packets arriving then).
        r0.wallClock = { 1_800_000_000 }
        try network.send(from: publisher, rtcp: [.senderReport(RTCPSenderReport(ssrc: 2222, ntpTimestamp: 42 << 32, rtpTimestamp: 9000, packetCount: 3, octetCount: 9))])
        let reports = rtcp(mirrored).compactMap { if case .senderReport(let r) = $0 { r } else { nil } }
        #expect(reports.last?.ssrc == mirroredSSRC && reports.last?.ntpTimestamp == NTPTime(unixSeconds: 1_800_000_000).value)

        // The publisher stops: the mirror goes. It publishes again on router 1: router 0's
        // subscriber follows the new mirror, numbered on.
        network.deliver(r0.stopPublishing(roomId: "room", userId: "anchor"), of: 0)
        #expect(throws: NegotiationError.self) { try r1.subscribe(owner: 9, roomId: "room", publisherId: "anchor", offer: "v=0", now: now) }
        let republisher = try network.client(port: 40_205, on: 1, sections: [
            SDPNegotiation.OfferedSection(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 4444)
        ]) { router, offer in try router.publish(owner: 1, roomId: "room", userId: "anchor", offer: offer, now: now).answer }
        network.deliver(r1.announce(SFURouter.PublisherKey(roomId: "room", userId: "anchor")), of: 1)
        let before = try #require(local.rtp.last.map(sequence))
        try network.send(from: republisher, rtp: vp8(seq: 7, ts: 1, keyframe: true, ssrc: 4444))
        #expect(local.rtp.last.map(sequence) == before &+ 1 && mirrored.rtp.count == 5)
    }

    @Test func aDatagramNoRouterOwnsIsDroppedOnceAndNeverHandedBack() throws {
        let network = ShardedNetwork(shards: 2, certificate: try DTLSCertificate(), now: now)
        let (r0, r1) = (network.routers[0], network.routers[1])
        let stranger = TransportAddress(address: IPAddress("127.0.0.1")!, port: 40_300)
        // Media from an address no check bound: router 0 cannot say whose it is.
        network.deliver(r0.receive(ByteBuffer(bytes: vp8(seq: 1, ts: 1, keyframe: false)), from: stranger, now: now), of: 0)
        #expect(r0.counters.dropped == 1 && r1.counters.dropped == 0)
        // A check whose ufrag names router 1 but no connection there: handed over once, dropped there.
        let check = STUNMessage(type: .bindingRequest, transactionID: STUNTransactionID(high: 1, low: 2), attributes: [.username("Bxxxxxxx:client")]).serialize()
        let outputs = r0.receive(check, from: stranger, now: now)
        guard case .unrouted(_, _, let shard) = try #require(outputs.first) else {
            Issue.record("not handed over: \(outputs)")
            return
        }
        #expect(shard == 1)
        network.deliver(outputs, of: 0)
        #expect(r0.counters.dropped == 1 && r1.counters.dropped == 1)
        // A single router keeps the old behaviour: it drops what it cannot route.
        let single = SFURouter(certificate: try DTLSCertificate(), hosts: ["127.0.0.1"], port: 7882)
        #expect(single.receive(check, from: stranger, now: now).isEmpty && single.counters.dropped == 1)
    }

    @Test func aCheckNamingALoopThePortDoesNotHaveIsDroppedNotHandedOver() throws {
        let network = ShardedNetwork(shards: 2, certificate: try DTLSCertificate(), now: now)
        let stranger = TransportAddress(address: IPAddress("127.0.0.1")!, port: 40_301)
        // 'C' names the third router and 'z' the 52nd: this port has two. No USERNAME, or one
        // beginning with a character that names no router at all, names none either.
        for username in ["Cq:x", "zz:x", ":x", "\u{7F}:x"] {
            let check = STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: [.username(username)]).serialize()
            for router in network.routers { #expect(router.receive(check, from: stranger, now: now).isEmpty, "\(username)") }
        }
        let bare = STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: []).serialize()
        for router in network.routers { #expect(router.receive(bare, from: stranger, now: now).isEmpty) }
        #expect(network.routers.allSatisfy { $0.counters.droppedBy == [.unknownLoop: 5] }, "\(network.routers.map(\.counters.droppedBy))")
    }
}
