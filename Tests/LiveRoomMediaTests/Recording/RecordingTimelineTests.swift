import LiveRoomMedia
import Testing

@Suite struct RecordingTimelineTests {
    let t0 = ContinuousClock.now

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
