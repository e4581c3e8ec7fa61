import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("STUN (RFC 8489 / RFC 5769 vectors)")
struct STUNMessageTests {
    static let password = "VOkJxbRl1RmTxUk/WvJxBt"

    // RFC 5769 §2.1 Sample Request.
    static let sampleRequest = hexBytes("""
        00 01 00 58 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 10 53 54 55 4e 20 74 65 73 74 20 63 6c 69 65 6e 74
        00 24 00 04 6e 00 01 ff
        80 29 00 08 93 2f f9 b1 51 26 3b 36
        00 06 00 09 65 76 74 6a 3a 68 36 76 59 20 20 20
        00 08 00 14 9a ea a7 0c bf d8 cb 56 78 1e f2 b5 b2 d3 f2 49 c1 b5 71 a2
        80 28 00 04 e5 7a 3b cf
        """)

    // RFC 5769 §2.2 Sample IPv4 Response.
    static let sampleIPv4Response = hexBytes("""
        01 01 00 3c 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 08 00 01 a1 47 e1 12 a6 43
        00 08 00 14 2b 91 f5 99 fd 9e 90 c3 8c 74 89 f9 2a f9 ba 53 f0 6b e7 d7
        80 28 00 04 c0 7d 4c 96
        """)

    // RFC 5769 §2.3 Sample IPv6 Response.
    static let sampleIPv6Response = hexBytes("""
        01 01 00 48 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 14 00 02 a1 47 01 13 a9 fa a5 d3 f1 79 bc 25 f4 b5 be d2 b9 d9
        00 08 00 14 a3 82 95 4e 4b e6 7b f1 17 84 c9 7c 82 92 c2 75 bf e3 ed 41
        80 28 00 04 c8 fb 0b 4c
        """)

    static let transactionID = try! STUNTransactionID(bytes: hexBytes("b7 e7 a7 01 bc 34 d6 86 fa 87 df ae"))

    @Test func crc32KnownValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test func messageTypeEncoding() throws {
        #expect(STUNMessageType.bindingRequest.rawValue == 0x0001)
        #expect(STUNMessageType.bindingSuccessResponse.rawValue == 0x0101)
        #expect(STUNMessageType.bindingErrorResponse.rawValue == 0x0111)
        #expect(STUNMessageType.bindingIndication.rawValue == 0x0011)
        for raw in UInt16(0)...0x3FFF {
            let type = try STUNMessageType(rawValue: raw)
            #expect(type.rawValue == raw)
        }
        #expect(throws: WireError.self) { try STUNMessageType(rawValue: 0x8001) }
    }

    @Test func sampleRequest() throws {
        let buffer = ByteBuffer(bytes: Self.sampleRequest)
        let message = try STUNMessage.parse(buffer)
        #expect(message.type == .bindingRequest)
        #expect(message.transactionID == Self.transactionID)
        #expect(message.software == "STUN test client")
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.username == "evtj:h6vY")
        #expect(message.useCandidate == false)
        #expect(message.attributes.count == 6)
        let key = STUNIntegrity.shortTermKey(password: Self.password)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: buffer, key: key) == .valid)
        #expect(try STUNIntegrity.verifyFingerprint(of: buffer) == .valid)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: buffer, key: Array("wrong".utf8)) == .mismatch)
    }

    @Test func sampleIPv4Response() throws {
        let buffer = ByteBuffer(bytes: Self.sampleIPv4Response)
        let message = try STUNMessage.parse(buffer)
        #expect(message.type == .bindingSuccessResponse)
        #expect(message.software == "test vector")
        #expect(message.xorMappedAddress == TransportAddress(address: IPAddress("192.0.2.1")!, port: 32853))
        #expect(message.xorMappedAddress?.description == "192.0.2.1:32853")
        let key = STUNIntegrity.shortTermKey(password: Self.password)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: buffer, key: key) == .valid)
        #expect(try STUNIntegrity.verifyFingerprint(of: buffer) == .valid)
    }

    @Test func sampleIPv6Response() throws {
        let buffer = ByteBuffer(bytes: Self.sampleIPv6Response)
        let message = try STUNMessage.parse(buffer)
        let mapped = try #require(message.xorMappedAddress)
        #expect(mapped.address == IPAddress("2001:db8:1234:5678:11:2233:4455:6677"))
        #expect(mapped.address.description == "2001:db8:1234:5678:11:2233:4455:6677")
        #expect(mapped.port == 32853)
        let key = STUNIntegrity.shortTermKey(password: Self.password)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: buffer, key: key) == .valid)
        #expect(try STUNIntegrity.verifyFingerprint(of: buffer) == .valid)
    }

    @Test func reSerializingSampleRequestWithZeroPaddingStillVerifies() throws {
        let message = try STUNMessage.parse(ByteBuffer(bytes: Self.sampleRequest))
        let key = STUNIntegrity.shortTermKey(password: Self.password)
        let rebuilt = message.serialize(integrityKey: key, fingerprint: true)
        #expect(rebuilt.readableBytes == Self.sampleRequest.count)
        // It reads back as the message it was made from.
        let reparsed = try STUNMessage.parse(rebuilt)
        #expect(reparsed.type == message.type && reparsed.transactionID == message.transactionID)
        #expect(reparsed.username == message.username && reparsed.software == message.software && reparsed.priority == message.priority)
        #expect(reparsed.iceControlled == message.iceControlled && reparsed.useCandidate == message.useCandidate)
        #expect(reparsed.attributes.count == message.attributes.count)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: rebuilt, key: key) == .valid)
        #expect(try STUNIntegrity.verifyFingerprint(of: rebuilt) == .valid)
        // Everything but the zero padding of USERNAME (and so MI/FP) matches the sample.
        #expect(rebuilt.bytes[0..<73] == Self.sampleRequest[0..<73])
    }

    @Test func serializeWithoutRecomputingIsByteIdenticalForZeroPadding() throws {
        let original = STUNMessage(type: .bindingRequest, transactionID: Self.transactionID, attributes: [
            .username("abcd:efgh"), .priority(1_853_824_767), .iceControlling(42), .useCandidate,
            .errorCode(code: 487, reason: "Role Conflict"), .other(type: 0xC057, value: [1, 2, 3]),
        ]).serialize(integrityKey: Array("pw".utf8), fingerprint: true)
        let parsed = try STUNMessage.parse(original)
        #expect(parsed.serialize() == original)
        #expect(parsed.errorCode?.code == 487)
        #expect(parsed.errorCode?.reason == "Role Conflict")
        #expect(parsed.useCandidate)
        #expect(parsed.iceControlling == 42)
    }

    @Test func bindingSuccessResponseVerifies() throws {
        let request = try STUNMessage.parse(ByteBuffer(bytes: Self.sampleRequest))
        for mapped in [
            TransportAddress(address: IPAddress("203.0.113.7")!, port: 50_000),
            TransportAddress(address: IPAddress("2001:db8::9")!, port: 1),
        ] {
            let bytes = STUNMessage.makeBindingSuccessResponse(to: request, mappedAddress: mapped, password: "serverpwd")
            let response = try STUNMessage.parse(bytes)
            #expect(response.type == .bindingSuccessResponse)
            #expect(response.transactionID == request.transactionID)
            #expect(response.xorMappedAddress == mapped)
            #expect(response.attributes.count == 3)
            #expect(try STUNIntegrity.verifyMessageIntegrity(of: bytes, key: Array("serverpwd".utf8)) == .valid)
            #expect(try STUNIntegrity.verifyFingerprint(of: bytes) == .valid)
        }
    }

    @Test func errorResponse() throws {
        let request = try STUNMessage.parse(ByteBuffer(bytes: Self.sampleRequest))
        let bytes = STUNMessage.makeBindingErrorResponse(to: request, code: 401, reason: "Unauthorized")
        let response = try STUNMessage.parse(bytes)
        #expect(response.type == .bindingErrorResponse)
        #expect(response.errorCode?.code == 401)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: bytes, key: []) == .absent)
        #expect(try STUNIntegrity.verifyFingerprint(of: bytes) == .valid)
    }

    @Test func tamperingIsDetected() throws {
        var bytes = Self.sampleIPv4Response
        bytes[30] ^= 0x01  // inside XOR-MAPPED-ADDRESS
        let buffer = ByteBuffer(bytes: bytes)
        let key = STUNIntegrity.shortTermKey(password: Self.password)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: buffer, key: key) == .mismatch)
        #expect(try STUNIntegrity.verifyFingerprint(of: buffer) == .mismatch)
    }

    @Test func fingerprintNotLastIsMismatch() throws {
        let message = STUNMessage(type: .bindingRequest, transactionID: Self.transactionID,
                                  attributes: [.fingerprint(0), .priority(1)])
        #expect(try STUNIntegrity.verifyFingerprint(of: message.serialize()) == .mismatch)
    }

    @Test func malformedInputThrowsTypedErrors() {
        func kind(_ bytes: [UInt8]) -> WireError.Kind? {
            do { _ = try STUNMessage.parse(ByteBuffer(bytes: bytes)); return nil } catch { return error.kind }
        }
        #expect(kind([]) == .truncated)
        #expect(kind(Array(Self.sampleRequest[0..<19])) == .truncated)
        var badCookie = Self.sampleRequest
        badCookie[4] = 0
        #expect(kind(badCookie) == .malformed)
        var longer = Self.sampleRequest
        longer[3] = 0x5C
        #expect(kind(longer) == .truncated)
        var odd = Self.sampleRequest
        odd[3] = 0x57
        #expect(kind(odd) == .malformed)
        // Attribute length overrunning the message.
        var overrun = Array(Self.sampleRequest[0..<28])
        overrun[2] = 0; overrun[3] = 8
        overrun[22] = 0xFF
        #expect(kind(overrun) == .truncated)
        // XOR-MAPPED-ADDRESS with unknown family.
        var family = Self.sampleIPv4Response
        family[41] = 0x03
        #expect(kind(family) == .malformed)
        // Bad UTF-8 in USERNAME.
        let badName = STUNMessage(type: .bindingRequest, transactionID: Self.transactionID,
                                  attributes: [.other(type: 0x0006, value: [0xFF, 0xFE])]).serialize()
        #expect(kind(badName.bytes) == .malformed)
    }

    @Test func parserIsTotal() {
        let seeds = [Self.sampleRequest, Self.sampleIPv4Response, Self.sampleIPv6Response]
        var parsed = 0
        for input in hostileInputs(seeds: seeds) {
            do {
                let message = try STUNMessage.parse(input)
                parsed += 1
                _ = message.serialize()
                _ = try STUNIntegrity.verifyFingerprint(of: input)
                _ = try STUNIntegrity.verifyMessageIntegrity(of: input, key: [1, 2, 3])
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        #expect(parsed > 0)
    }
}

@Suite("Datagram demultiplexing (RFC 7983)")
struct DatagramKindTests {
    @Test func firstByteRanges() {
        for byte in UInt8(0)...255 {
            let expected: DatagramKind
            switch byte {
            case 0...3: expected = .stun
            case 20...63: expected = .dtls
            case 128...191: expected = .rtp
            default: expected = .unknown
            }
            #expect(DatagramKind(firstByte: byte) == expected)
        }
    }

    @Test func datagramsTellRTCPFromRTP() {
        #expect(DatagramKind(datagram: ByteBuffer()) == .unknown)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x80])) == .unknown)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x80, 96, 0, 1])) == .rtp)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x80, 0xE0, 0, 1])) == .rtp)  // PT 96 + marker
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x81, 200, 0, 6])) == .rtcp)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x81, 205, 0, 3])) == .rtcp)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x16, 0xFE, 0xFD])) == .dtls)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: STUNMessageTests.sampleRequest)) == .stun)
        #expect(DatagramKind(datagram: ByteBuffer(bytes: [0x40, 0])) == .unknown)
    }
}
