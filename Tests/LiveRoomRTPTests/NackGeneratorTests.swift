import LiveRoomRTP
import Testing

@Suite struct NackGeneratorTests {
    let start = ContinuousClock.now

    @Test func aGapIsAskedForAtOnceThenAgainUntilItArrivesOrTooOften() {
        var nacks = NackGenerator(retryInterval: .milliseconds(100), maximumRequests: 3, maximumAge: .seconds(1))
        #expect(nacks.received(10, now: start).isEmpty)
        #expect(nacks.received(13, now: start) == [11, 12], "the gap before 13")
        #expect(nacks.due(now: start + .milliseconds(50)).isEmpty, "not before the retry interval")
        #expect(nacks.received(12, now: start + .milliseconds(60)).isEmpty, "a late packet is no gap")
        #expect(nacks.due(now: start + .milliseconds(100)) == [11])
        #expect(nacks.due(now: start + .milliseconds(200)) == [11], "the third and last request")
        #expect(nacks.due(now: start + .milliseconds(300)).isEmpty && nacks.missingCount == 0, "given up after three")
    }

    @Test func numbersWrapAndOldGapsAndLongGapsAreLeftAlone() {
        var nacks = NackGenerator(retryInterval: .milliseconds(100), maximumRequests: 10, maximumAge: .milliseconds(250), maximumGap: 5)
        #expect(nacks.received(65_534, now: start).isEmpty)
        #expect(nacks.received(1, now: start) == [65_535, 0], "across the wrap")
        #expect(nacks.received(100, now: start).isEmpty, "a gap of 98 is too long to ask for")
        #expect(nacks.due(now: start + .milliseconds(100)) == [65_535, 0])
        #expect(nacks.due(now: start + .milliseconds(300)).isEmpty && nacks.missingCount == 0, "too old")
    }

    @Test func aHostileStreamTracksABoundedNumberOfGaps() {
        var nacks = NackGenerator(maximumGap: 128)
        var sequence: UInt16 = 0
        var asked = 0
        for _ in 0..<100 {
            sequence &+= 100
            asked += nacks.received(sequence, now: start).count
        }
        #expect(nacks.missingCount == NackGenerator.maximumMissing && asked == NackGenerator.maximumMissing)
    }
}
