import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("RTP (RFC 3550, RFC 8285)")
struct RTPPacketTests {
    // V=2 X=1 CC=0, M=1 PT=96, seq 0x1234, ts 0xDEADBEEF, SSRC 0x01020304,
    // one-byte extension: id1 len1 [0x7F], id2 len3 [1 2 3], id3 len2 [0xAB 0xCD], padding 3.
    static let chromeVideo = hexBytes("""
        90 e0 12 34 de ad be ef 01 02 03 04
        be de 00 03 10 7f 22 01 02 03 31 ab cd 00 00 00
        ca fe ba be
        """)

    // V=2 P=1 X=1 CC=2, two-byte extension profile 0x1000 with id 7 (0 bytes) and id 200 (5 bytes).
    static let twoByteWithPadding = hexBytes("""
        b2 6f ff ff 00 00 00 01 aa bb cc dd
        11 11 11 11 22 22 22 22
        10 00 00 03 07 00 c8 05 01 02 03 04 05 00 00 00
        01 02 03 00 00 03
        """)

    @Test func parsesOneByteExtensions() throws {
        let packet = try RTPPacket.parse(ByteBuffer(bytes: Self.chromeVideo))
        #expect(packet.header.marker)
        #expect(packet.header.payloadType == 96)
        #expect(packet.header.sequenceNumber == 0x1234)
        #expect(packet.header.timestamp == 0xDEAD_BEEF)
        #expect(packet.header.ssrc == 0x0102_0304)
        #expect(packet.header.csrcs.isEmpty)
        let ext = try #require(packet.header.headerExtension)
        #expect(ext.profile == 0xBEDE)
        #expect(ext[id: 1] == [0x7F])
        #expect(ext[id: 2] == [1, 2, 3])
        #expect(ext[id: 3] == [0xAB, 0xCD])
        #expect(ext[id: 4] == nil)
        #expect(packet.payload.bytes == [0xCA, 0xFE, 0xBA, 0xBE])
        #expect(packet.paddingLength == 0)
        #expect(try packet.serialize().bytes == Self.chromeVideo)
    }

    @Test func parsesTwoByteExtensionsCSRCsAndPadding() throws {
        let packet = try RTPPacket.parse(ByteBuffer(bytes: Self.twoByteWithPadding))
        #expect(packet.header.marker == false)
        #expect(packet.header.payloadType == 111)
        #expect(packet.header.sequenceNumber == 0xFFFF)
        #expect(packet.header.csrcs == [0x1111_1111, 0x2222_2222])
        #expect(packet.header.headerExtension == .twoByte(appBits: 0, [
            .init(id: 7, data: []), .init(id: 200, data: [1, 2, 3, 4, 5]),
        ]))
        #expect(packet.payload.bytes == [1, 2, 3])
        #expect(packet.paddingLength == 3)
        #expect(try packet.serialize().bytes == Self.twoByteWithPadding)
    }

    @Test func minimalPacketRoundTrips() throws {
        let header = RTPHeader(payloadType: 0, sequenceNumber: 1, timestamp: 160, ssrc: 9)
        let packet = RTPPacket(header: header, payload: ByteBuffer(bytes: [1, 2, 3]))
        let bytes = try packet.serialize()
        #expect(bytes.bytes == hexBytes("80 00 00 01 00 00 00 a0 00 00 00 09 01 02 03"))
        #expect(try RTPPacket.parse(bytes) == packet)
    }

    @Test func unknownExtensionProfileIsKept() throws {
        let bytes = hexBytes("90 60 00 01 00 00 00 00 00 00 00 01 ab cd 00 01 de ad be ef 99")
        let packet = try RTPPacket.parse(ByteBuffer(bytes: bytes))
        #expect(packet.header.headerExtension == .other(profile: 0xABCD, data: [0xDE, 0xAD, 0xBE, 0xEF]))
        #expect(try packet.serialize().bytes == bytes)
    }

    @Test func invalidExtensionElementsAreRejectedOnSerialize() {
        let header = RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1,
                               headerExtension: .oneByte([.init(id: 15, data: [1])]))
        #expect(throws: WireError.self) { try RTPPacket(header: header, payload: ByteBuffer()).serialize() }
        let tooMany = RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1, csrcs: Array(repeating: 1, count: 16))
        #expect(throws: WireError.self) { try RTPPacket(header: tooMany, payload: ByteBuffer()).serialize() }
    }

    @Test func malformedPacketsThrow() {
        func kind(_ bytes: [UInt8]) -> WireError.Kind? {
            do { _ = try RTPPacket.parse(ByteBuffer(bytes: bytes)); return nil } catch { return error.kind }
        }
        #expect(kind([]) == .truncated)
        #expect(kind(Array(Self.chromeVideo[0..<11])) == .truncated)
        #expect(kind([0x40] + Array(Self.chromeVideo[1...])) == .malformed)  // version 1
        #expect(kind(hexBytes("83 60 00 01 00 00 00 00 00 00 00 01 00 00 00 01")) == .truncated)  // CC=3, one CSRC
        #expect(kind(hexBytes("90 60 00 01 00 00 00 00 00 00 00 01 be de 00 02 00 00 00 00")) == .truncated)
        #expect(kind(hexBytes("a0 60 00 01 00 00 00 00 00 00 00 01")) == .truncated)  // P bit, nothing after
        #expect(kind(hexBytes("a0 60 00 01 00 00 00 00 00 00 00 01 01 00")) == .malformed)  // count 0
        #expect(kind(hexBytes("a0 60 00 01 00 00 00 00 00 00 00 01 01 05")) == .malformed)  // count > bytes
        // One-byte element claiming more data than the extension holds.
        #expect(kind(hexBytes("90 60 00 01 00 00 00 00 00 00 00 01 be de 00 01 1f 00 00 00")) == .truncated)
    }

    @Test func parserIsTotal() throws {
        var parsed = 0
        for input in hostileInputs(seeds: [Self.chromeVideo, Self.twoByteWithPadding]) {
            do {
                let packet = try RTPPacket.parse(input)
                parsed += 1
                // Re-serialization of anything parsed must parse back to the same value.
                let again = try RTPPacket.parse(try packet.serialize())
                #expect(again == packet)
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        #expect(parsed > 100)
    }
}

@Suite("RTP sequence numbers")
struct SequenceNumberTests {
    @Test func isNewerHandlesWraparound() {
        #expect(UInt16(1).isNewer(than: 0))
        #expect(!UInt16(0).isNewer(than: 1))
        #expect(UInt16(0).isNewer(than: 0xFFFF))
        #expect(UInt16(5).isNewer(than: 0xFFF0))
        #expect(!UInt16(0xFFF0).isNewer(than: 5))
        #expect(!UInt16(7).isNewer(than: 7))
        #expect(UInt16(0x8000).isNewer(than: 0) != UInt16(0).isNewer(than: 0x8000))
        #expect(UInt32(1).isNewer(than: 0xFFFF_FFFF))
        #expect(!UInt32(0xFFFF_FFFF).isNewer(than: 1))
    }

    @Test func isNewerIsAntisymmetric() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<5000 {
            let a = UInt16.random(in: 0...UInt16.max, using: &generator)
            let b = UInt16.random(in: 0...UInt16.max, using: &generator)
            if a != b { #expect(a.isNewer(than: b) != b.isNewer(than: a)) }
        }
    }

    @Test func unwrapperCountsRollovers() {
        var unwrapper = SequenceNumberUnwrapper()
        #expect(unwrapper.unwrap(65_530) == 65_530)
        #expect(unwrapper.unwrap(65_535) == 65_535)
        #expect(unwrapper.unwrap(2) == 65_538)
        #expect(unwrapper.rolloverCount == 1)
        #expect(unwrapper.unwrap(65_534) == 65_534)  // late packet from before the wrap
        #expect(unwrapper.highestExtended == 65_538)
        #expect(unwrapper.unwrap(3) == 65_539)
        var sequence: UInt16 = 3
        for _ in 0..<(4 * 65_536 / 1000) { sequence &+= 1000; _ = unwrapper.unwrap(sequence) }
        #expect(unwrapper.rolloverCount == 4)
    }

    @Test func unwrapperRejectsPacketsBeforeTheStart() {
        var unwrapper = SequenceNumberUnwrapper()
        #expect(unwrapper.unwrap(3) == 3)
        #expect(unwrapper.unwrap(1) == 1)
        #expect(unwrapper.unwrap(65_535) == nil)
        #expect(unwrapper.highestExtended == 3)
    }
}
