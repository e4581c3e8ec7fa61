import Testing

@testable import LiveRoomSecureTransport

/// The OpenSSL AES-GCM path for outgoing RTP must be libsrtp, byte for byte: the same packets
/// through an outbound session on each engine, with the same master key, give the same SRTP,
/// and libsrtp's inbound session takes them. The packets cover what the SFU sends: several
/// SSRCs, CSRCs, header extensions, an empty payload, a wrap of the sequence number, resent
/// old packets (NACK) on both sides of the wrap, and numbers that jump.
@Suite struct GCMRTPSealerTests {
    static func packet(ssrc: UInt32, sequence: UInt16, csrcs: Int = 0, extensionWords: Int? = nil, payload: Int) -> [UInt8] {
        var p: [UInt8] = [0x80 | UInt8(csrcs) | (extensionWords == nil ? 0 : 0x10), 96, UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
        p += [0, 1, 2, 3]
        for shift in stride(from: 24, through: 0, by: -8) { p.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        for index in 0..<csrcs { p += [0, 0, 0, UInt8(index + 1)] }
        if let words = extensionWords {
            p += [0xBE, 0xDE, 0, UInt8(words)] + (0..<(4 * words)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        }
        return p + (0..<payload).map { UInt8(truncatingIfNeeded: $0 &+ Int(sequence)) }
    }

    @Test func sealsExactlyAsLibsrtpDoesAndLibsrtpOpensIt() throws {
        let key = (0..<16).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }, salt = (0..<12).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 5) }
        let sealer = try SRTPSession(profile: .aeadAES128GCM, masterKey: key, masterSalt: salt, direction: .outbound)
        let reference = try SRTPSession(profile: .aeadAES128GCM, masterKey: key, masterSalt: salt, direction: .outbound, engine: .libsrtp)
        let opener = try SRTPSession(profile: .aeadAES128GCM, masterKey: key, masterSalt: salt, direction: .inbound, replayWindowSize: 32_767)
        #expect(sealer.sealsRTPWithOpenSSL && !reference.sealsRTPWithOpenSSL && !opener.sealsRTPWithOpenSSL)

        var packets: [[UInt8]] = []
        // A video stream that wraps, with resends of old packets before and after the wrap.
        var sequence: UInt16 = 0x7F00
        for step in 0..<1_400 {
            sequence &+= step % 97 == 0 ? 40 : 1  // a jump now and then
            packets.append(Self.packet(ssrc: 0x1111_0001, sequence: sequence, extensionWords: step % 3 == 0 ? 2 : nil, payload: 1_100 + step % 100))
            if step % 50 == 10 { packets.append(Self.packet(ssrc: 0x1111_0001, sequence: sequence &- 30, payload: 900)) }
        }
        // Audio on another SSRC with CSRCs, and an empty payload.
        for step in UInt16(0)..<300 {
            packets.append(Self.packet(ssrc: 0x2222_0002, sequence: 0xFFF0 &+ step, csrcs: Int(step % 3), payload: Int(step % 5) * 40))
        }
        // Early in a stream: numbers above 0x8000 with the counter still 0.
        for step in UInt16(0)..<10 { packets.append(Self.packet(ssrc: 0x3333_0003, sequence: 0x9000 &+ step * 500, payload: 100)) }

        var opened = 0
        for packet in packets {
            var sealed = packet, expected = packet
            try sealer.protectRTP(&sealed)
            try reference.protectRTP(&expected)
            #expect(sealed == expected, "ssrc \(packet[8...11]) sequence \(UInt16(packet[2]) << 8 | UInt16(packet[3]))")
            guard sealed == expected else { return }
            if (try? opener.unprotectRTP(&sealed)) != nil {
                #expect(sealed == packet)
                opened += 1
            }
        }
        // libsrtp's receiver refuses the resends it has seen (replay), and takes everything else.
        #expect(opened >= packets.count - 30, "\(opened) of \(packets.count)")
    }

    @Test func malformedPacketsAreRefusedWithoutTouchingMemoryPastThem() throws {
        let sealer = try #require(GCMRTPSealer(masterKey: [UInt8](repeating: 1, count: 16), masterSalt: [UInt8](repeating: 2, count: 12)))
        var buffer = [UInt8](repeating: 0, count: 64)
        buffer.withUnsafeMutableBytes { bytes in
            bytes[0] = 0x80
            #expect(sealer.seal(bytes, length: 11) == nil, "shorter than a header")
            #expect(sealer.seal(UnsafeMutableRawBufferPointer(rebasing: bytes[..<30]), length: 20) == nil, "no room for the tag")
            bytes[0] = 0x8F  // 15 CSRCs: 72 bytes of header
            #expect(sealer.seal(bytes, length: 40) == nil, "CSRCs past the end")
            bytes[0] = 0x90
            bytes[14] = 0xFF
            bytes[15] = 0xFF  // an extension of 65535 words
            #expect(sealer.seal(bytes, length: 40) == nil, "extension past the end")
            bytes[0] = 0x40
            #expect(sealer.seal(bytes, length: 40) == nil, "not RTP version 2")
            bytes[0] = 0x80
            #expect(sealer.seal(bytes, length: 12) == 28, "a bare header seals")
        }
    }
}
