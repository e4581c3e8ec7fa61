import CSRTP
import Crypto
import Testing

@testable import LiveRoomSecureTransport

/// The published SRTP test vectors, beside the libsrtp round trips of ``SRTPSessionTests``:
/// RFC 3711 appendix B.2 (AES-CM keystream) and B.3 (key derivation), RFC 7714 section 16.1
/// (AEAD_AES_128_GCM). The vectors give session keys, which `srtp_create` cannot take (it
/// derives them from a master key), so the keystream and GCM vectors run through libsrtp's own
/// AES-CM and AES-GCM transforms, and the key derivation vector through ``SRTPSession``: a
/// packet it protects with the B.3 master key must be the one the B.3 session keys give.
///
/// Every value is copied from the RFC text: RFC 3711 appendix B as published. The RFC 7714
/// values could not be read from the RFC itself here; they are those that independent SRTP
/// implementations quote as section 16.1.1, which agree byte for byte, and the plaintext and
/// salt are checked against the ASCII strings the RFC names.
@Suite struct SRTPTestVectorTests {
    // MARK: RFC 3711 appendix B.2

    @Test func rfc3711AESCounterModeKeystream() throws {
        let sessionKey = bytes("2B7E151628AED2A6ABF7158809CF4F3C")
        let sessionSalt = bytes("F0F1F2F3F4F5F6F7F8F9FAFBFCFD")  // the RFC shows it shifted: …FCFD0000
        let cipher = try LibsrtpCipher(srtp_aes_icm_128, key: sessionKey + sessionSalt)
        // Rollover counter, sequence number and SSRC 0: the counter starts at the salt.
        try cipher.setIV(Array(repeating: 0, count: 16), direction: srtp_direction_encrypt)
        var keystream = [UInt8](repeating: 0, count: 1_044_512)  // "65282 AES blocks"
        try cipher.encrypt(&keystream)
        func block(_ counter: Int) -> [UInt8] { Array(keystream[(counter * 16)..<(counter * 16 + 16)]) }
        #expect(block(0x0000) == bytes("E03EAD0935C95E80E166B16DD92B4EB4"))
        #expect(block(0x0001) == bytes("D23513162B02D0F72A43A2FE4A5F97AB"))
        #expect(block(0x0002) == bytes("41E95B3BB0A2E8DD477901E4FCA894C0"))
        #expect(block(0xFEFF) == bytes("EC8CDF7398607CB0F2D21675EA9EA1E4"))
        #expect(block(0xFF00) == bytes("362B7C3C6773516318A077D7FC5073AE"))
        #expect(block(0xFF01) == bytes("6A2CC3787889374FBEB4C81B17BA6C44"))
    }

    // MARK: RFC 3711 appendix B.3

    static let masterKey = bytes("E1F97A0D3E018BE0D64FA32C06DE4139")
    static let masterSalt = bytes("0EC675AD498AFEEBB6960B3AABE6")
    static let cipherKey = bytes("C61E7A93744F39EE10734AFE3FF7A087")
    static let cipherSalt = bytes("30CBBC08863D8C85D49DB34A9AE1")
    /// All 94 octets the RFC lists; HMAC-SHA1 uses the first 20.
    static let authKey = bytes(
        "CEBE321F6FF7716B6FD4AB49AF256A15" + "6D38BAA48F0A0ACF3C34E2359E6CDBCE" + "E049646C43D9327AD175578EF7227098"
            + "6371C10C9A369AC2F94A8C5FBCDDDC25" + "6D6E919A48B610EF17C2041E47403576" + "6B68642C59BBFC2F34DB60DBDFB2")

    /// The key derivation function of RFC 3711 section 4.3 (key derivation rate 0): AES-CM
    /// under the master key, the label XORed into the master salt at octet 7.
    static func derive(label: UInt8, count: Int) throws -> [UInt8] {
        let cipher = try LibsrtpCipher(srtp_aes_icm_128, key: masterKey + masterSalt)
        var nonce = [UInt8](repeating: 0, count: 16)
        nonce[7] = label
        try cipher.setIV(nonce, direction: srtp_direction_encrypt)
        var output = [UInt8](repeating: 0, count: count)
        try cipher.encrypt(&output)
        return output
    }

    @Test func rfc3711KeyDerivation() throws {
        #expect(try Self.derive(label: 0x00, count: 16) == Self.cipherKey)
        #expect(try Self.derive(label: 0x02, count: 16) == bytes("30CBBC08863D8C85D49DB34A9AE17AC6"), "the AES-CM output")
        #expect(try Self.derive(label: 0x02, count: 14) == Self.cipherSalt)
        #expect(try Self.derive(label: 0x01, count: 94) == Self.authKey)
    }

    /// What ``SRTPSession`` does with the B.3 master key is what the B.3 session keys give:
    /// AES-CM with the cipher key and salt (IV = salt·2^16 ⊕ SSRC·2^64 ⊕ index·2^16, RFC 3711
    /// section 4.1.1) and an 80-bit HMAC-SHA1 tag with the auth key over packet ‖ ROC.
    @Test func sessionWithTheRFC3711MasterKeyUsesItsSessionKeys() throws {
        let plain = Self.rfc7714Packet
        let header = Array(plain[0..<12])
        let cipher = try LibsrtpCipher(srtp_aes_icm_128, key: Self.cipherKey + Self.cipherSalt)
        // SSRC 5501a0b2, rollover counter 0, sequence number f17b.
        try cipher.setIV(bytes("00000000" + "5501A0B2" + "00000000" + "F17B0000"), direction: srtp_direction_encrypt)
        var payload = Array(plain[12...])
        try cipher.encrypt(&payload)
        let authenticated = header + payload
        let tag = HMAC<Insecure.SHA1>.authenticationCode(
            for: authenticated + [0, 0, 0, 0], using: SymmetricKey(data: Self.authKey.prefix(20)))
        let expected = authenticated + Array(tag).prefix(10)

        let sender = try SRTPSession(
            profile: .aes128CMHMACSHA1_80, masterKey: Self.masterKey, masterSalt: Self.masterSalt, direction: .outbound)
        var packet = plain
        try sender.protectRTP(&packet)
        #expect(packet == expected)

        let receiver = try SRTPSession(
            profile: .aes128CMHMACSHA1_80, masterKey: Self.masterKey, masterSalt: Self.masterSalt, direction: .inbound)
        var received = expected
        try receiver.unprotectRTP(&received)
        #expect(received == plain)
    }

    // MARK: RFC 7714 section 16.1

    /// Section 16: the RTP packet all the examples protect, "Gallia est omnis divisa in partes tres".
    static let rfc7714Packet = bytes(
        "8040f17b8041f8d35501a0b247616c6c" + "696120657374206f6d6e697320646976" + "69736120696e20706172746573207472" + "6573")
    static let gcmKey = bytes("000102030405060708090a0b0c0d0e0f")
    static let gcmSalt = bytes("517569642070726f2071756f")
    /// Section 16.1.1, "Encrypted and tagged packet".
    static let gcmProtected = bytes(
        "8040f17b8041f8d35501a0b2f24de3a3" + "fb34de6cacba861c9d7e4bcabe633bd5" + "0d294e6f42a5f47a51c7d19b36de3adf"
            + "8833899d7f27beb16a9152cf765ee439" + "0cce")

    /// The IV of RFC 7714 section 8.1: (00 00 ‖ SSRC ‖ ROC ‖ SEQ) ⊕ salt.
    static func gcmIV(packet: [UInt8], rolloverCounter: UInt32) -> [UInt8] {
        let rollover = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: rolloverCounter >> $0) }
        let fields: [UInt8] = [0, 0] + packet[8..<12] + rollover + packet[2..<4]
        return zip(fields, gcmSalt).map { $0 ^ $1 }
    }

    @Test func rfc7714AEADAES128GCM() throws {
        #expect(Array(Self.rfc7714Packet[12...]) == Array("Gallia est omnis divisa in partes tres".utf8))
        #expect(Self.gcmSalt == Array("Quid pro quo".utf8))
        let iv = Self.gcmIV(packet: Self.rfc7714Packet, rolloverCounter: 0)
        #expect(iv == bytes("51753c6580c2726f20718414"))
        let header = Array(Self.rfc7714Packet[0..<12])
        let cipher = try LibsrtpCipher(srtp_aes_gcm_128, key: Self.gcmKey + Self.gcmSalt, tagLength: 16)

        // 16.1.1: encryption; the header is the associated data.
        try cipher.setIV(iv, direction: srtp_direction_encrypt)
        try cipher.setAAD(header)
        var payload = Array(Self.rfc7714Packet[12...])
        try cipher.encrypt(&payload)
        #expect(header + payload + (try cipher.tag()) == Self.gcmProtected)

        // 16.1.2: decryption of the published packet.
        try cipher.setIV(iv, direction: srtp_direction_decrypt)
        try cipher.setAAD(header)
        var sealed = Array(Self.gcmProtected[12...])
        #expect(try cipher.decrypt(&sealed) == srtp_err_status_ok)
        #expect(header + sealed == Self.rfc7714Packet)

        // One flipped bit in the published ciphertext fails authentication.
        try cipher.setIV(iv, direction: srtp_direction_decrypt)
        try cipher.setAAD(header)
        var tampered = Array(Self.gcmProtected[12...])
        tampered[0] ^= 0x01
        #expect(try cipher.decrypt(&tampered) == srtp_err_status_auth_fail)
    }
}

/// Bytes from hexadecimal digits.
private func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
}

/// One of libsrtp's own cipher transforms (`srtp_cipher_t`), keyed.
private final class LibsrtpCipher {
    private let cipher: UnsafeMutablePointer<srtp_cipher_t>

    /// `key` is the cipher key followed by the salt, as libsrtp lays them out.
    init(_ type: srtp_cipher_type_t, key: [UInt8], tagLength: Int32 = 0) throws {
        try SRTPLibrary.ensureInitialized()  // srtp_init sets up the crypto backend (NSS in Debian's build)
        var allocated: UnsafeMutablePointer<srtp_cipher_t>? = nil
        let status = withUnsafePointer(to: type) { srtp_cipher_type_alloc($0, &allocated, Int32(key.count), tagLength) }
        try #require(status == srtp_err_status_ok, "srtp_cipher_type_alloc: \(status)")
        cipher = try #require(allocated)
        try #require(srtp_cipher_init(cipher, key) == srtp_err_status_ok)
    }

    deinit { srtp_cipher_dealloc(cipher) }

    func setIV(_ iv: [UInt8], direction: srtp_cipher_direction_t) throws {
        var iv = iv
        try #require(srtp_cipher_set_iv(cipher, &iv, Int32(direction.rawValue)) == srtp_err_status_ok)
    }

    func setAAD(_ aad: [UInt8]) throws {
        try #require(srtp_cipher_set_aad(cipher, aad, UInt32(aad.count)) == srtp_err_status_ok)
    }

    /// Encrypts in place (for AES-CM: XORs the keystream in). The buffer gets 16 spare bytes,
    /// as `srtp_protect` leaves them: NSS's GCM writes the tag after the ciphertext.
    func encrypt(_ data: inout [UInt8]) throws {
        let count = data.count
        var length = UInt32(count)
        data += [UInt8](repeating: 0, count: 16)
        defer { data.removeLast(data.count - count) }
        try #require(srtp_cipher_encrypt(cipher, &data, &length) == srtp_err_status_ok)
        try #require(Int(length) == count)
    }

    /// The AEAD tag of what was encrypted.
    func tag() throws -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: 16)
        var length = UInt32(tag.count)
        try #require(srtp_cipher_get_tag(cipher, &tag, &length) == srtp_err_status_ok)
        return Array(tag.prefix(Int(length)))
    }

    /// Verifies and decrypts ciphertext ‖ tag in place, leaving the plaintext; returns libsrtp's status.
    func decrypt(_ data: inout [UInt8]) throws -> srtp_err_status_t {
        var length = UInt32(data.count)
        let status = srtp_cipher_decrypt(cipher, &data, &length)
        if status == srtp_err_status_ok { data.removeLast(data.count - Int(length)) }
        return status
    }
}
