import Crypto
import NIOCore

/// MESSAGE-INTEGRITY and FINGERPRINT checks on a received STUN datagram.
///
/// These work on the raw bytes because the HMAC and CRC cover the message exactly as
/// it was sent, including padding, with the length field adjusted (RFC 8489 §14.5, §14.7).
public enum STUNIntegrity {
    /// The value XORed into the CRC-32 for FINGERPRINT ("STUN").
    public static let fingerprintXOR: UInt32 = 0x5354_554E

    /// The outcome of a check that found its attribute.
    public enum Result: Hashable, Sendable {
        /// The attribute is present and correct.
        case valid
        /// The attribute is present but does not match.
        case mismatch
        /// The message carries no such attribute.
        case absent
    }

    /// The short-term credential key: the password's UTF-8 bytes (SASLprep is the
    /// identity for the ASCII ice-pwd values ICE uses).
    public static func shortTermKey(password: String) -> [UInt8] {
        Array(password.utf8)
    }

    /// The long-term credential key MD5(username ":" realm ":" password).
    public static func longTermKey(username: String, realm: String, password: String) -> [UInt8] {
        Array(Insecure.MD5.hash(data: Array("\(username):\(realm):\(password)".utf8)))
    }

    static func hmacSHA1(_ bytes: some Sequence<UInt8>, key: [UInt8]) -> [UInt8] {
        var hmac = HMAC<Insecure.SHA1>(key: SymmetricKey(data: key))
        hmac.update(data: Array(bytes))
        return Array(hmac.finalize())
    }

    /// Locates the attribute `type` in a STUN datagram; returns the offset of its
    /// header relative to the message start and its value. Validates the framing.
    static func locate(_ type: UInt16, in datagram: ByteBuffer) throws(WireError) -> (offset: Int, value: ByteBuffer, isLast: Bool)? {
        _ = try STUNMessage.parse(datagram)  // framing and attribute sanity
        var buffer = datagram
        try buffer.skipWireBytes(STUNMessage.headerSize, "STUN header")
        while buffer.readableBytes > 0 {
            let offset = buffer.readerIndex - datagram.readerIndex
            let attributeType = try buffer.readWireInteger(as: UInt16.self, "STUN attribute type")
            let length = Int(try buffer.readWireInteger(as: UInt16.self, "STUN attribute length"))
            let value = try buffer.readWireSlice(length: length, "STUN attribute value")
            try buffer.skipWireBytes((4 - length % 4) % 4, "STUN attribute padding")
            if attributeType == type {
                return (offset, value, buffer.readableBytes == 0)
            }
        }
        return nil
    }

    /// Checks MESSAGE-INTEGRITY of `datagram` with `key`
    /// (``shortTermKey(password:)`` of the local ice-pwd for ICE).
    ///
    /// Throws if the datagram is not a well-formed STUN message.
    public static func verifyMessageIntegrity(of datagram: ByteBuffer, key: [UInt8]) throws(WireError) -> Result {
        guard let (offset, value, _) = try locate(STUNAttribute.TypeCode.messageIntegrity, in: datagram) else {
            return .absent
        }
        guard value.readableBytes == 20 else { throw .malformed("STUN MESSAGE-INTEGRITY must be 20 bytes") }
        guard var covered = datagram.getSlice(at: datagram.readerIndex, length: offset) else {
            throw .truncated("STUN message shorter than MESSAGE-INTEGRITY offset")
        }
        covered.setInteger(UInt16(truncatingIfNeeded: offset - STUNMessage.headerSize + 24), at: covered.readerIndex + 2)
        let expected = hmacSHA1(covered.readableBytesView, key: key)
        // Constant-time comparison.
        var difference: UInt8 = 0
        for (lhs, rhs) in zip(expected, value.readableBytesView) { difference |= lhs ^ rhs }
        return difference == 0 ? .valid : .mismatch
    }

    /// Checks FINGERPRINT of `datagram`. A FINGERPRINT that is not the last attribute
    /// is reported as a mismatch.
    public static func verifyFingerprint(of datagram: ByteBuffer) throws(WireError) -> Result {
        guard let (offset, value, isLast) = try locate(STUNAttribute.TypeCode.fingerprint, in: datagram) else {
            return .absent
        }
        guard isLast else { return .mismatch }
        var fingerprintValue = value
        let received = try fingerprintValue.readWireInteger(as: UInt32.self, "STUN FINGERPRINT")
        guard let covered = datagram.getSlice(at: datagram.readerIndex, length: offset) else {
            throw .truncated("STUN message shorter than FINGERPRINT offset")
        }
        // FINGERPRINT is last, so the length field as received already covers it.
        let crc = CRC32.checksum(covered.readableBytesView) ^ fingerprintXOR
        return crc == received ? .valid : .mismatch
    }
}
