import Testing

@testable import LiveRoomSecureTransport

@Suite struct SRTPKeyingMaterialTests {
    @Test func splitsAESCMExporterOutputPerRFC5764() throws {
        let exported = (0..<60).map { UInt8($0) }
        let client = try #require(
            SRTPKeyingMaterial(profile: .aes128CMHMACSHA1_80, role: .client, exportedKeyingMaterial: exported))
        #expect(client.clientWriteKey == Array(0..<16))
        #expect(client.serverWriteKey == Array(16..<32))
        #expect(client.clientWriteSalt == Array(32..<46))
        #expect(client.serverWriteSalt == Array(46..<60))
        #expect(client.localKey == Array(0..<16) && client.localSalt == Array(32..<46))
        #expect(client.remoteKey == Array(16..<32) && client.remoteSalt == Array(46..<60))

        let server = try #require(
            SRTPKeyingMaterial(profile: .aes128CMHMACSHA1_80, role: .server, exportedKeyingMaterial: exported))
        #expect(server.localKey == client.remoteKey && server.localSalt == client.remoteSalt)
        #expect(server.remoteKey == client.localKey && server.remoteSalt == client.localSalt)
    }

    @Test func splitsGCMExporterOutputPerRFC7714() throws {
        let exported = (0..<56).map { UInt8($0) }
        let server = try #require(
            SRTPKeyingMaterial(profile: .aeadAES128GCM, role: .server, exportedKeyingMaterial: exported))
        #expect(server.clientWriteKey == Array(0..<16))
        #expect(server.serverWriteKey == Array(16..<32))
        #expect(server.clientWriteSalt == Array(32..<44))
        #expect(server.serverWriteSalt == Array(44..<56))
        #expect(server.localKey == Array(16..<32) && server.localSalt == Array(44..<56))
        #expect(server.remoteKey == Array(0..<16) && server.remoteSalt == Array(32..<44))
    }

    @Test func rejectsWrongLengths() {
        #expect(SRTPKeyingMaterial.exporterLength(for: .aes128CMHMACSHA1_80) == 60)
        #expect(SRTPKeyingMaterial.exporterLength(for: .aeadAES128GCM) == 56)
        #expect(SRTPKeyingMaterial(profile: .aeadAES128GCM, role: .client, exportedKeyingMaterial: Array(repeating: 1, count: 60)) == nil)
        #expect(SRTPKeyingMaterial(profile: .aes128CMHMACSHA1_80, role: .client, exportedKeyingMaterial: Array(repeating: 1, count: 56)) == nil)
    }

    @Test func profileIdentifiers() {
        #expect(SRTPProtectionProfile(id: 0x0007) == .aeadAES128GCM)
        #expect(SRTPProtectionProfile(id: 0x0001) == .aes128CMHMACSHA1_80)
        #expect(SRTPProtectionProfile(id: 0x0002) == nil)
        #expect(SRTPProtectionProfile.allCases.first == .aeadAES128GCM, "preference order")
    }

    @Test func descriptionRedactsKeys() throws {
        let material = try #require(
            SRTPKeyingMaterial(profile: .aeadAES128GCM, role: .client, exportedKeyingMaterial: Array(repeating: 0xAB, count: 56)))
        #expect(!"\(material)".contains("171"))
    }
}
