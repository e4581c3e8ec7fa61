import Testing

@testable import LiveRoomSecureTransport

@Suite struct DTLSDatagramPackerTests {
    static func record(type: UInt8 = 22, sequence: UInt8, fragment: Int) -> [UInt8] {
        [type, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, sequence, UInt8(fragment >> 8), UInt8(fragment & 0xFF)]
            + Array(repeating: sequence, count: fragment)
    }

    @Test func parsesARecordHeader() throws {
        let header = try #require(DTLSRecordHeader(Self.record(sequence: 7, fragment: 300)))
        #expect(header.contentType == 22 && header.version == 0xFEFD && header.epoch == 0)
        #expect(header.sequenceNumber == 7 && header.fragmentLength == 300)
        #expect(DTLSRecordHeader(Array(repeating: UInt8(22), count: 12)) == nil)
    }

    @Test func packsWholeRecordsUpToTheMTU() {
        let a = Self.record(sequence: 1, fragment: 500)  // 513 bytes
        let b = Self.record(sequence: 2, fragment: 600)  // 613
        let c = Self.record(sequence: 3, fragment: 100)  // 113
        let d = Self.record(sequence: 4, fragment: 1300)  // 1313, larger than the MTU
        let packer = DTLSDatagramPacker(mtu: 1200)
        let packed = packer.datagrams(from: a + b + c + d)
        #expect(packed.map(\.count) == [513 + 613, 113, 1313])
        #expect(packed == [a + b, c, d])
        #expect(packer.datagrams(from: c + a + b).map(\.count) == [113 + 513, 613])
        #expect(packer.datagrams(from: a + c) == [a + c])
        #expect(packer.datagrams(from: []) == [])
    }

    @Test func keepsUnparsableTailTogether() {
        let a = Self.record(sequence: 1, fragment: 10)
        let truncated = Array(Self.record(sequence: 2, fragment: 50).prefix(30))
        #expect(DTLSDatagramPacker(mtu: 1200).datagrams(from: a + truncated) == [a + truncated])
        #expect(DTLSDatagramPacker(mtu: 30).datagrams(from: a + truncated) == [a, truncated])
    }

}
