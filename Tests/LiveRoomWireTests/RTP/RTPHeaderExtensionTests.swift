import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("RTP header extensions: renumbering elements in a serialized packet")
struct RTPHeaderExtensionTests {
    /// `packet` renumbered, and whether `renumber` said it changed anything.
    static func renumbered(_ packet: [UInt8], _ from: UInt8, to: UInt8) -> (changed: Bool, bytes: [UInt8]) {
        var bytes = packet
        let changed = RTPHeaderExtension.renumber(from, to: to, inPacket: &bytes)
        return (changed, bytes)
    }

    /// The extension of `packet` after parsing it.
    static func parsedExtension(_ packet: [UInt8]) throws -> RTPHeaderExtension? {
        try RTPPacket.parse(ByteBuffer(bytes: packet)).header.headerExtension
    }

    /// A packet (V=2, no CSRC, PT 96) with extension `profile` and `body` (padded to words) and a 3-byte payload.
    static func packet(profile: UInt16, body: [UInt8]) -> [UInt8] {
        let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
        let words = padded.count / 4
        return [0x90, 0x60, 0x00, 0x01, 0, 0, 0x0B, 0xB8, 0, 0, 0, 0x2A]
            + [UInt8(profile >> 8), UInt8(profile & 0xFF), UInt8(words >> 8), UInt8(words & 0xFF)] + padded + [0xDE, 0xAD, 0x01]
    }

    @Test func oneByteElementsAreRenumbered() throws {
        // RTPPacketTests.chromeVideo: ids 1, 2, 3 then padding.
        let original = RTPPacketTests.chromeVideo
        let (changed, bytes) = Self.renumbered(original, 2, to: 12)
        #expect(changed)
        #expect(try Self.parsedExtension(bytes) == .oneByte([.init(id: 1, data: [0x7F]), .init(id: 12, data: [1, 2, 3]), .init(id: 3, data: [0xAB, 0xCD])]))
        // Only the id's nibble changed: 0x22 became 0xC2.
        var expected = original
        expected[18] = 0xC2
        #expect(bytes == expected)
        // Nothing with that id, or an id the one-byte form cannot hold: unchanged.
        #expect(Self.renumbered(original, 9, to: 4) == (false, original))
        #expect(Self.renumbered(original, 2, to: 15) == (false, original))
        #expect(Self.renumbered(original, 2, to: 0) == (false, original))
        #expect(Self.renumbered(original, 2, to: 200) == (false, original))
    }

    @Test func oneByteRenumberingSkipsPaddingAndDataAndChangesEveryMatch() throws {
        // id 12 (2 bytes whose values look like ids), padding, id 1 (1 byte), padding, id 12 (1 byte 0xC0).
        let body: [UInt8] = [0xC1, 0xC1, 0xC0, 0x00, 0x00, 0x10, 0xC1, 0x00, 0xC0, 0xC0]
        let original = Self.packet(profile: 0xBEDE, body: body)
        let (changed, bytes) = Self.renumbered(original, 12, to: 5)
        #expect(changed)
        #expect(try Self.parsedExtension(bytes) == .oneByte([.init(id: 5, data: [0xC1, 0xC0]), .init(id: 1, data: [0xC1]), .init(id: 5, data: [0xC0])]))
        #expect(try RTPPacket.parse(ByteBuffer(bytes: bytes)).payload.bytes == [0xDE, 0xAD, 0x01])
        // An id 15 element stops the reading, as RFC 8285 says: nothing after it is touched.
        let stopped = Self.packet(profile: 0xBEDE, body: [0xF0, 0x00, 0xC0, 0x07])
        #expect(Self.renumbered(stopped, 12, to: 5) == (false, stopped))
    }

    @Test func twoByteElementsAreRenumbered() throws {
        // RTPPacketTests.twoByteWithPadding: CSRCs, ids 7 (empty) and 200, padding.
        let original = RTPPacketTests.twoByteWithPadding
        let (changed, bytes) = Self.renumbered(original, 200, to: 12)
        #expect(changed)
        #expect(try Self.parsedExtension(bytes) == .twoByte(appBits: 0, [.init(id: 7, data: []), .init(id: 12, data: [1, 2, 3, 4, 5])]))
        #expect(try RTPPacket.parse(ByteBuffer(bytes: bytes)).paddingLength == 3)
        let (back, again) = Self.renumbered(bytes, 12, to: 255)
        #expect(back)
        #expect(try Self.parsedExtension(again)?[id: 255] == [1, 2, 3, 4, 5])
        #expect(Self.renumbered(original, 12, to: 7) == (false, original))
    }

    @Test func twoByteRenumberingSkipsPaddingAndData() throws {
        // padding, id 12 with 3 bytes "12 12 0", padding, id 9 with 1 byte "12", id 12 empty.
        let body: [UInt8] = [0x00, 0x0C, 0x03, 0x0C, 0x0C, 0x00, 0x00, 0x00, 0x09, 0x01, 0x0C, 0x0C, 0x00]
        let original = Self.packet(profile: 0x1003, body: body)
        let (changed, bytes) = Self.renumbered(original, 12, to: 240)
        #expect(changed)
        #expect(try Self.parsedExtension(bytes) == .twoByte(appBits: 3, [
            .init(id: 240, data: [0x0C, 0x0C, 0x00]), .init(id: 9, data: [0x0C]), .init(id: 240, data: []),
        ]))
    }

    @Test func packetsWithoutAUsableExtensionAreLeftAlone() throws {
        let plain = Array(buffer: try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3), payload: ByteBuffer(bytes: [12, 12])).serialize())
        #expect(Self.renumbered(plain, 12, to: 5) == (false, plain))
        #expect(Self.renumbered([], 12, to: 5) == (false, []))
        #expect(Self.renumbered(Array(plain.prefix(11)), 12, to: 5) == (false, Array(plain.prefix(11))))
        // Another profile.
        let other = Self.packet(profile: 0xABCD, body: [0x0C, 0x01, 0xC0, 0x00])
        #expect(Self.renumbered(other, 12, to: 5) == (false, other))
        // An extension longer than the packet, or its header cut off.
        let twoByte = Self.packet(profile: 0x1000, body: [0x0C, 0x01, 0x07])
        for length in 12..<(twoByte.count - 3) {
            let cut = Array(twoByte.prefix(length))
            #expect(Self.renumbered(cut, 12, to: 5) == (false, cut), "cut to \(length) bytes")
        }
        // X bit set with CSRCs that run past the end.
        var csrcs = twoByte
        csrcs[0] |= 0x0F
        #expect(Self.renumbered(csrcs, 12, to: 5) == (false, csrcs))
    }

    @Test func renumberingAgreesWithParsing() throws {
        var generator = SeededGenerator(seed: 0xE1E)
        for round in 0..<400 {
            let oneByte = round % 2 == 0
            let count = Int.random(in: 1...6, using: &generator)
            let from = UInt8.random(in: 1...(oneByte ? 14 : 255), using: &generator)
            let to = UInt8.random(in: 1...(oneByte ? 14 : 255), using: &generator)
            let elements = (0..<count).map { _ in
                RTPHeaderExtension.Element(
                    id: Bool.random(using: &generator) ? from : UInt8.random(in: 1...(oneByte ? 14 : 255), using: &generator),
                    data: (0..<Int.random(in: (oneByte ? 1 : 0)...(oneByte ? 16 : 40), using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
            let headerExtension: RTPHeaderExtension = oneByte ? .oneByte(elements) : .twoByte(appBits: 0, elements)
            let csrcs = (0..<Int.random(in: 0...2, using: &generator)).map { UInt32($0) }
            let header = RTPHeader(payloadType: 96, sequenceNumber: UInt16(round), timestamp: 0, ssrc: 1, csrcs: csrcs, headerExtension: headerExtension)
            let original = Array(buffer: try RTPPacket(header: header, payload: ByteBuffer(bytes: [from, to])).serialize())
            let (changed, bytes) = Self.renumbered(original, from, to: to)
            #expect(changed == elements.contains { $0.id == from })
            #expect(bytes.count == original.count)
            let parsed = try RTPPacket.parse(ByteBuffer(bytes: bytes))
            #expect(parsed.header.headerExtension?.elements == elements.map { .init(id: $0.id == from ? to : $0.id, data: $0.data) })
            #expect(parsed.payload.bytes == [from, to])
            #expect(parsed.header.csrcs == csrcs)
        }
    }

    @Test func hostilePacketsNeverCrashAndParseAsBefore() {
        for input in hostileInputs(seeds: [RTPPacketTests.chromeVideo, RTPPacketTests.twoByteWithPadding]) {
            let original = input.bytes
            for (from, to) in [(UInt8(2), UInt8(12)), (200, 12), (12, 200), (7, 1)] {
                let (changed, bytes) = Self.renumbered(original, from, to: to)
                #expect(bytes.count == original.count)
                if !changed { #expect(bytes == original) }
                // What parsed before parses after, with the same elements but the id.
                if let before = try? RTPPacket.parse(ByteBuffer(bytes: original)), let elements = before.header.headerExtension?.elements {
                    let after = try? RTPPacket.parse(ByteBuffer(bytes: bytes))
                    #expect(after?.header.headerExtension?.elements.map(\.data) == elements.map(\.data))
                    #expect(after?.payload == before.payload)
                }
            }
        }
    }
}
