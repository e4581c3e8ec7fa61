import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomRTP

@Suite struct OutboundRTPStreamTests {
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
}
