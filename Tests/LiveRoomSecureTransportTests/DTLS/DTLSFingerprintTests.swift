import Testing

@testable import LiveRoomSecureTransport

@Suite struct DTLSFingerprintTests {
    @Test func certificateFingerprintHasSDPForm() throws {
        let sdp = Certificates.client.fingerprint.sdpValue
        #expect(sdp.hasPrefix("sha-256 "))
        let groups = sdp.dropFirst("sha-256 ".count).split(separator: ":", omittingEmptySubsequences: false)
        #expect(groups.count == 32)
        for group in groups {
            #expect(group.count == 2)
            #expect(group.allSatisfy { ("0"..."9").contains($0) || ("A"..."F").contains($0) }, "not uppercase hex: \(group)")
        }
        #expect(sdp.count == "sha-256 ".count + 32 * 3 - 1)
    }

    @Test func fingerprintIsStableAndMatchesTheDEREncoding() throws {
        let certificate = Certificates.client
        // Computed again, from the certificate or from its SDP form, it is the one stored.
        #expect(certificate.certificate.fingerprint(.sha256) == certificate.fingerprint)
        #expect(DTLSFingerprint(sdpValue: certificate.fingerprint.sdpValue) == certificate.fingerprint)
        #expect(DTLSCertificate.fingerprint(ofCertificateDER: certificate.derEncoded) == certificate.fingerprint)
        // It is SHA-256 of the DER bytes: FIPS 180-2's vector for "abc".
        #expect(DTLSCertificate.fingerprint(ofCertificateDER: Array("abc".utf8)).sdpValue
            == "sha-256 BA:78:16:BF:8F:01:CF:EA:41:41:40:DE:5D:AE:22:23:B0:03:61:A3:96:17:7A:9C:B4:10:FF:61:F2:00:15:AD")
        #expect(certificate.derEncoded.first == 0x30, "DER SEQUENCE")
        #expect(Certificates.server.fingerprint != certificate.fingerprint, "fresh certificates must differ")
    }

    @Test func certificateContents() throws {
        let certificate = try DTLSCertificate()
        #expect(certificate.certificate.commonName == "LiveRoom")
        let validity = try #require(certificate.certificate.validityPeriodSeconds)
        #expect(validity == 31 * 86_400, "backdated one day, valid for 30 more")
        #expect(certificate.certificate.fingerprint(.sha256) == certificate.fingerprint)
    }

    @Test func parsesSDPValuesCaseInsensitively() throws {
        let fingerprint = Certificates.server.fingerprint
        #expect(DTLSFingerprint(sdpValue: fingerprint.sdpValue) == fingerprint)
        #expect(DTLSFingerprint(sdpValue: fingerprint.sdpValue.uppercased()) == fingerprint)
        #expect(DTLSFingerprint(sdpValue: "  " + fingerprint.sdpValue.lowercased() + " ") == fingerprint)
        let sha1 = try #require(DTLSFingerprint(sdpValue: "sha-1 " + Array(repeating: "0a", count: 20).joined(separator: ":")))
        #expect(sha1.algorithm == .sha1)
        #expect(sha1.sdpValue == "sha-1 " + Array(repeating: "0A", count: 20).joined(separator: ":"))
    }

    static let pairs31: String = Array(repeating: "AB", count: 31).joined(separator: ":")
    static let pairs32: String = Array(repeating: "AB", count: 32).joined(separator: ":")
    static let triples32: String = Array(repeating: "ABC", count: 32).joined(separator: ":")
    static let malformed: [String] = [
        "", "sha-256", "sha-256 ", "md5 AB:CD", "sha-256 AB:CD",
        "sha-256 " + pairs31 + ":G0",
        "sha-256 " + pairs32 + ":",
        "sha-256 " + triples32,
        "sha-256 " + pairs32 + " extra",
    ]

    @Test(arguments: malformed)
    func rejectsMalformedSDPValues(_ value: String) {
        #expect(DTLSFingerprint(sdpValue: value) == nil)
    }
}
