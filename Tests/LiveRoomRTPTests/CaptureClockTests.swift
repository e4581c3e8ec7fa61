import LiveRoomWire
import Testing

@testable import LiveRoomRTP

@Suite struct CaptureClockTests {
    let t0 = ContinuousClock.now

    /// Video frames 1/30 s apart from timestamp `start`, each arriving 20 ms after its capture
    /// plus `jitter(i)` more.
    func frames(_ clock: inout CaptureClock, start: UInt32, count: Int, from first: Int = 0, jitter: (Int) -> Int = { _ in 0 }) {
        for i in first..<(first + count) {
            let timestamp = start &+ UInt32(i * 3000)
            clock.record(timestamp: timestamp, arrival: t0 + .microseconds(i * 1_000_000 / 30) + .milliseconds(20 + jitter(i)))
        }
    }

    @Test func theLeastDelayGivesTheTimestampArrivingNow() throws {
        var clock = CaptureClock(clockRate: 90_000)
        #expect(clock.timestamp(arrivingAt: t0) == nil)
        // Timestamps that wrap, and jitter of up to 40 ms on all but some frames.
        frames(&clock, start: UInt32.max - 30_000, count: 90) { $0 % 7 == 0 ? 0 : ($0 * 13) % 40 }
        // A packet arriving 3 s after the first frame's capture, as fast as the fastest, was captured 20 ms before.
        let expected = UInt32.max - 30_000 &+ UInt32((3.0 - 0.020) * 90_000)
        let timestamp = try #require(clock.timestamp(arrivingAt: t0 + .seconds(3)))
        #expect(abs(Int32(bitPattern: timestamp &- expected)) <= 2)
    }

    @Test func itForgetsWhatIsTwoWindowsOld() throws {
        var clock = CaptureClock(clockRate: 90_000)
        // One early packet (a burst, or a sender clock that drifted since), then 25 s at 20 ms.
        clock.record(timestamp: 0, arrival: t0 - .milliseconds(200))
        frames(&clock, start: 0, count: 750, from: 1)
        let timestamp = try #require(clock.timestamp(arrivingAt: t0 + .seconds(30)))
        #expect(abs(Int32(bitPattern: timestamp &- UInt32(29.98 * 90_000))) <= 2)
    }
}

@Suite struct SenderReportCheckTests {
    let wall = 1_800_000_000.0

    func report(ssrc: UInt32 = 7, ntp: Double, rtp: UInt32) -> RTCPSenderReport {
        RTCPSenderReport(ssrc: ssrc, ntpTimestamp: NTPTime(unixSeconds: ntp).value, rtpTimestamp: rtp, packetCount: 1, octetCount: 1)
    }

    func seconds(_ ntp: UInt64) -> Double { NTPTime(value: ntp).unixSeconds }

    @Test func aSenderIsBelievedOnceTwoReportsAgreeWithEachOtherAndItsPackets() {
        var check = SenderReportCheck()
        // 30 ms ahead of its packets (capture to arrival), its clock 2 ms behind the server's.
        let first = check.check(report(ntp: wall - 0.002, rtp: 90_000 + 2_700), expected: 90_000, clockRate: 90_000, wallArrival: wall)
        #expect(check.verdict == .unsure)
        #expect(first.rtpTimestamp == 90_000 && seconds(first.ntpTimestamp) == wall, "the server's mapping until then")
        // The audio track's first report: still unsure.
        _ = check.check(report(ssrc: 8, ntp: wall + 0.5, rtp: 48_000 + 960), expected: 48_000, clockRate: 48_000, wallArrival: wall + 0.502)
        #expect(check.verdict == .unsure)
        // A second video report, a second later by both clocks: believed, passed on as it is.
        let second = report(ntp: wall + 0.998, rtp: 180_000 + 2_700)
        #expect(check.check(second, expected: 180_000, clockRate: 90_000, wallArrival: wall + 1) == second)
        #expect(check.verdict == .believed)
        // And so is the audio track's next one.
        let audio = report(ssrc: 8, ntp: wall + 1.5, rtp: 96_000 + 960)
        #expect(check.check(audio, expected: 96_000, clockRate: 48_000, wallArrival: wall + 1.502) == audio)
    }

    @Test func reportsThatDoNotMatchAreNotBelievedForAnyTrack() {
        // GStreamer's webrtcbin: each report's timestamp is ahead of the packets by more; the
        // first is within bounds, the second has twice the media clock's rate.
        var check = SenderReportCheck()
        _ = check.check(report(ntp: wall, rtp: 90_000 + 9_000), expected: 90_000, clockRate: 90_000, wallArrival: wall)
        let video = check.check(report(ntp: wall + 1, rtp: 270_000 + 9_000), expected: 180_000, clockRate: 90_000, wallArrival: wall + 1)
        #expect(check.verdict == .notBelieved)
        #expect(video.rtpTimestamp == 180_000 && seconds(video.ntpTimestamp) == wall + 1)
        // The other track's reports agree with each other and with its packets, but are replaced too: one timeline for both.
        for step in 0..<3 {
            let audio = check.check(
                report(ssrc: 8, ntp: wall + Double(step), rtp: UInt32(48_000 * (step + 1) + 960)), expected: UInt32(48_000 * (step + 1)), clockRate: 48_000,
                wallArrival: wall + Double(step) + 0.001)
            #expect(audio.rtpTimestamp == UInt32(48_000 * (step + 1)))
            #expect(abs(seconds(audio.ntpTimestamp) - (wall + Double(step) + 0.001)) < 1e-5)
        }
        #expect(check.verdict == .notBelieved)
        // Far ahead of its packets at once, or behind them by more than a tenth of a second: not believed either.
        for rtp: UInt32 in [90_000 + 54_000, 90_000 - 18_000] {
            var once = SenderReportCheck()
            _ = once.check(report(ntp: wall, rtp: rtp), expected: 90_000, clockRate: 90_000, wallArrival: wall)
            #expect(once.verdict == .notBelieved)
        }
        // A believed sender whose later report jumps: not believed from then on.
        var jumps = SenderReportCheck()
        _ = jumps.check(report(ntp: wall, rtp: 93_000), expected: 90_000, clockRate: 90_000, wallArrival: wall)
        _ = jumps.check(report(ntp: wall + 1, rtp: 183_000), expected: 180_000, clockRate: 90_000, wallArrival: wall + 1)
        #expect(jumps.verdict == .believed)
        _ = jumps.check(report(ntp: wall + 2, rtp: 273_000 + 27_000), expected: 270_000, clockRate: 90_000, wallArrival: wall + 2)
        #expect(jumps.verdict == .notBelieved)
    }

    @Test func aClockThatIsNotWallTimeIsMovedOntoTheServersClock() {
        var check = SenderReportCheck()
        // An uptime clock: 3 days since 1970. Reports of both tracks move by the same amount, the
        // least difference seen (the fastest report's transit: 5 ms, then 1 ms).
        let uptime = 259_200.0
        _ = check.check(report(ntp: uptime, rtp: 93_000), expected: 90_000, clockRate: 90_000, wallArrival: wall + 0.005)
        let first = check.check(report(ntp: uptime + 1, rtp: 183_000), expected: 180_000, clockRate: 90_000, wallArrival: wall + 1.005)
        #expect(check.verdict == .believed)
        #expect(first.rtpTimestamp == 183_000)
        #expect(abs(seconds(first.ntpTimestamp) - (wall + 1.005)) < 1e-5)
        _ = check.check(report(ssrc: 8, ntp: uptime + 1.5, rtp: 48_960), expected: 48_000, clockRate: 48_000, wallArrival: wall + 1.501)
        let audio = check.check(report(ssrc: 8, ntp: uptime + 2, rtp: 72_960), expected: 72_000, clockRate: 48_000, wallArrival: wall + 2.009)
        #expect(abs(seconds(audio.ntpTimestamp) - (wall + 2.001)) < 1e-5, "the fastest transit stays the measure")
    }
}
