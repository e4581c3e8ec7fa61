import Testing

@testable import LiveRoomSFU

@Suite struct SequenceRewriterTests {
    let t0 = ContinuousClock.now

    @Test func sameSourcePassesThroughWithOffset() {
        var r = SequenceRewriter(clockRate: 90_000, initialSequence: 1000, initialTimestamp: 5000)
        let a = r.rewrite(ssrc: 1, sequence: 65_534, timestamp: 100, now: t0)
        #expect(a == (1000, 5001))
        let b = r.rewrite(ssrc: 1, sequence: 65_535, timestamp: 3100, now: t0)
        #expect(b == (1001, 8001))
        // Wraparound of the input and a late (reordered) packet.
        let c = r.rewrite(ssrc: 1, sequence: 1, timestamp: 6100, now: t0)
        #expect(c.sequence == 1003)
        let late = r.rewrite(ssrc: 1, sequence: 0, timestamp: 6100, now: t0)
        #expect(late.sequence == 1002)
        #expect(r.sourceSequence(for: 1002) == 0)
    }

    @Test func newSourceContinuesAfterLastOutput() {
        var r = SequenceRewriter(clockRate: 90_000, initialSequence: 10, initialTimestamp: 0)
        _ = r.rewrite(ssrc: 1, sequence: 500, timestamp: 1_000_000, now: t0)
        let last = r.rewrite(ssrc: 1, sequence: 501, timestamp: 1_006_000, now: t0)
        #expect(last.sequence == 11)
        // The publisher reconnects half a second later with new random bases.
        let switched = r.rewrite(ssrc: 2, sequence: 40_000, timestamp: 7, now: t0.advanced(by: .milliseconds(500)))
        #expect(switched.sequence == 12, "no gap in sequence numbers")
        #expect(switched.timestamp == last.timestamp &+ 45_000, "timestamp advanced by 0.5 s at 90 kHz")
        #expect(r.currentSource == 2)
    }
}

@Suite struct PacketHistoryTests {
    @Test func keepsTheLastPackets() {
        var h = PacketHistory(capacity: 4)
        for s in UInt16(65_533)...UInt16(65_535) { h.store(sequence: s, packet: [UInt8(truncatingIfNeeded: s)]) }
        h.store(sequence: 0, packet: [0])
        h.store(sequence: 1, packet: [1])
        #expect(h.packet(sequence: 1) == [1])
        #expect(h.packet(sequence: 65_535) == [0xFF])
        #expect(h.packet(sequence: 65_533) == nil, "overwritten")
        #expect(h.packet(sequence: 2) == nil, "never stored")
    }
}

@Suite struct KeyframeRequestLimiterTests {
    @Test func oneRequestPerInterval() {
        let t0 = ContinuousClock.now
        var l = KeyframeRequestLimiter(interval: .milliseconds(500))
        func request(_ ms: Int) -> Bool { l.request(now: t0.advanced(by: .milliseconds(ms))) }
        func due(_ ms: Int) -> Bool { l.due(now: t0.advanced(by: .milliseconds(ms))) }
        #expect(request(0))
        #expect(!request(100))
        #expect(!due(400))
        #expect(due(500), "the held-back request goes once allowed")
        #expect(!due(1200), "and only once")
        #expect(!request(900))
        l.keyframeReceived()
        #expect(!due(5000), "a keyframe satisfied it")
    }
}

@Suite struct ReceptionStatisticsTests {
    @Test func lossAndDelaySinceLastSenderReport() throws {
        let t0 = ContinuousClock.now
        var stats = ReceptionStatistics()
        let empty = stats.reportBlock(ssrc: 1, now: t0)
        #expect(empty == nil, "nothing received yet")
        for seq: UInt16 in [65_534, 65_535, 1, 2] { stats.packet(sequence: seq) }  // 0 is lost, across the wrap
        stats.senderReport(compactNTP: 0x1234_5678, now: t0)
        let firstBlock = stats.reportBlock(ssrc: 1, now: t0.advanced(by: .milliseconds(500)))
        let first = try #require(firstBlock)
        #expect(first.cumulativeLost == 1)
        #expect(first.fractionLost == 51, "1 of 5 expected, in 1/256: (1 << 8) / 5")
        #expect(first.extendedHighestSequenceNumber == 65_538)
        #expect(first.lastSenderReport == 0x1234_5678)
        #expect(first.delaySinceLastSenderReport == 32_768, "0.5 s in 1/65536 s")
        stats.packet(sequence: 3)
        let secondBlock = stats.reportBlock(ssrc: 1, now: t0.advanced(by: .seconds(1)))
        let second = try #require(secondBlock)
        #expect(second.fractionLost == 0, "nothing lost in this interval")
        #expect(second.cumulativeLost == 1)
    }
}
