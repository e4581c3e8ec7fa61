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

    /// A subscriber's video starts from the publisher's kept keyframe, captured 1.5 s before
    /// the first audio yet arriving with it: by the sender reports' capture times the two still
    /// line up (by arrival the video would be 1.5 s late all along).
    @Test func streamsStartWhereTheirFirstPacketWasCaptured() {
        var timeline = RecordingTimeline()
        let wall = 1_800_000_000.0
        #expect(timeline.pts(kind: .video, timestamp: 3_000, arrival: t0, captured: wall) == 0)
        #expect(timeline.pts(kind: .audio, timestamp: 9_600, arrival: t0 + .milliseconds(5), captured: wall + 1.5) == 72_000)
        // A frame captured with that audio gets its time.
        #expect(timeline.pts(kind: .video, timestamp: 3_000 + 135_000, arrival: t0 + .milliseconds(40), captured: wall + 1.5) == 135_000)
        // Without reports a stream starts where it arrived, as before.
        var arrivals = RecordingTimeline()
        #expect(arrivals.pts(kind: .video, timestamp: 3_000, arrival: t0) == 0)
        #expect(arrivals.pts(kind: .audio, timestamp: 9_600, arrival: t0 + .milliseconds(5)) == 240)
    }

    /// A publisher that reconnects (a new SSRC, or its timestamps started over under the same
    /// one) goes on from its arrival: 3 s of media, a 2 s gap, 3 s more make a timeline of 8 s,
    /// not the hours between two random timestamp bases.
    @Test func aReconnectGoesOnFromItsArrivalNotFromItsNewTimestampBase() {
        var timeline = RecordingTimeline()
        #expect(timeline.pts(kind: .video, timestamp: 1_000, arrival: t0) == 0)
        #expect(timeline.pts(kind: .video, timestamp: 1_000 + 270_000, arrival: t0 + .seconds(3)) == 270_000)
        // The same SSRC with a new base far away: taken as a new stream at its arrival.
        #expect(timeline.pts(kind: .video, timestamp: 3_000_000_000, arrival: t0 + .seconds(5)) == 450_000)
        #expect(timeline.pts(kind: .video, timestamp: 3_000_000_000 + 270_000, arrival: t0 + .seconds(8)) == 720_000)
        // A new SSRC (told by restart): the same, for that kind only.
        #expect(timeline.pts(kind: .audio, timestamp: 9, arrival: t0) == 0)
        timeline.restart(.audio)
        #expect(timeline.pts(kind: .audio, timestamp: 123_456, arrival: t0 + .seconds(8)) == 384_000)
        #expect(timeline.pts(kind: .video, timestamp: 3_000_000_000 + 273_000, arrival: t0 + .milliseconds(8033)) == 723_000)
        // Steps within 5 s either way are the same stream's (a pause, reordering).
        #expect(timeline.pts(kind: .video, timestamp: 3_000_000_000 + 273_000 + 360_000, arrival: t0 + .seconds(12)) == 1_083_000)
    }

    /// A keyframe sent over 40 ms: its pts counts from its first packet, not from when it was
    /// whole, so the video is not placed 40 ms late against the audio.
    @Test func aFramesTimeCountsFromItsFirstPacket() {
        var timeline = RecordingTimeline()
        #expect(timeline.pts(kind: .audio, timestamp: 0, arrival: t0) == 0)
        timeline.note(kind: .video, timestamp: 9_000, arrival: t0 + .milliseconds(100))
        timeline.note(kind: .video, timestamp: 9_000, arrival: t0 + .milliseconds(120))
        #expect(timeline.pts(kind: .video, timestamp: 9_000, arrival: t0 + .milliseconds(140)) == 9_000)
        #expect(timeline.pts(kind: .video, timestamp: 15_000, arrival: t0 + .milliseconds(170)) == 15_000)
    }
}
