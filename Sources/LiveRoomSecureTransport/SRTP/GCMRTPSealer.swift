internal import COpenSSL

/// SRTP protection of outgoing RTP with AEAD_AES_128_GCM (RFC 7714) on one kept OpenSSL
/// AES-GCM context, for the SFU's hot path: a packet is encrypted in place with no context
/// made or freed, where Debian's libsrtp (built on NSS) makes and frees an NSS context for
/// every packet.
///
/// It does what libsrtp does for an outbound session with `allow_repeat_tx`, and its output
/// is checked against libsrtp's in the tests:
/// - the session key and salt are derived from the master key and salt with the AES-CM PRF
///   (RFC 3711 §4.3.1, key derivation rate 0; the 12-byte salt padded with zeros);
/// - each SSRC's roll-over counter is estimated from its highest index as libsrtp does
///   (`srtp_rdbx_estimate_index`), so a resent old packet gets its old counter;
/// - IV = (0x0000 ‖ SSRC ‖ ROC ‖ SEQ) XOR salt, the header (with CSRCs and extension) is the
///   additional data, and the 16-byte tag follows the payload (RFC 7714 §8).
///
/// Not thread safe: one session's sealer is used on one loop.
final class GCMRTPSealer {
    static let tagLength = 16
    private let context: OpaquePointer
    private let salt: [UInt8]
    /// Each packet's IV is built here: kept, so sealing allocates nothing.
    private let iv = UnsafeMutablePointer<UInt8>.allocate(capacity: 12)
    /// The highest index (ROC << 16 | SEQ) sent per SSRC.
    private var highest: [UInt32: UInt64] = [:]
    /// Bounds `highest` against a caller that invents SSRCs: past this, the oldest is forgotten.
    static let maximumStreams = 64
    private var order: [UInt32] = []

    init?(masterKey: [UInt8], masterSalt: [UInt8]) {
        guard masterKey.count == 16, masterSalt.count == 12,
            var sessionKey = Self.derive(label: 0, length: 16, masterKey: masterKey, masterSalt: masterSalt),
            let sessionSalt = Self.derive(label: 2, length: 12, masterKey: masterKey, masterSalt: masterSalt),
            let context = EVP_CIPHER_CTX_new()
        else { return nil }
        defer { for index in sessionKey.indices { sessionKey[index] = 0 } }  // the context keeps its own copy
        guard EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, sessionKey, nil) == 1 else {
            EVP_CIPHER_CTX_free(context)
            return nil
        }
        self.context = context
        salt = sessionSalt
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
        iv.deallocate()
    }

    /// The AES-CM PRF: `length` bytes of AES-128 counter-mode keystream under the master key,
    /// the counter block being the salt (padded to 14 bytes) XOR the label at byte 7, then a
    /// 16-bit block counter from 0.
    private static func derive(label: UInt8, length: Int, masterKey: [UInt8], masterSalt: [UInt8]) -> [UInt8]? {
        var counter = masterSalt + [UInt8](repeating: 0, count: 16 - masterSalt.count)
        counter[7] ^= label
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let zeros = [UInt8](repeating: 0, count: length)
        var output = [UInt8](repeating: 0, count: length + 16)
        var written: Int32 = 0
        guard EVP_EncryptInit_ex(context, EVP_aes_128_ctr(), nil, masterKey, counter) == 1,
            EVP_EncryptUpdate(context, &output, &written, zeros, Int32(length)) == 1, written == Int32(length)
        else { return nil }
        return Array(output[..<length])
    }

    /// Protects the RTP packet in the first `length` bytes of `buffer` in place, appending the
    /// tag: the new length; nil when the packet is malformed, the buffer has no room, or
    /// OpenSSL fails.
    func seal(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int? {
        guard length >= 12, length + Self.tagLength <= buffer.count, length <= Int(Int32.max) - Self.tagLength,
            let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { return nil }
        // Header: fixed part, CSRCs, then the extension (its 4-byte header and words).
        var headerLength = 12 + 4 * Int(base[0] & 0x0F)
        if base[0] & 0x10 != 0 {
            guard length >= headerLength + 4 else { return nil }
            headerLength += 4 + 4 * (Int(base[headerLength + 2]) << 8 | Int(base[headerLength + 3]))
        }
        guard base[0] >> 6 == 2, headerLength <= length else { return nil }
        let sequence = UInt16(base[2]) << 8 | UInt16(base[3])
        let ssrc = UInt32(base[8]) << 24 | UInt32(base[9]) << 16 | UInt32(base[10]) << 8 | UInt32(base[11])
        let index = estimateIndex(ssrc: ssrc, sequence: sequence)
        let roc = UInt32(truncatingIfNeeded: index >> 16)

        for i in 0..<12 { iv[i] = salt[i] }
        for i in 0..<4 {
            iv[2 + i] ^= UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * i))
            iv[6 + i] ^= UInt8(truncatingIfNeeded: roc >> (24 - 8 * i))
        }
        iv[10] ^= UInt8(sequence >> 8)
        iv[11] ^= UInt8(truncatingIfNeeded: sequence)

        var written: Int32 = 0
        let payloadLength = Int32(length - headerLength)
        guard EVP_EncryptInit_ex(context, nil, nil, nil, iv) == 1,
            EVP_EncryptUpdate(context, nil, &written, base, Int32(headerLength)) == 1,
            payloadLength == 0 || EVP_EncryptUpdate(context, base + headerLength, &written, base + headerLength, payloadLength) == 1,
            EVP_EncryptFinal_ex(context, base + length, &written) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), base + length) == 1
        else { return nil }
        return length + Self.tagLength
    }

    /// libsrtp's estimate of a sent packet's index from the stream's highest one, which it
    /// then raises when the packet is newer (`srtp_rdbx_estimate_index`, `srtp_index_guess`,
    /// `srtp_rdbx_add_index`; RFC 3711 §3.3.1).
    private func estimateIndex(ssrc: UInt32, sequence: UInt16) -> UInt64 {
        let highest = self.highest[ssrc] ?? remember(ssrc)
        let s = Int64(sequence)
        var roc: UInt32 = 0
        let difference: Int64
        if highest <= 0x8000 {
            // Early in a stream the counter is taken to be 0, as libsrtp does.
            difference = s - Int64(highest)
        } else {
            let localROC = UInt32(truncatingIfNeeded: highest >> 16)
            let localSequence = Int64(highest & 0xFFFF)
            roc = localROC
            if localSequence < 0x8000 {
                if s - localSequence > 0x8000 {
                    roc = localROC &- 1
                    difference = s - localSequence - 0x10000
                } else {
                    difference = s - localSequence
                }
            } else if localSequence - 0x8000 > s {
                roc = localROC &+ 1
                difference = s - localSequence + 0x10000
            } else {
                difference = s - localSequence
            }
        }
        if difference > 0 { self.highest[ssrc] = highest + UInt64(difference) }
        return UInt64(roc) << 16 | UInt64(sequence)
    }

    private func remember(_ ssrc: UInt32) -> UInt64 {
        if order.count == Self.maximumStreams { highest[order.removeFirst()] = nil }
        order.append(ssrc)
        highest[ssrc] = 0
        return 0
    }
}
