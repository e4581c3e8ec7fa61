import Testing

@testable import LiveRoomProtocol

@Suite struct TokenBucketTests {
    @Test func refillsWithTimeAndCaps() {
        let t0 = ContinuousClock.now
        var bucket = TokenBucket(capacity: 2, ratePerSecond: 1)
        func can(_ cost: Double, after ms: Int) -> Bool {
            bucket.canTake(cost, now: t0.advanced(by: .milliseconds(ms)))
        }
        #expect(can(2, after: 0))
        bucket.take(2, now: t0)
        #expect(!can(1, after: 0))
        #expect(!can(1, after: 999))
        #expect(can(1, after: 1000))
        #expect(!can(2.5, after: 60_000), "never more than capacity")
        // A clock that goes backwards gives nothing.
        #expect(!can(3, after: 0))
    }
}
