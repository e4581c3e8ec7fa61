import LiveRoomProtocol
import LiveRoomWire
import Testing

@testable import LiveRoomClientKit

@Suite struct StatisticsTests {
    let t0 = ContinuousClock.now

    @Test func statisticsEvent() throws {
        var calculator = StatisticsCalculator()
        var remote = StatisticsSnapshot.Remote(userId: "host")
        remote.width = 540
        remote.height = 960
        let first = StatisticsSnapshot(time: t0, local: .init(width: 540, height: 960), remotes: [remote])
        _ = calculator.event(for: first)
        remote.videoFrames = 30
        remote.videoBytes = 250_000
        remote.audioBytes = 12_000
        remote.packetsExpected = 400
        remote.packetsReceived = 396
        remote.packetsMissing = 8
        remote.jitterBufferFrames = 30
        remote.jitterBufferDelayTotal = 60
        remote.point2PointSamples = 30
        remote.point2PointDelayTotal = 1500
        let second = StatisticsSnapshot(
            time: t0 + .seconds(2), local: .init(width: 540, height: 960, videoFrames: 30, videoBytes: 325_000, audioBytes: 12_500),
            remotes: [remote], roundTripTime: 3.4, upLoss: 1.2)
        let event = calculator.event(for: second)
        #expect(event["event"] == "onStatistics")
        #expect(event["rtt"] == 3)
        #expect(event["upLoss"] == 1)
        #expect(event["downLoss"] == 2)
        let local = try #require(event["localStatistics"]?.arrayValue?.first)
        #expect(local["frameRate"] == 15)
        #expect(local["videoBitrate"] == 1300)
        #expect(local["audioBitrate"] == 50)
        #expect(local["streamType"] == "big")
        let user = try #require(event["remoteStatistics"]?.arrayValue?.first)
        #expect(user["userId"] == "host")
        #expect(user["width"] == 540)
        #expect(user["frameRate"] == 15)
        #expect(user["videoBitrate"] == 1000)
        #expect(user["audioBitrate"] == 48)
        #expect(user["finalLoss"] == 1)
        #expect(user["jitterBufferDelay"] == 2)
        #expect(user["point2PointDelay"] == 50)
    }
}
