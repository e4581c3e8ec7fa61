import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomClientKit

@Suite struct RTPSendingTests {
    let t0 = ContinuousClock.now

    @Test func packetsCarryTimestampsMarkerAndSequence() throws {
        var stream = OutboundRTPStream(ssrc: 42, payloadType: 96, clockRate: 90_000, mediaStart: t0, timestampBase: 0xFFFF_FF00, firstSequenceNumber: 65535)
        let packets = stream.packets(payloads: [ByteBuffer(bytes: [1, 2]), ByteBuffer(bytes: [3])], pts: 0x200, marker: true)
        let parsed = try packets.map { try RTPPacket.parse(ByteBuffer(bytes: $0)) }
        #expect(parsed.map(\.header.sequenceNumber) == [65535, 0])
        #expect(parsed.map(\.header.marker) == [false, true])
        #expect(parsed.allSatisfy { $0.header.timestamp == 0x100 && $0.header.ssrc == 42 && $0.header.payloadType == 96 })
        #expect(stream.packetCount == 2 && stream.octetCount == 3 && stream.frameCount == 1)
    }

    @Test func nackRetransmitsFromHistory() {
        var stream = OutboundRTPStream(ssrc: 1, payloadType: 96, clockRate: 90_000, mediaStart: t0, firstSequenceNumber: 10, historyCapacity: 4)
        var sent: [[UInt8]] = []
        for i in 0..<6 { sent += stream.packets(payloads: [ByteBuffer(bytes: [UInt8(i)])], pts: Int64(i) * 3000, marker: true) }
        // 10 and 11 fell out of a 4-packet history; 12...15 are there.
        let again = stream.retransmissions(of: [10, 12, 15, 99])
        #expect(again == [sent[2], sent[5]])
        #expect(stream.retransmittedPackets == 2)
        #expect(stream.packetCount == 6, "retransmissions are not counted in the SR")
    }

    @Test func historyIsARing() {
        var history = RTPSendHistory(capacity: 512)
        history.store(sequenceNumber: 5, packet: [5])
        history.store(sequenceNumber: 517, packet: [1])
        #expect(history.packet(sequenceNumber: 5) == nil)
        #expect(history.packet(sequenceNumber: 517) == [1])
    }

    @Test func senderReportMapsWallClockToMediaClock() {
        var stream = OutboundRTPStream(ssrc: 7, payloadType: 111, clockRate: 48_000, mediaStart: t0, timestampBase: 1000)
        _ = stream.packets(payloads: [ByteBuffer(bytes: [1, 2, 3, 4])], pts: 0, marker: false)
        let wall = NTPTime(unixSeconds: 1_700_000_000.5)
        let report = stream.senderReport(now: t0 + .milliseconds(1500), wallClock: wall)
        #expect(report.rtpTimestamp == 1000 + 72_000)
        #expect(report.ntpTimestamp == wall.value)
        #expect(report.packetCount == 1 && report.octetCount == 4)
    }

    @Test func ntpTimeRoundTrips() {
        let time = NTPTime(unixSeconds: 1_700_000_000.25)
        #expect(time.value >> 32 == 1_700_000_000 + 2_208_988_800)
        #expect(time.value & 0xFFFF_FFFF == 1 << 30)
        #expect(abs(time.unixSeconds - 1_700_000_000.25) < 1e-6)
    }

    @Test func keyframeThrottleLetsOnePerInterval() {
        var throttle = KeyframeRequestThrottle(interval: .milliseconds(500))
        let answers = [0, 100, 499, 500].map { throttle.shouldForce(now: t0 + .milliseconds($0)) }
        #expect(answers == [true, false, false, true])
    }

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
