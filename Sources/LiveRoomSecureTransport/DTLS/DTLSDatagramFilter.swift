/// Decides which received datagrams are handed to OpenSSL at all.
///
/// OpenSSL 3.0 silently drops most invalid records, as RFC 6347 §4.1.2.7 asks, but treats
/// some as fatal: a malformed plaintext ChangeCipherSpec, a handshake record whose
/// fragments do not add up, or an encrypted record shorter than the cipher's overhead
/// (it answers those with internal_error). A single spoofed datagram would then kill a
/// handshake or a live session, so datagrams that cannot be valid are dropped here first.
struct DTLSDatagramFilter {
    /// The smallest valid fragment of a record in epoch 1 or later: the AEAD overhead of
    /// the negotiated cipher (explicit nonce + tag: 24 for AES-GCM, 16 for ChaCha20-Poly1305).
    var minimumProtectedFragmentLength: Int

    /// Handshake message types of DTLS 1.2 (RFC 5246 §7.4, RFC 6347 §4.3.2).
    private static let handshakeTypes: Set<UInt8> = [0, 1, 2, 3, 4, 11, 12, 13, 14, 15, 16, 20]

    /// Whether `datagram` is a sequence of well-framed DTLS 1.0/1.2 records: known content
    /// types, a DTLS version, lengths that add up, plaintext (epoch 0) ChangeCipherSpec,
    /// alert and handshake records of valid shape, and encrypted records at least as long
    /// as the cipher's overhead.
    func accepts(_ datagram: UnsafeRawBufferPointer) -> Bool {
        guard DTLSRecordHeader.mayBeDTLS(datagram) else { return false }
        var offset = 0
        while offset < datagram.count {
            guard let header = DTLSRecordHeader(datagram, at: offset) else { return false }
            let fragment = offset + DTLSRecordHeader.length
            let fragmentLength = Int(header.fragmentLength)
            guard (20...23).contains(header.contentType),
                header.version == 0xFEFD || header.version == 0xFEFF,
                fragmentLength <= datagram.count - fragment,
                fragmentLength <= 16_384 + 2_048
            else { return false }
            if header.epoch == 0 {
                switch header.contentType {
                case 20: guard fragmentLength == 1, datagram[fragment] == 1 else { return false }
                case 21: guard fragmentLength == 2, datagram[fragment] == 1 || datagram[fragment] == 2 else { return false }
                case 22: guard Self.handshakeFragmentsAddUp(datagram, from: fragment, count: fragmentLength) else { return false }
                default: break
                }
            } else if fragmentLength < minimumProtectedFragmentLength {
                return false
            }
            offset = fragment + fragmentLength
        }
        return true
    }

    /// A plaintext handshake record holds one or more fragments, each a 12-byte header
    /// (type, length, message_seq, fragment_offset, fragment_length) and its bytes.
    private static func handshakeFragmentsAddUp(_ bytes: UnsafeRawBufferPointer, from start: Int, count: Int) -> Bool {
        func uint24(_ at: Int) -> Int { Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) }
        var offset = start
        let end = start + count
        repeat {
            guard end - offset >= 12, handshakeTypes.contains(bytes[offset]) else { return false }
            let messageLength = uint24(offset + 1)
            let fragmentOffset = uint24(offset + 6)
            let fragmentLength = uint24(offset + 9)
            guard fragmentOffset + fragmentLength <= messageLength, fragmentLength <= end - offset - 12 else { return false }
            offset += 12 + fragmentLength
        } while offset < end
        return true
    }
}
