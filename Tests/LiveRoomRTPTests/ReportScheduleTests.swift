import Testing

@testable import LiveRoomRTP

@Suite struct ReportScheduleTests {
    @Test func firstReportAtOnceThenOnePerInterval() {
        let t0 = ContinuousClock.now
        var schedule = ReportSchedule(interval: .seconds(1))
        let answers = [0, 400, 999, 1000, 1500, 2100].map { schedule.due(now: t0 + .milliseconds($0)) }
        #expect(answers == [true, false, false, true, false, true])
    }
}
