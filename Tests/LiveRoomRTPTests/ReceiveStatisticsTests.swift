import LiveRoomWire
import Testing

@testable import LiveRoomRTP

@Suite struct ReceiveStatisticsTests {
    let t0 = ContinuousClock.now

    @Test func lossAndFractionLost() throws {
        var stats = ReceiveStatistics(clockRate: 90_000)
        for seq: UInt16 in [65530, 65531, 65533, 65534, 0, 1, 3] {
            stats.record(sequenceNumber: seq, timestamp: 0, bytes: 100, arrival: t0)
        }
        #expect(stats.expected == 10)
        #expect(stats.cumulativeLost == 3)
        let reported = stats.reportBlock(ssrc: 9, now: t0)
        let block = try #require(reported)
        #expect(block.cumulativeLost == 3)
        #expect(block.fractionLost == UInt8(3 * 256 / 10))
        #expect(block.extendedHighestSequenceNumber == 0x1_0003)
        // The next interval has no loss.
        stats.record(sequenceNumber: 4, timestamp: 0, bytes: 100, arrival: t0)
        let next = stats.reportBlock(ssrc: 9, now: t0)
        #expect(next?.fractionLost == 0)
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

    @Test func senderReportGivesCaptureTimeAndLSR() throws {
        var stats = ReceiveStatistics(clockRate: 90_000)
        let wall = NTPTime(unixSeconds: 1_000_000)
        stats.receivedSenderReport(RTCPSenderReport(ssrc: 1, ntpTimestamp: wall.value, rtpTimestamp: 90_000, packetCount: 0, octetCount: 0), at: t0)
        #expect(stats.senderTime(ofRTPTimestamp: 135_000) == 1_000_000.5)
        #expect(stats.senderTime(ofRTPTimestamp: 45_000) == 999_999.5)
        stats.record(sequenceNumber: 1, timestamp: 0, bytes: 1, arrival: t0)
        let reported = stats.reportBlock(ssrc: 1, now: t0 + .milliseconds(500))
        let block = try #require(reported)
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

    @Test func lossAcrossTheWrapAndDelaySinceLastSenderReport() throws {
        var stats = ReceiveStatistics(clockRate: 90_000)
        let empty = stats.reportBlock(ssrc: 1, now: t0)
        #expect(empty == nil, "nothing received yet")
        for seq: UInt16 in [65_534, 65_535, 1, 2] { stats.record(sequenceNumber: seq, timestamp: 0, bytes: 100, arrival: t0) }  // 0 is lost, across the wrap
        stats.receivedSenderReport(RTCPSenderReport(ssrc: 1, ntpTimestamp: 0x1234_5678 << 16, rtpTimestamp: 0, packetCount: 0, octetCount: 0), at: t0)
        let firstBlock = stats.reportBlock(ssrc: 1, now: t0.advanced(by: .milliseconds(500)))
        let first = try #require(firstBlock)
        #expect(first.cumulativeLost == 1)
        #expect(first.fractionLost == 51, "1 of 5 expected, in 1/256: (1 << 8) / 5")
        #expect(first.extendedHighestSequenceNumber == 65_538)
        #expect(first.lastSenderReport == 0x1234_5678)
        #expect(first.delaySinceLastSenderReport == 32_768, "0.5 s in 1/65536 s")
        stats.record(sequenceNumber: 3, timestamp: 0, bytes: 100, arrival: t0)
        let secondBlock = stats.reportBlock(ssrc: 1, now: t0.advanced(by: .seconds(1)))
        let second = try #require(secondBlock)
        #expect(second.fractionLost == 0, "nothing lost in this interval")
        #expect(second.cumulativeLost == 1)
    }
}
