import Testing

@testable import LiveRoomRTP

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

    @Test func requestsLetOnePerInterval() {
        let t0 = ContinuousClock.now
        var limiter = KeyframeRequestLimiter(interval: .milliseconds(500))
        let answers = [0, 100, 499, 500].map { limiter.request(now: t0 + .milliseconds($0)) }
        #expect(answers == [true, false, false, true])
    }
}
