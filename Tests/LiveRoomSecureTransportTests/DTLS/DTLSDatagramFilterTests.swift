import Testing

@testable import LiveRoomSecureTransport

@Suite struct DTLSDatagramFilterTests {
    static let gcm = DTLSDatagramFilter(minimumProtectedFragmentLength: 24)

    static func record(type: UInt8, epoch: UInt8 = 0, version: UInt16 = 0xFEFD, body: [UInt8]) -> [UInt8] {
        [type, UInt8(version >> 8), UInt8(version & 0xFF), 0, epoch, 0, 0, 0, 0, 0, 1, UInt8(body.count >> 8), UInt8(body.count & 0xFF)]
            + body
    }

    /// A handshake fragment header plus `fragment` bytes.
    static func handshake(type: UInt8 = 1, length: Int, offset: Int = 0, fragment: Int) -> [UInt8] {
        func u24(_ v: Int) -> [UInt8] { [UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        return [type] + u24(length) + [0, 0] + u24(offset) + u24(fragment) + Array(repeating: 7, count: fragment)
    }

    static func accepts(_ bytes: [UInt8], _ filter: DTLSDatagramFilter = gcm) -> Bool {
        bytes.withUnsafeBytes { filter.accepts($0) }
    }

    @Test func demultiplexesPerRFC7983() {
        #expect(!Self.accepts([0x00, 0x01] + Array(repeating: 0, count: 18)), "STUN")
        #expect(!Self.accepts([0x80, 96] + Array(repeating: 0, count: 18)), "RTP")
        #expect(!Self.accepts([22, 0xFE, 0xFD]), "too short")
        #expect(!Self.accepts([]))
    }

    @Test func acceptsValidRecords() {
        let hello = Self.record(type: 22, version: 0xFEFF, body: Self.handshake(length: 100, fragment: 100))
        #expect(Self.accepts(hello))
        let fragmented = Self.record(type: 22, body: Self.handshake(type: 11, length: 3000, offset: 1000, fragment: 500))
        #expect(Self.accepts(fragmented))
        let twoMessages = Self.record(type: 22, body: Self.handshake(type: 16, length: 66, fragment: 66) + Self.handshake(type: 15, length: 74, fragment: 74))
        #expect(Self.accepts(twoMessages))
        let changeCipherSpec = Self.record(type: 20, body: [1])
        let finished = Self.record(type: 22, epoch: 1, body: Array(repeating: 9, count: 40))
        #expect(Self.accepts(changeCipherSpec + finished), "CCS and Finished share a datagram")
        #expect(Self.accepts(Self.record(type: 21, body: [2, 42])))
        #expect(Self.accepts(Self.record(type: 23, epoch: 1, body: Array(repeating: 0, count: 24))))
        #expect(Self.accepts(Self.record(type: 21, epoch: 1, body: Array(repeating: 0, count: 18)), DTLSDatagramFilter(minimumProtectedFragmentLength: 16)),
                "a ChaCha20-Poly1305 close_notify is 18 bytes")
    }

    @Test func rejectsMalformedRecords() {
        #expect(!Self.accepts(Self.record(type: 24, body: [1, 2, 3])), "heartbeat")
        #expect(!Self.accepts(Self.record(type: 22, version: 0x0303, body: Self.handshake(length: 10, fragment: 10))), "TLS version")
        #expect(!Self.accepts(Array(Self.record(type: 23, epoch: 1, body: Array(repeating: 0, count: 40)).dropLast())), "truncated")
        #expect(!Self.accepts(Self.record(type: 20, body: [2])), "bad CCS")
        #expect(!Self.accepts(Self.record(type: 20, body: [1, 1])), "long CCS")
        #expect(!Self.accepts(Self.record(type: 21, body: [3, 0])), "bad alert level")
        #expect(!Self.accepts(Self.record(type: 22, body: Self.handshake(type: 99, length: 10, fragment: 10))), "unknown handshake type")
        #expect(!Self.accepts(Self.record(type: 22, body: Self.handshake(length: 10, offset: 5, fragment: 10))), "fragment beyond message")
        #expect(!Self.accepts(Self.record(type: 22, body: Self.handshake(length: 10, fragment: 10) + [0])), "trailing byte")
        #expect(!Self.accepts(Self.record(type: 23, epoch: 1, body: Array(repeating: 0, count: 23))), "shorter than the GCM overhead")
        let valid = Self.record(type: 20, body: [1])
        #expect(!Self.accepts(valid + [0x80, 0, 0]), "trailing garbage after a valid record")
    }
}
