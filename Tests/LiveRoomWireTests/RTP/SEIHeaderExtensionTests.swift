import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("SEI in an RTP header extension (VP8)")
struct SEIHeaderExtensionTests {
    /// `count` bytes that differ from one position to the next, so a misplaced chunk shows.
    static func unit(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
    }

    /// A chunk as the extension carries it, written out by hand: total, offset, bytes.
    static func chunk(total: Int, offset: Int, _ bytes: [UInt8]) -> [UInt8] {
        [UInt8(total >> 8), UInt8(total & 0xFF), UInt8(offset >> 8), UInt8(offset & 0xFF)] + bytes
    }

    @Test(arguments: [1, 240, 241, 1000, SEIHeaderExtension.maxLength])
    func chunksCarryTotalOffsetAndAtMost240BytesAndReassemble(size: Int) throws {
        let unit = Self.unit(size)
        let chunks = SEIHeaderExtension.chunks(of: unit)
        #expect(chunks.count == (size + 239) / 240)
        for (index, chunk) in chunks.enumerated() {
            let offset = index * 240
            #expect(chunk == Self.chunk(total: size, offset: offset, Array(unit[offset..<min(offset + 240, size)])))
            #expect(chunk.count <= 244)
        }
        #expect(SEIHeaderExtension.reassemble(chunks) == unit)
    }

    @Test func limits() {
        #expect(SEIHeaderExtension.chunkSize == 240)
        #expect(SEIHeaderExtension.maxLength == 3840)
        #expect(SEIHeaderExtension.chunks(of: []).isEmpty)
        #expect(SEIHeaderExtension.chunks(of: Self.unit(SEIHeaderExtension.maxLength + 1)).isEmpty)
        #expect(SEIHeaderExtension.chunks(of: Self.unit(SEIHeaderExtension.maxLength)).count == 16)
        // 241 bytes: a whole chunk, then one byte at offset 240 (0x00F0) of 241 (0x00F1).
        #expect(SEIHeaderExtension.chunks(of: Self.unit(241)).last == [0x00, 0xF1, 0x00, 0xF0, Self.unit(241)[240]])
    }

    @Test func chunksReassembleInAnyOrder() {
        var generator = SeededGenerator(seed: 11)
        for size in [241, 1000, 2047, SEIHeaderExtension.maxLength] {
            let unit = Self.unit(size)
            for _ in 0..<10 {
                #expect(SEIHeaderExtension.reassemble(SEIHeaderExtension.chunks(of: unit).shuffled(using: &generator)) == unit)
            }
        }
    }

    @Test func chunksThatDoNotMakeAWholeGiveNil() {
        let unit = Self.unit(1000)
        let chunks = SEIHeaderExtension.chunks(of: unit)
        #expect(SEIHeaderExtension.reassemble([]) == nil)
        // A missing chunk, first, middle or last.
        for missing in chunks.indices {
            var some = chunks
            some.remove(at: missing)
            #expect(SEIHeaderExtension.reassemble(some) == nil)
        }
        // The same offset twice.
        #expect(SEIHeaderExtension.reassemble(chunks + [chunks[2]]) == nil)
        #expect(SEIHeaderExtension.reassemble([chunks[0], chunks[0]] + chunks.dropFirst()) == nil)
        // Totals that disagree.
        var other = chunks
        other[3] = Self.chunk(total: 1001, offset: 720, Array(unit[720..<960]))
        #expect(SEIHeaderExtension.reassemble(other) == nil)
        // A chunk that runs past the total.
        other = chunks
        other[4] = Self.chunk(total: 1000, offset: 960, Array(unit[960..<1000]) + [0])
        #expect(SEIHeaderExtension.reassemble(other) == nil)
        // Headers without bytes, short headers.
        #expect(SEIHeaderExtension.reassemble([Self.chunk(total: 1, offset: 0, [])]) == nil)
        #expect(SEIHeaderExtension.reassemble([[0, 1, 0]]) == nil)
        #expect(SEIHeaderExtension.reassemble([Self.chunk(total: 1, offset: 0, [9]), [0, 1]]) == nil)
        // A total of zero, or over maxLength.
        #expect(SEIHeaderExtension.reassemble([Self.chunk(total: 0, offset: 0, [9])]) == nil)
        let over = SEIHeaderExtension.maxLength + 1
        #expect(SEIHeaderExtension.reassemble(stride(from: 0, to: over, by: 240).map { Self.chunk(total: over, offset: $0, Array(Self.unit(over)[$0..<min($0 + 240, over)])) }) == nil)
        #expect(SEIHeaderExtension.reassemble([Self.chunk(total: 0xFFFF, offset: 0xFFFE, [1])]) == nil)
    }

    /// Overlapping chunks whose lengths add up to the total but leave a gap: 200 bytes claimed
    /// by 0..<100 and 50..<150, where 150..<200 never came; and the inputs FuzzWire crashed on
    /// (6 bytes from 0..<3 and 2..<5, 1..<4 and 3..<6, …).
    @Test(arguments: [
        [Self.chunk(total: 200, offset: 0, Array(Self.unit(200)[0..<100])), Self.chunk(total: 200, offset: 50, Array(Self.unit(200)[50..<150]))],
        [[0, 6, 0, 0, 1, 2, 3], [0, 6, 0, 2, 4, 5, 6]],
        [[0, 6, 0, 1, 3, 0, 2], [0, 6, 0, 3, 0, 5, 6]],
        [[0, 6, 0, 1, 1, 2, 3], [0, 6, 0, 3, 4, 5, 6]],
        [[0, 6, 0, 0, 1, 2, 3], [0, 6, 0, 1, 4, 5, 6]],
    ])
    func overlappingChunksThatLeaveAGapGiveNil(chunks: [[UInt8]]) {
        #expect(SEIHeaderExtension.reassemble(chunks) == nil)
    }

    @Test func chunksRoundTripThroughSerializedRTPPackets() throws {
        let unit = H264SEI.nalUnit([
            TaggedSEIMessage(message: SEIMessage(data: Self.unit(1000)), tag: SEITag(sequence: 5, sentAtMilliseconds: 1_700_000_000_000))
        ])
        for id in [SEIHeaderExtension.defaultID, 200] {
            let chunks = SEIHeaderExtension.chunks(of: unit)
            #expect(chunks.count == 5)
            var received: [[UInt8]] = []
            for (index, chunk) in chunks.enumerated().reversed() {
                let payload = ByteBuffer(bytes: [0x90, 0x80, UInt8(index), 0x10, 0x02])
                let header = RTPHeader(
                    marker: index == chunks.count - 1, payloadType: 96, sequenceNumber: UInt16(100 + index), timestamp: 9000, ssrc: 0xCAFE,
                    headerExtension: SEIHeaderExtension.headerExtension(chunk, id: id))
                let bytes = Array(buffer: try RTPPacket(header: header, payload: payload).serialize())
                // X bit, then the two-byte profile 0x1000, then id and length.
                #expect(bytes[0] & 0x10 != 0)
                #expect(Array(bytes[12..<14]) == [0x10, 0x00])
                #expect(Array(bytes[16..<18]) == [id, UInt8(chunk.count)])
                #expect(bytes.count <= 12 + 4 + 248 + 5)
                let parsed = try RTPPacket.parse(ByteBuffer(bytes: bytes))
                #expect(parsed.header.headerExtension?.profile == 0x1000)
                #expect(parsed.payload.bytes == payload.bytes)
                received.append(try #require(parsed.header.headerExtension?[id: id]))
            }
            let reassembled = try #require(SEIHeaderExtension.reassemble(received))
            #expect(reassembled == unit)
            #expect(H264SEI.messages(inNALUnit: reassembled).map(\.message.data) == [Self.unit(1000)])
        }
    }

    @Test func hostileChunksNeverCrash() {
        let seeds = SEIHeaderExtension.chunks(of: Self.unit(500))
        for input in hostileInputs(seeds: seeds, randomCount: 500, mutationsPerSeed: 100) {
            let bytes = input.bytes
            let split = stride(from: 0, to: bytes.count, by: 7).map { Array(bytes[$0..<min($0 + 7, bytes.count)]) }
            for chunks in [[bytes], split, seeds + [bytes], [bytes] + seeds] {
                if let whole = SEIHeaderExtension.reassemble(chunks) {
                    #expect((1...SEIHeaderExtension.maxLength).contains(whole.count))
                }
            }
        }
    }
}
