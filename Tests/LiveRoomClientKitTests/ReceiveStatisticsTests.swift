import LiveRoomCore
import LiveRoomWire
import Testing

@testable import LiveRoomClientKit

@Suite struct ReceiveStatisticsTests {
    let t0 = ContinuousClock.now

    @Test func lossAndFractionLost() {
        var stats = ReceiveStatistics(clockRate: 90_000)
        for seq: UInt16 in [65530, 65531, 65533, 65534, 0, 1, 3] {
            stats.record(sequenceNumber: seq, timestamp: 0, bytes: 100, arrival: t0)
        }
        #expect(stats.expected == 10)
        #expect(stats.cumulativeLost == 3)
        let block = stats.reportBlock(ssrc: 9, now: t0)
        #expect(block.cumulativeLost == 3)
        #expect(block.fractionLost == UInt8(3 * 256 / 10))
        #expect(block.extendedHighestSequenceNumber == 0x1_0003)
        // The next interval has no loss.
        stats.record(sequenceNumber: 4, timestamp: 0, bytes: 100, arrival: t0)
        #expect(stats.reportBlock(ssrc: 9, now: t0).fractionLost == 0)
    }

    @Test func jitterFollowsAppendixA8() {
        var stats = ReceiveStatistics(clockRate: 90_000)
        // Frames 3000 ticks (33.3 ms) apart arriving alternately 10 ms early and late.
        for i in 0..<200 {
            let offset = i % 2 == 0 ? Duration.milliseconds(10) : .zero
            stats.record(sequenceNumber: UInt16(i), timestamp: UInt32(i * 3000), bytes: 1, arrival: t0 + .nanoseconds(Int64(i) * 33_333_333) + offset)
        }
        // |D| = 10 ms = 900 ticks each time, so J converges to 900.
        #expect(abs(Int(stats.jitter) - 900) < 20)
        #expect(abs(stats.jitterMilliseconds - 10) < 0.3)
    }

    @Test func senderReportGivesCaptureTimeAndLSR() {
        var stats = ReceiveStatistics(clockRate: 90_000)
        let wall = NTPTime(unixSeconds: 1_000_000)
        stats.receivedSenderReport(RTCPSenderReport(ssrc: 1, ntpTimestamp: wall.value, rtpTimestamp: 90_000, packetCount: 0, octetCount: 0), at: t0)
        #expect(stats.senderTime(ofRTPTimestamp: 135_000) == 1_000_000.5)
        #expect(stats.senderTime(ofRTPTimestamp: 45_000) == 999_999.5)
        stats.record(sequenceNumber: 1, timestamp: 0, bytes: 1, arrival: t0)
        let block = stats.reportBlock(ssrc: 1, now: t0 + .milliseconds(500))
        #expect(block.lastSenderReport == wall.compact)
        #expect(block.delaySinceLastSenderReport == 32_768)
    }

    @Test func roundTripTimeFromReportBlock() throws {
        let sent = NTPTime(unixSeconds: 2_000_000)
        let block = RTCPReportBlock(
            ssrc: 1, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0, jitter: 0,
            lastSenderReport: sent.compact, delaySinceLastSenderReport: 65_536 / 10)
        let rtt = try #require(ReceiveStatistics.roundTripTime(of: block, arrival: NTPTime(unixSeconds: 2_000_000.15)))
        #expect(abs(rtt.inMilliseconds - 50) < 1)
        var none = block
        none.lastSenderReport = 0
        #expect(ReceiveStatistics.roundTripTime(of: none, arrival: sent) == nil)
    }

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

    @Test func recordingTimelineAlignsStreams() {
        var timeline = RecordingTimeline()
        #expect(timeline.pts(kind: .audio, timestamp: 5000, arrival: t0) == 0)
        #expect(timeline.pts(kind: .video, timestamp: 0xFFFF_FFF0, arrival: t0 + .milliseconds(100)) == 9000)
        #expect(timeline.pts(kind: .video, timestamp: 0xFFFF_FFF0 &+ 3000, arrival: t0 + .milliseconds(133)) == 12_000)
        #expect(timeline.pts(kind: .audio, timestamp: 5960, arrival: t0 + .milliseconds(20)) == 960)
        #expect(timeline.pts(kind: .audio, timestamp: 5000, arrival: t0 + .milliseconds(21)) == nil, "late audio is dropped")
        // A new subscription with new bases continues after what was written.
        timeline.restart()
        #expect(timeline.pts(kind: .video, timestamp: 77, arrival: t0 + .milliseconds(110)) == 12_001)
    }
}
