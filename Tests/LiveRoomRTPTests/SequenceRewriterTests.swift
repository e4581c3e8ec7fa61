import Testing

@testable import LiveRoomRTP

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

    /// A subscriber whose SRTP misses the first packets must still infer roll-over 0: a stream
    /// that started near 65535 and wrapped before its first decrypted packet never decrypts.
    @Test func firstSequenceNumberIsInTheLowerHalfSoALateSRTPReceiverStaysInStep() {
        for _ in 0..<1_000 {
            var r = SequenceRewriter(clockRate: 48_000)
            #expect(r.rewrite(ssrc: 7, sequence: 40_000, timestamp: 0, now: t0).sequence < 0x8000)
        }
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
