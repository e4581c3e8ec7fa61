import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomSFU

/// The feedback chain's responders that `forwardsRewritesRetransmitsAndRequestsKeyframes` does
/// not reach: FIR, REMB, and a compound packet whose parts go to different responders.
extension SFURouterTests {
    func rtcp(_ packets: [RTCPPacket], from client: FakeClient, _ network: Network, at time: ContinuousClock.Instant) throws {
        network.send(from: client, [.send(try #require(client.transport.protectRTCP(packets)).datagram, to: client.address)], now: time)
    }

    /// A router with a connected publisher that has sent a keyframe, and a subscriber (owner 2) connected to it.
    func publisherWithASubscriber(subscriberPort: UInt16) throws -> (SFURouter, Network, publisher: FakeClient, subscriber: FakeClient) {
        let router = SFURouter(certificate: try DTLSCertificate(), host: "127.0.0.1", port: 7882)
        var (network, publisher) = try connectedPublisher(router)
        var keyframe = vp8(seq: 10, ts: 3000, keyframe: true)
        network.send(from: publisher, [.send(try #require(publisher.transport.protectRTP(&keyframe)), to: publisher.address)], now: now)
        let subscriber = try subscribe(router, &network, owner: 2, port: subscriberPort)
        return (router, network, publisher, subscriber)
    }

    func received(_ client: FakeClient) -> [RTCPPacket] {
        Array(client.rtcp.compactMap { try? RTCPPacket.parseCompound(ByteBuffer(bytes: $0)) }.joined())
    }

    @Test func aFIRAsksThePublisherForAKeyframeAndOneHeldBackGoesOnTheTimer() throws {
        let (router, network, publisher, subscriber) = try publisherWithASubscriber(subscriberPort: 40_201)
        func plis() -> Int { received(publisher).filter { if case .pictureLossIndication(let p) = $0 { p.mediaSSRC == 2222 } else { false } }.count }
        let before = plis()
        let fir = RTCPPacket.fullIntraRequest(RTCPFullIntraRequest(senderSSRC: 5, entries: [.init(ssrc: 1, sequenceNumber: 1)]))
        try rtcp([fir], from: subscriber, network, at: now + .seconds(3))
        #expect(plis() == before + 1, "the FIR became a PLI")
        try rtcp([fir], from: subscriber, network, at: now + .seconds(3) + .milliseconds(10))
        #expect(plis() == before + 1, "too soon: held back")
        network.deliver(router: router.handleTimers(now: now + .seconds(5)), now: now + .seconds(5))
        #expect(plis() == before + 2, "sent on the timer once the limit allows")
    }

    @Test func aSubscribersREMBIsKeptAsItsDownlinkAndNotPassedOn() throws {
        var (router, network, publisher, subscriber) = try publisherWithASubscriber(subscriberPort: 40_202)
        _ = try subscribe(router, &network, owner: 3, port: 40_203)
        #expect(router.downlinkEstimate(of: 2) == nil)
        let remb = RTCPPacket.receiverEstimatedMaximumBitrate(RTCPReceiverEstimatedMaximumBitrate(senderSSRC: 5, bitrate: 1_500_000, ssrcs: [1]))
        // With a receiver report and a PLI in the same compound packet: each part reaches its responder.
        let report = RTCPPacket.receiverReport(RTCPReceiverReport(ssrc: 5, reportBlocks: []))
        let pli = RTCPPacket.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 5, mediaSSRC: try #require(subscriber.tracks.first?.remoteSSRCs.first)))
        let requests = router.counters.keyframeRequests
        try rtcp([report, remb, pli], from: subscriber, network, at: now + .seconds(3))
        #expect(router.downlinkEstimate(of: 2) == 1_500_000)
        #expect(router.downlinkEstimate(of: 3) == nil, "another subscriber's is its own")
        #expect(router.counters.keyframeRequests == requests + 1, "the PLI after the REMB still reached its responder")
        try rtcp([.receiverEstimatedMaximumBitrate(RTCPReceiverEstimatedMaximumBitrate(senderSSRC: 5, bitrate: 300_000, ssrcs: [1]))], from: subscriber, network, at: now + .seconds(4))
        #expect(router.downlinkEstimate(of: 2) == 300_000, "the newest one")
        #expect(!received(publisher).contains { if case .receiverEstimatedMaximumBitrate = $0 { true } else { false } }, "not passed on")
        // A publisher's REMB says nothing of a subscription.
        try rtcp([remb], from: publisher, network, at: now + .seconds(4))
        #expect(router.downlinkEstimate(of: 1) == nil)
    }
}
