import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomSFU

/// Two routers standing for two nodes: H publishes, V mirrors it through the node relay's
/// messages (what the media ports seal into datagrams), and the NACKs of V's copy go back.
@Suite struct NodeMirrorRouterTests {
    let key = SFURouter.PublisherKey(roomId: "s:shop1", userId: "anchor")
    let origin = SFURouter.Origin.node(0)

    func vp8(_ seq: UInt16) -> [UInt8] {
        [0x80, 96, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0x0B, 0xB8, 0, 0, 0x22, 0xB8, 0x10, 0x00, 0x9D]
    }

    /// The node relay messages among `outputs`, by destination.
    func relays(_ outputs: [SFURouter.Output]) -> [(SFURouter.Relay, SFURouter.RelayDestination)] {
        outputs.compactMap { if case .relay(let relay, let to) = $0 { (relay, to) } else { nil } }
    }

    @Test func aMirrorOfAnotherNodeAsksForWhatItLostAndTheOriginResendsIt() throws {
        let now = ContinuousClock.now
        let certificate = try DTLSCertificate()
        let home = SFURouter(certificate: certificate, host: "127.0.0.1", port: 7882)
        let viewerNode = SFURouter(certificate: certificate, host: "127.0.0.1", port: 7892)
        home.publishLocal(key, codecs: [.vp8, .opus])
        #expect(home.ownTracks(of: key) == [.vp8, .opus])

        // Not exported: no packet goes to other nodes.
        #expect(relays(home.sendLocal(vp8(1), kind: .video, of: key, now: now)).isEmpty)
        home.setExported(key, true)
        var sent: [ForwardedPacket] = []
        for seq: UInt16 in [2, 3, 4, 5] {
            let out = relays(home.sendLocal(vp8(seq), kind: .video, of: key, now: now))
            #expect(out.count == 1)
            guard case (.packet(key, .video, let packet, _), .nodes)? = out.first else {
                Issue.record("packet \(seq) not relayed to the nodes: \(out)")
                continue
            }
            #expect(Array(buffer: packet.bytes) == vp8(seq) && packet.header.sequenceNumber == seq)
            sent.append(packet)
        }

        // V mirrors it; packet 4 is lost on the way.
        _ = viewerNode.receiveRelay(.published(key, codecs: [.vp8, .opus]), from: origin, now: now)
        #expect(viewerNode.hasTracks(of: key) && viewerNode.ownTracks(of: key) == nil)
        for packet in [sent[0], sent[1]] { #expect(relays(viewerNode.receiveRelay(.packet(key, .video, packet, arrival: now), from: origin, now: now)).isEmpty) }
        let gap = relays(viewerNode.receiveRelay(.packet(key, .video, sent[3], arrival: now), from: origin, now: now))
        guard case (.nack(key, .video, let lost), .origin(let to))? = gap.first else {
            Issue.record("no NACK to the origin: \(gap)")
            return
        }
        #expect(lost == [4] && to == origin)
        // Asked again until it comes.
        let retry = relays(viewerNode.handleTimers(now: now + .milliseconds(200)))
        #expect(retry.contains { if case (.nack(key, .video, [4]), .origin(origin)) = $0 { true } else { false } }, "\(retry)")

        // The same answer again (a loop that took it already) keeps the mirror and its history.
        _ = viewerNode.receiveRelay(.published(key, codecs: [.vp8, .opus]), from: origin, now: now)
        #expect(relays(viewerNode.handleTimers(now: now + .milliseconds(330))).contains { if case (.nack(key, .video, [4]), _) = $0 { true } else { false } })

        // The origin resends it from its history; what it never had is missing.
        let (packets, missing) = home.storedPackets(of: key, kind: .video, sequences: [4, 900])
        #expect(packets.map { Array(buffer: $0.bytes) } == [Array(buffer: sent[2].bytes)] && missing == [900])
        // V's copy takes the resent packet and asks no more.
        _ = viewerNode.receiveRelay(.packet(key, .video, packets[0], arrival: now), from: origin, now: now)
        #expect(relays(viewerNode.handleTimers(now: now + .milliseconds(500))).isEmpty)
        // A mirror never resends for others: only the publisher's own router does.
        #expect(viewerNode.storedPackets(of: key, kind: .video, sequences: [2]).packets.isEmpty)

        // The publisher ends: the nodes are told, and V's mirror goes.
        let ended = relays(home.stopLocal(key))
        #expect(ended.contains { if case (.ended(key), .nodes) = $0 { true } else { false } })
        _ = viewerNode.receiveRelay(.ended(key), from: .node(1), now: now)
        #expect(viewerNode.hasTracks(of: key), "only its origin ends a mirror")
        _ = viewerNode.receiveRelay(.ended(key), from: origin, now: now)
        #expect(!viewerNode.hasTracks(of: key))
    }
}
