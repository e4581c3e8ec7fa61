import NIOCore
import Testing

@testable import LiveRoomTransport

@Suite struct ICETCPFramingTests {
    @Test func framesCarryTheirLengthAndSplitBackWhereverTheStreamBreaks() throws {
        let packets = [ByteBuffer(bytes: [1, 2, 3]), ByteBuffer(bytes: Array(repeating: 9, count: 1500)), ByteBuffer(bytes: [7])]
        var stream = ByteBuffer()
        for packet in packets {
            var framed = ICETCPFraming.frame(packet)
            #expect(framed.readableBytes == packet.readableBytes + 2)
            stream.writeBuffer(&framed)
        }
        // Feed the stream a few bytes at a time, as TCP may deliver it.
        var buffer = ByteBuffer()
        var out: [ByteBuffer] = []
        while stream.readableBytes > 0 {
            var chunk = stream.readSlice(length: min(7, stream.readableBytes))!
            buffer.writeBuffer(&chunk)
            while let packet = try ICETCPFraming.Decoder.nextFrame(from: &buffer) { out.append(packet) }
        }
        #expect(out == packets)
        #expect(buffer.readableBytes == 0)
    }

    @Test func anOversizedOrEmptyFrameIsRefused() throws {
        var oversized = ByteBuffer(bytes: [0x10, 0x01])  // 4097 bytes announced
        #expect(throws: ICETCPFraming.FrameError(length: 4097)) { try ICETCPFraming.Decoder.nextFrame(from: &oversized) }
        var empty = ByteBuffer(bytes: [0, 0, 1])
        #expect(throws: ICETCPFraming.FrameError(length: 0)) { try ICETCPFraming.Decoder.nextFrame(from: &empty) }
        var partial = ByteBuffer(bytes: [0x10])
        #expect(try ICETCPFraming.Decoder.nextFrame(from: &partial) == nil, "a length not yet whole waits for more")
    }
}
