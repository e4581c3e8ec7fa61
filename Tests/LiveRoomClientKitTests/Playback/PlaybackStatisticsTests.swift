import LiveRoomMedia
import LiveRoomProtocol
import Testing

@testable import LiveRoomClientKit

@Suite struct PlaybackStatisticsTests {
    let t0 = ContinuousClock.now

    @Test func ratesAreOverTheWindowAndCountersOverThePlayback() {
        var statistics = PlaybackStatistics(now: t0)
        // 2 s of 15 fps video at 10 000 bytes a frame and 50 audio packets of 1000 bytes.
        for _ in 0..<30 { statistics.video(bytes: 10_000, decoded: 1, failed: false) }
        for _ in 0..<50 { statistics.audio(bytes: 1_000) }
        let first = statistics.event(now: t0 + .seconds(2))
        #expect(first == [
            "event": "onStatistics", "fps": 15, "videoBitrate": 1200, "audioBitrate": 200, "framesDecoded": 30, "framesDropped": 0,
        ])

        // The next window starts where the first ended: 7 pictures in 3 s, one frame that failed.
        statistics.size = VideoSize(width: 540, height: 960)
        statistics.latencyMilliseconds = 850
        for _ in 0..<7 { statistics.video(bytes: 3_000, decoded: 1, failed: false) }
        statistics.video(bytes: 750, decoded: 0, failed: true)
        let second = statistics.event(now: t0 + .seconds(5))
        #expect(second == [
            "event": "onStatistics", "fps": .number(2.3), "videoBitrate": 58, "audioBitrate": 0, "framesDecoded": 37, "framesDropped": 1,
            "width": 540, "height": 960, "latency": 850,
        ])
        #expect(statistics.framesDecoded == 37)
        #expect(statistics.framesDropped == 1)

        // A decoder that gives two pictures for one frame counts both.
        statistics.video(bytes: 100, decoded: 2, failed: false)
        let third = statistics.event(now: t0 + .seconds(6))
        #expect(third["fps"] == 2 && third["framesDecoded"] == 39 && third["videoBitrate"] == 1)
    }

    @Test func anEmptyOrInstantWindowReportsZeroRates() {
        var statistics = PlaybackStatistics(now: t0)
        let empty = statistics.event(now: t0 + .seconds(2))
        #expect(empty["fps"] == 0 && empty["videoBitrate"] == 0 && empty["audioBitrate"] == 0)
        #expect(empty["width"] == nil && empty["latency"] == nil)
        // The same instant again: no division by zero.
        let instant = statistics.event(now: t0 + .seconds(2))
        #expect(instant["fps"] == 0 && instant["videoBitrate"] == 0)
    }
}
