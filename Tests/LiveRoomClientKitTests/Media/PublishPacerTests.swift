import Testing

@testable import LiveRoomClientKit

@Suite struct PublishPacerTests {
    let t0 = ContinuousClock.now

    @Test func pacerSchedulesVideoAndAudio() {
        var pacer = PublishPacer(fps: 15, start: t0)
        #expect(pacer.due(now: t0) == [.video(index: 0, pts: 0), .audio(index: 0, pts: 0)])
        #expect(pacer.due(now: t0 + .milliseconds(10)).isEmpty)
        #expect(pacer.nextDeadline == t0 + .milliseconds(20))
        let work = pacer.due(now: t0 + .milliseconds(70))
        #expect(work == [.audio(index: 1, pts: 960), .audio(index: 2, pts: 1920), .audio(index: 3, pts: 2880), .video(index: 1, pts: 6000)])
        #expect(PublishPacer.videoPTS(index: 15, fps: 15) == 90_000)
        #expect(PublishPacer.due(start: t0, pts: 45_000, clockRate: 90_000) == t0 + .milliseconds(500))
    }

    @Test func pacerSkipsAheadWhenFarBehind() {
        var pacer = PublishPacer(fps: 10, start: t0, maximumLateness: .milliseconds(200))
        _ = pacer.due(now: t0)
        let work = pacer.due(now: t0 + .seconds(2))
        let video = work.compactMap { if case .video(let i, _) = $0 { i } else { nil } }
        #expect(video == [20], "no burst of 19 stale frames")
        let audio = work.compactMap { if case .audio(let i, _) = $0 { i } else { nil } }
        #expect(audio == [100])
    }
}
