import Testing

@testable import LiveRoomSecureTransport

@Suite struct SRTPSessionTests {
    /// Keying material for both ends, from a synthetic exporter output.
    static func material(_ profile: SRTPProtectionProfile) -> (client: SRTPKeyingMaterial, server: SRTPKeyingMaterial) {
        let exported = (0..<SRTPKeyingMaterial.exporterLength(for: profile)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        return (
            SRTPKeyingMaterial(profile: profile, role: .client, exportedKeyingMaterial: exported)!,
            SRTPKeyingMaterial(profile: profile, role: .server, exportedKeyingMaterial: exported)!
        )
    }

    static func rtp(sequence: UInt16, ssrc: UInt32 = 0xCAFE_BABE, payloadSize: Int = 160) -> [UInt8] {
        var packet: [UInt8] = [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0x03, 0xE8]
        packet += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) }
        return packet + (0..<payloadSize).map { UInt8(truncatingIfNeeded: $0) }
    }

    /// A receiver report with one report block.
    static func rtcp(ssrc: UInt32 = 0xCAFE_BABE) -> [UInt8] {
        var packet: [UInt8] = [0x81, 201, 0, 7]
        packet += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) }
        return packet + (0..<24).map { UInt8($0) }
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func rtpRoundTripTamperAndReplay(_ profile: SRTPProtectionProfile) throws {
        let (client, server) = Self.material(profile)
        let sender = try SRTPSession(keyingMaterial: client, direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: server, direction: .inbound)

        let plain = Self.rtp(sequence: 1)
        var packet = plain
        try sender.protectRTP(&packet)
        #expect(packet.count == plain.count + profile.rtpTrailerLength)
        #expect(Array(packet[0..<12]) == Array(plain[0..<12]), "header stays in the clear")
        #expect(Array(packet[12..<plain.count]) != Array(plain[12...]), "payload is encrypted")
        let secured = packet

        try receiver.unprotectRTP(&packet)
        #expect(packet == plain)

        // Replaying the same SRTP packet.
        var replay = secured
        #expect(throws: SRTPError.self) { try receiver.unprotectRTP(&replay) }
        do {
            try receiver.unprotectRTP(&replay)
        } catch {
            #expect(error.code == .replayFail, "\(error)")
            #expect(error.name == "replay_fail")
        }
        #expect(replay == secured, "a rejected packet keeps its length")

        // A fresh packet with one payload bit flipped.
        var tampered = Self.rtp(sequence: 2)
        try sender.protectRTP(&tampered)
        tampered[20] ^= 0x01
        do {
            try receiver.unprotectRTP(&tampered)
            Issue.record("tampered packet accepted")
        } catch {
            #expect(error.code == .authFail, "\(error)")
            #expect(error.name == "auth_fail")
        }

        // The session still works, also out of order within the window.
        var later = Self.rtp(sequence: 5), earlier = Self.rtp(sequence: 4)
        try sender.protectRTP(&later)
        try sender.protectRTP(&earlier)
        try receiver.unprotectRTP(&later)
        try receiver.unprotectRTP(&earlier)
        #expect(later == Self.rtp(sequence: 5) && earlier == Self.rtp(sequence: 4))
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func rtcpRoundTripTamperAndReplay(_ profile: SRTPProtectionProfile) throws {
        let (client, server) = Self.material(profile)
        // Server to client this time.
        let sender = try SRTPSession(keyingMaterial: server, direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: client, direction: .inbound)

        let plain = Self.rtcp()
        var packet = plain
        try sender.protectRTCP(&packet)
        #expect(packet.count == plain.count + profile.rtcpTrailerLength)
        #expect(Array(packet[0..<8]) == Array(plain[0..<8]))
        let secured = packet
        try receiver.unprotectRTCP(&packet)
        #expect(packet == plain)

        var replay = secured
        #expect(throws: SRTPError(code: .replayFail, operation: "srtp_unprotect_rtcp")) { try receiver.unprotectRTCP(&replay) }

        var tampered = plain
        try sender.protectRTCP(&tampered)
        tampered[10] ^= 0x80
        #expect(throws: SRTPError(code: .authFail, operation: "srtp_unprotect_rtcp")) { try receiver.unprotectRTCP(&tampered) }
    }

    @Test func wrongDirectionKeysFailAuthentication() throws {
        let (client, server) = Self.material(.aeadAES128GCM)
        let sender = try SRTPSession(keyingMaterial: client, direction: .outbound)
        // The server mistakenly unprotecting with its own key.
        let confused = try SRTPSession(keyingMaterial: server, direction: .outbound)
        let receiver = try SRTPSession(
            profile: .aeadAES128GCM, masterKey: server.localKey, masterSalt: server.localSalt, direction: .inbound)
        var packet = Self.rtp(sequence: 9)
        try sender.protectRTP(&packet)
        #expect(throws: SRTPError(code: .authFail, operation: "srtp_unprotect")) { try receiver.unprotectRTP(&packet) }
        var other = Self.rtp(sequence: 9)
        #expect(throws: SRTPError.self) { try confused.unprotectRTP(&other) }
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func rawBufferVariantWorksInPlace(_ profile: SRTPProtectionProfile) throws {
        let (client, server) = Self.material(profile)
        let sender = try SRTPSession(keyingMaterial: client, direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: server, direction: .inbound)
        let plain = Self.rtp(sequence: 100, payloadSize: 1200 - 12)
        var storage = [UInt8](repeating: 0, count: 1500)
        try storage.withUnsafeMutableBytes { buffer in
            buffer.copyBytes(from: plain)
            let protectedLength = try sender.protectRTP(buffer, length: plain.count)
            #expect(protectedLength == plain.count + profile.rtpTrailerLength)
            let length = try receiver.unprotectRTP(buffer, length: protectedLength)
            #expect(length == plain.count)
            #expect(Array(buffer[0..<length]) == plain)

            #expect(throws: SRTPError(code: .badParam, operation: "srtp_protect", detail: "packet length 1400 in a 1500-byte buffer")) {
                _ = try sender.protectRTP(buffer, length: 1400)
            }
            #expect(throws: SRTPError.self) { _ = try receiver.unprotectRTP(buffer, length: 11) }
        }
    }

    @Test func arrayVariantDoesNotReallocateWithReservedCapacity() throws {
        let (client, server) = Self.material(.aeadAES128GCM)
        let sender = try SRTPSession(keyingMaterial: client, direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: server, direction: .inbound)
        var packet = Self.rtp(sequence: 1)
        packet.reserveCapacity(packet.count + SRTPSession.maximumTrailerLength)
        let address = packet.withUnsafeBytes { $0.baseAddress }
        try sender.protectRTP(&packet)
        try receiver.unprotectRTP(&packet)
        #expect(packet.withUnsafeBytes { $0.baseAddress } == address)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func garbageNeverCrashesUnprotect(_ profile: SRTPProtectionProfile) throws {
        let (_, server) = Self.material(profile)
        let receiver = try SRTPSession(keyingMaterial: server, direction: .inbound)
        var rng = SplitMix64(state: 4)
        for size in [0, 1, 7, 8, 11, 12, 13, 16, 20, 28, 40, 100, 1200] {
            for _ in 0..<20 {
                var datagram = rng.bytes(size)
                if size > 0 { datagram[0] = 0x80 | (datagram[0] & 0x3F) }
                var copy = datagram
                #expect(throws: SRTPError.self) { try receiver.unprotectRTP(&datagram) }
                #expect(throws: SRTPError.self) { try receiver.unprotectRTCP(&copy) }
            }
        }
    }

    @Test func rejectsBadParameters() {
        #expect(throws: SRTPError.self) {
            try SRTPSession(profile: .aeadAES128GCM, masterKey: Array(repeating: 1, count: 16), masterSalt: Array(repeating: 1, count: 14), direction: .inbound)
        }
        #expect(throws: SRTPError.self) {
            try SRTPSession(profile: .aes128CMHMACSHA1_80, masterKey: Array(repeating: 1, count: 16), masterSalt: Array(repeating: 1, count: 14), direction: .inbound, replayWindowSize: 10)
        }
    }

    /// The real path: handshake, then media both ways with the negotiated keys.
    @Test func mediaFlowsWithKeysFromAHandshake() throws {
        let link = try LoopbackLink()
        link.start()
        #expect(link.pump())
        let clientKeys = try #require(link.clientKeys)
        let serverKeys = try #require(link.serverKeys)
        let clientOut = try SRTPSession(keyingMaterial: clientKeys, direction: .outbound)
        let clientIn = try SRTPSession(keyingMaterial: clientKeys, direction: .inbound)
        let serverOut = try SRTPSession(keyingMaterial: serverKeys, direction: .outbound)
        let serverIn = try SRTPSession(keyingMaterial: serverKeys, direction: .inbound)

        var up = Self.rtp(sequence: 1000)
        try clientOut.protectRTP(&up)
        try serverIn.unprotectRTP(&up)
        #expect(up == Self.rtp(sequence: 1000))

        var down = Self.rtcp(ssrc: 1)
        try serverOut.protectRTCP(&down)
        try clientIn.unprotectRTCP(&down)
        #expect(down == Self.rtcp(ssrc: 1))
    }
}
