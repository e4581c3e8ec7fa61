import NIOCore
import Testing

@testable import LiveRoomWire

@Suite struct VP8FrameHeaderTests {
    @Test func parsesAHandWrittenKeyFrameHeader() throws {
        // Key frame, version 0, shown, first partition 100 bytes; 640x480 with scale bits set.
        let tag = UInt32(100) << 5 | 1 << 4
        let bytes: [UInt8] = [UInt8(tag & 0xFF), UInt8((tag >> 8) & 0xFF), UInt8(tag >> 16), 0x9d, 0x01, 0x2a, 0x80, 0x42, 0xe0, 0x01]
        let header = try VP8FrameHeader.parse(ByteBuffer(bytes: bytes))
        #expect(header.isKeyframe && header.showFrame)
        #expect(header.firstPartitionSize == 100)
        #expect(header.width == 640 && header.height == 480)
        #expect(header.horizontalScale == 1 && header.verticalScale == 0)
    }

    @Test func rejectsGarbage() {
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: [UInt8]())) }
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: [0x10, 0x02])) }
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: [0x10, 0x02, 0x00, 0x9d, 0x01])) }  // short key frame
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: [0x10, 0x02, 0x00, 0xde, 0xad, 0xbe, 0x80, 0x02, 0xe0, 0x01])) }
        #expect(throws: WireError.self) { try VP8FrameHeader.parse(ByteBuffer(bytes: [0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, 0x00, 0x00, 0xe0, 0x01])) }  // width 0
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...12, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? VP8FrameHeader.parse(ByteBuffer(bytes: bytes))
        }
    }
}
