import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomRTP

/// The SEI a frame carries, read from its packets' header extensions (VP8) as a receiver does.
@Suite struct VideoPayloadFormatSEITests {
    @Test func chunksFromEveryElementOfEveryPacketMakeTheMessages() throws {
        let messages = [TaggedSEIMessage(message: SEIMessage(data: Array(repeating: 0x41, count: 400)), tag: SEITag(sequence: 9, sentAtMilliseconds: 1))]
        let unit = H264SEI.nalUnit(messages)
        let chunks = SEIHeaderExtension.chunks(of: unit)
        #expect(chunks.count == 2)
        let id = SEIHeaderExtension.defaultID
        let now = ContinuousClock.now
        // Both chunks on the first packet, as a small frame carries them; the second packet has none.
        let packets = [
            VideoFrameAssembler.Packet(
                sequenceNumber: 1, timestamp: 90, marker: false, payload: ByteBuffer(bytes: [0x90, 0x80, 0x00, 0x01, 0x02]), startsFrame: true,
                marksKeyframe: false, arrival: now, headerExtension: .twoByte(appBits: 0, chunks.map { .init(id: id, data: $0) })),
            VideoFrameAssembler.Packet(
                sequenceNumber: 2, timestamp: 90, marker: true, payload: ByteBuffer(bytes: [0x80, 0x80, 0x00, 0x03]), startsFrame: false,
                marksKeyframe: false, arrival: now),
        ]
        let frame = VideoFrameAssembler.Frame(timestamp: 90, packets: packets, isKeyframe: false, firstArrival: now, released: now)
        #expect(VideoPayloadFormat.sei(of: frame, bitstream: [], codec: .vp8, extensionID: id) == messages)
        #expect(VideoPayloadFormat.sei(of: frame, bitstream: [], codec: .vp8, extensionID: 13).isEmpty, "another id carries nothing")
        #expect(VideoPayloadFormat.sei(of: frame, bitstream: [], codec: .vp8, extensionID: nil).isEmpty, "no negotiated id, no SEI")
    }
}
