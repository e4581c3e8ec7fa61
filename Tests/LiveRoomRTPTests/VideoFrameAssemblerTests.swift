import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomRTP

@Suite struct VideoFrameAssemblerTests {
    let t0 = ContinuousClock.now

    /// A frame of `count` packets from `first`, timestamp `ts`.
    func frame(first: UInt16, count: Int, ts: UInt32, key: Bool = false, at time: ContinuousClock.Instant? = nil) -> [VideoFrameAssembler.Packet] {
        (0..<count).map { i in
            VideoFrameAssembler.Packet(
                sequenceNumber: first &+ UInt16(i), timestamp: ts, marker: i == count - 1, payload: ByteBuffer(bytes: [UInt8(i)]),
                startsFrame: i == 0, marksKeyframe: key && i == 0, arrival: time ?? t0)
        }
    }

    func frames(_ actions: [VideoFrameAssembler.Action]) -> [VideoFrameAssembler.Frame] {
        actions.compactMap { if case .frame(let f) = $0 { f } else { nil } }
    }

    func nacks(_ actions: [VideoFrameAssembler.Action]) -> [UInt16] {
        actions.flatMap { action -> [UInt16] in
            guard case .nack(let sequenceNumbers) = action else { return [] }
            return sequenceNumbers
        }
    }

    @Test func inOrderFramesComeOutFromTheFirstKeyframe() {
        var assembler = VideoFrameAssembler()
        var out: [VideoFrameAssembler.Action] = []
        // A delta frame before any keyframe is dropped.
        for p in frame(first: 10, count: 2, ts: 0) { out += assembler.insert(p, now: t0) }
        for p in frame(first: 12, count: 3, ts: 3000, key: true) { out += assembler.insert(p, now: t0) }
        for p in frame(first: 15, count: 2, ts: 6000) { out += assembler.insert(p, now: t0) }
        let released = frames(out)
        #expect(released.map(\.timestamp) == [3000, 6000])
        #expect(released[0].isKeyframe && !released[1].isKeyframe)
        #expect(released[0].packets.map(\.sequenceNumber) == [12, 13, 14])
        #expect(assembler.counters.framesDropped == 1)
        #expect(nacks(out).isEmpty)
    }

    @Test func reordersAcrossSequenceWrap() {
        var assembler = VideoFrameAssembler()
        var packets = frame(first: 65534, count: 4, ts: 90, key: true)
        packets.swapAt(1, 2)
        var out: [VideoFrameAssembler.Action] = []
        for p in packets { out += assembler.insert(p, now: t0) }
        #expect(frames(out).first?.packets.map(\.sequenceNumber) == [65534, 65535, 0, 1])
    }

    @Test func gapIsNackedOnceAndRetransmissionCompletesTheFrame() {
        var assembler = VideoFrameAssembler()
        let packets = frame(first: 100, count: 5, ts: 0, key: true)
        var out: [VideoFrameAssembler.Action] = []
        out += assembler.insert(packets[0], now: t0)
        out += assembler.insert(packets[3], now: t0)
        #expect(nacks(out) == [101, 102])
        out += assembler.insert(packets[4], now: t0)
        #expect(nacks(out) == [101, 102], "no NACK again")
        #expect(frames(out).isEmpty)
        out += assembler.insert(packets[2], now: t0 + .milliseconds(5))
        out += assembler.insert(packets[1], now: t0 + .milliseconds(8))
        let released = frames(out)
        #expect(released.count == 1)
        #expect(released[0].released - released[0].firstArrival == .milliseconds(8))
        // A duplicate is ignored.
        #expect(assembler.insert(packets[1], now: t0).isEmpty)
    }

    @Test func stillMissingPacketsAreAskedForAgainARoundTripLaterUpToTheLimit() {
        var assembler = VideoFrameAssembler(completionTimeout: .seconds(5), nackRetryInterval: .milliseconds(100), maximumNacksPerPacket: 3)
        let packets = frame(first: 100, count: 4, ts: 0, key: true)
        #expect(nacks(assembler.insert(packets[0], now: t0) + assembler.insert(packets[3], now: t0)) == [101, 102])
        #expect(nacks(assembler.tick(now: t0 + .milliseconds(50))).isEmpty, "not before a round trip")
        // 102 arrived; only 101 is asked for again, twice more at most.
        _ = assembler.insert(packets[2], now: t0 + .milliseconds(60))
        #expect(nacks(assembler.tick(now: t0 + .milliseconds(100))) == [101])
        #expect(nacks(assembler.tick(now: t0 + .milliseconds(150))).isEmpty)
        #expect(nacks(assembler.tick(now: t0 + .milliseconds(200))) == [101])
        #expect(nacks(assembler.tick(now: t0 + .milliseconds(300))).isEmpty, "three NACKs in all")
        #expect(assembler.counters.nackRetries == 2)
        let done = assembler.insert(packets[1], now: t0 + .milliseconds(310))
        #expect(frames(done).count == 1)
        #expect(nacks(assembler.tick(now: t0 + .seconds(1))).isEmpty)
    }

    @Test func laterFramesWaitForAnEarlierIncompleteOne() {
        var assembler = VideoFrameAssembler()
        var out: [VideoFrameAssembler.Action] = []
        let a = frame(first: 0, count: 3, ts: 0, key: true)
        let b = frame(first: 3, count: 2, ts: 3000)
        out += assembler.insert(a[0], now: t0)
        out += assembler.insert(a[2], now: t0)
        for p in b { out += assembler.insert(p, now: t0) }
        #expect(frames(out).isEmpty)
        out += assembler.insert(a[1], now: t0)
        #expect(frames(out).map(\.timestamp) == [0, 3000])
    }

    @Test func incompleteFrameIsGivenUpAfterTimeoutThenWaitsForKeyframe() {
        var assembler = VideoFrameAssembler(completionTimeout: .seconds(1))
        var out: [VideoFrameAssembler.Action] = []
        for p in frame(first: 0, count: 2, ts: 0, key: true) { out += assembler.insert(p, now: t0) }
        #expect(frames(out).count == 1)
        let lost = frame(first: 2, count: 3, ts: 3000)
        out = assembler.insert(lost[0], now: t0)
        for p in frame(first: 5, count: 2, ts: 6000) { out += assembler.insert(p, now: t0) }
        #expect(nacks(out) == [3, 4])
        #expect(assembler.tick(now: t0 + .milliseconds(500)) == [.nack([3, 4])], "asked for again, nothing given up yet")
        out = assembler.tick(now: t0 + .seconds(1))
        #expect(out.contains(.requestKeyframe))
        #expect(frames(out).isEmpty, "a delta frame after a loss is not released")
        #expect(assembler.waitingForKeyframe)
        #expect(assembler.counters.packetsUnrecovered == 2)
        // The keyframe answering the PLI is released.
        out = []
        for p in frame(first: 7, count: 2, ts: 9000, key: true) { out += assembler.insert(p, now: t0 + .seconds(1)) }
        #expect(frames(out).map(\.timestamp) == [9000])
        #expect(!assembler.waitingForKeyframe)
    }

    @Test func keyframeRequestsRepeatWhileWaiting() {
        var assembler = VideoFrameAssembler(keyframeRequestInterval: .seconds(1))
        #expect(assembler.tick(now: t0) == [.requestKeyframe])
        #expect(assembler.tick(now: t0 + .milliseconds(500)).isEmpty)
        #expect(assembler.tick(now: t0 + .seconds(1)) == [.requestKeyframe])
        for p in frame(first: 0, count: 1, ts: 0, key: true) { _ = assembler.insert(p, now: t0) }
        #expect(assembler.tick(now: t0 + .seconds(5)).isEmpty)
    }

    @Test func hugeGapIsNotNacked() {
        var assembler = VideoFrameAssembler(maximumNackGap: 10)
        _ = assembler.insert(frame(first: 0, count: 1, ts: 0, key: true)[0], now: t0)
        let out = assembler.insert(frame(first: 500, count: 1, ts: 100)[0], now: t0)
        #expect(nacks(out).isEmpty)
    }

    @Test func vp8PayloadsDescribeAndReassemble() throws {
        var packetizer = VP8Packetizer(maxPayloadSize: 100)
        let keyframe: [UInt8] = [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A] + Array(repeating: 7, count: 250)
        let payloads = try packetizer.packetize(frame: ByteBuffer(bytes: keyframe))
        #expect(payloads.count == 3)
        let described = payloads.map { VideoPayloadFormat.describe($0, codec: .vp8) }
        #expect(described[0] == (true, true) && described[1] == (false, false))
        var assembler = VideoFrameAssembler()
        var out: [VideoFrameAssembler.Action] = []
        for (i, payload) in payloads.enumerated() {
            out += assembler.insert(
                .init(sequenceNumber: UInt16(i), timestamp: 1, marker: i == payloads.count - 1, payload: payload,
                      startsFrame: described[i].startsFrame, marksKeyframe: described[i].marksKeyframe, arrival: t0), now: t0)
        }
        let released = try #require(frames(out).first)
        #expect(VideoPayloadFormat.bitstream(of: released, codec: .vp8) == keyframe)
    }

    @Test func h264PayloadsDescribeAndReassemble() throws {
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F]
        let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let idr: [UInt8] = [0x65, 0x88] + Array(repeating: 0x11, count: 3000)
        let annexB = [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps + [0, 0, 0, 1] + idr
        let payloads = try H264Packetizer(maxPayloadSize: 1200).packetize(annexB: ByteBuffer(bytes: annexB))
        let described = payloads.map { VideoPayloadFormat.describe($0, codec: .h264) }
        #expect(described.first?.startsFrame == true)
        #expect(described.contains { $0.marksKeyframe })
        #expect(described.last?.startsFrame == false, "a middle FU-A fragment does not start a frame")
        var assembler = VideoFrameAssembler()
        var out: [VideoFrameAssembler.Action] = []
        for (i, payload) in payloads.enumerated() {
            out += assembler.insert(
                .init(sequenceNumber: UInt16(i), timestamp: 1, marker: i == payloads.count - 1, payload: payload,
                      startsFrame: described[i].startsFrame, marksKeyframe: described[i].marksKeyframe, arrival: t0), now: t0)
        }
        let released = try #require(frames(out).first)
        #expect(released.isKeyframe)
        #expect(VideoPayloadFormat.bitstream(of: released, codec: .h264) == annexB)
        // A P slice starting a frame (first_mb_in_slice = 0) starts a frame; a later slice does not.
        #expect(VideoPayloadFormat.describe(ByteBuffer(bytes: [0x41, 0x9A, 0x00]), codec: .h264) == (true, false))
        #expect(VideoPayloadFormat.describe(ByteBuffer(bytes: [0x41, 0x1A, 0x00]), codec: .h264) == (false, false))
    }

    @Test func rtpPacketsOfACodecAreDescribedByTheirPayloadFormat() throws {
        var packetizer = VP8Packetizer(maxPayloadSize: 100)
        let keyframe: [UInt8] = [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A] + Array(repeating: 7, count: 250)
        let payloads = try packetizer.packetize(frame: ByteBuffer(bytes: keyframe))
        var assembler = VideoFrameAssembler()
        var out: [VideoFrameAssembler.Action] = []
        for (i, payload) in payloads.enumerated() {
            let header = RTPHeader(marker: i == payloads.count - 1, payloadType: 96, sequenceNumber: UInt16(i), timestamp: 1, ssrc: 5)
            out += assembler.insert(RTPPacket(header: header, payload: payload), codec: .vp8, now: t0)
        }
        let released = try #require(frames(out).first)
        #expect(released.isKeyframe)
        #expect(VideoPayloadFormat.bitstream(of: released, codec: .vp8) == keyframe)
    }
}
