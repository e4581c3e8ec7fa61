import NIOCore

/// A STUN message (RFC 8489): a 20-byte header and a list of attributes.
///
/// `parse` accepts any well-formed message; it does not check MESSAGE-INTEGRITY or
/// FINGERPRINT — use ``STUNIntegrity`` on the raw datagram for that.
public struct STUNMessage: Hashable, Sendable {
    /// The fixed magic cookie 0x2112A442.
    public static let magicCookie: UInt32 = 0x2112_A442
    /// Size of the fixed header.
    public static let headerSize = 20

    /// Method and class.
    public var type: STUNMessageType
    /// The transaction id.
    public var transactionID: STUNTransactionID
    /// Attributes in wire order.
    public var attributes: [STUNAttribute]

    /// Creates a message.
    public init(type: STUNMessageType, transactionID: STUNTransactionID, attributes: [STUNAttribute] = []) {
        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// Returns true if `buffer` looks like a STUN message: long enough, top two bits
    /// zero, the magic cookie in place and a length that is a multiple of 4.
    public static func isProbablySTUN(_ buffer: ByteBuffer) -> Bool {
        guard buffer.readableBytes >= headerSize,
              let first = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt16.self),
              let cookie = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt32.self) else { return false }
        return first & 0xC000 == 0 && cookie == magicCookie && length % 4 == 0
    }

    /// Parses the readable bytes of `buffer` as one STUN message.
    ///
    /// The message length must match the buffer exactly (one datagram, one message).
    public static func parse(_ buffer: ByteBuffer) throws(WireError) -> STUNMessage {
        var buffer = buffer
        let rawType = try buffer.readWireInteger(as: UInt16.self, "STUN message type")
        let type = try STUNMessageType(rawValue: rawType)
        let length = try buffer.readWireInteger(as: UInt16.self, "STUN message length")
        let cookie = try buffer.readWireInteger(as: UInt32.self, "STUN magic cookie")
        guard cookie == magicCookie else {
            throw .malformed("STUN magic cookie is 0x\(String(cookie, radix: 16)), expected 0x2112a442")
        }
        let transactionID = try STUNTransactionID(bytes: buffer.readWireBytes(length: 12, "STUN transaction id"))
        guard length % 4 == 0 else { throw .malformed("STUN message length \(length) is not a multiple of 4") }
        guard Int(length) == buffer.readableBytes else {
            if Int(length) > buffer.readableBytes {
                throw .truncated("STUN message length \(length) but \(buffer.readableBytes) bytes follow the header")
            }
            throw .malformed("STUN message length \(length) but \(buffer.readableBytes) bytes follow the header")
        }
        var attributes: [STUNAttribute] = []
        while buffer.readableBytes > 0 {
            let attributeType = try buffer.readWireInteger(as: UInt16.self, "STUN attribute type")
            let attributeLength = Int(try buffer.readWireInteger(as: UInt16.self, "STUN attribute length"))
            let value = try buffer.readWireSlice(length: attributeLength, "STUN attribute 0x\(String(attributeType, radix: 16)) value")
            let padding = (4 - attributeLength % 4) % 4
            try buffer.skipWireBytes(padding, "STUN attribute padding")
            attributes.append(try STUNAttribute.decode(type: attributeType, value: value, transactionID: transactionID))
        }
        return STUNMessage(type: type, transactionID: transactionID, attributes: attributes)
    }

    /// Serializes the message.
    ///
    /// Any MESSAGE-INTEGRITY or FINGERPRINT already in ``attributes`` is written as is.
    /// Pass `integrityKey` to append a freshly computed MESSAGE-INTEGRITY and
    /// `fingerprint: true` to append a FINGERPRINT after it; existing ones are then
    /// dropped so the new ones come last as RFC 8489 requires.
    public func serialize(integrityKey: [UInt8]? = nil, fingerprint: Bool = false) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(Self.headerSize + 64 + attributes.count * 12)
        buffer.writeInteger(type.rawValue)
        buffer.writeInteger(UInt16(0))  // length, patched below
        buffer.writeInteger(Self.magicCookie)
        buffer.writeBytes(transactionID.bytes)
        let appending = integrityKey != nil || fingerprint
        for attribute in attributes {
            if appending {
                switch attribute {
                case .messageIntegrity, .fingerprint: continue
                default: break
                }
            }
            Self.write(attribute, into: &buffer, transactionID: transactionID)
        }
        if let integrityKey {
            let integrityStart = buffer.writerIndex
            Self.setLength(of: &buffer, to: integrityStart - Self.headerSize + 24)
            let mac = STUNIntegrity.hmacSHA1(buffer.readableBytesView, key: integrityKey)
            Self.write(.messageIntegrity(mac), into: &buffer, transactionID: transactionID)
        }
        if fingerprint {
            Self.setLength(of: &buffer, to: buffer.writerIndex - Self.headerSize + 8)
            let crc = CRC32.checksum(buffer.readableBytesView) ^ STUNIntegrity.fingerprintXOR
            Self.write(.fingerprint(crc), into: &buffer, transactionID: transactionID)
        }
        Self.setLength(of: &buffer, to: buffer.writerIndex - Self.headerSize)
        return buffer
    }

    private static func setLength(of buffer: inout ByteBuffer, to length: Int) {
        buffer.setInteger(UInt16(truncatingIfNeeded: length), at: buffer.readerIndex + 2)
    }

    private static func write(_ attribute: STUNAttribute, into buffer: inout ByteBuffer, transactionID: STUNTransactionID) {
        buffer.writeInteger(attribute.typeCode)
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt16(0))
        let valueStart = buffer.writerIndex
        attribute.encodeValue(into: &buffer, transactionID: transactionID)
        let valueLength = buffer.writerIndex - valueStart
        buffer.setInteger(UInt16(truncatingIfNeeded: valueLength), at: lengthIndex)
        buffer.writeZeros((4 - valueLength % 4) % 4)
    }

    // MARK: Attribute accessors

    /// The USERNAME, if present.
    public var username: String? {
        for case .username(let value) in attributes { return value }
        return nil
    }

    /// The PRIORITY, if present.
    public var priority: UInt32? {
        for case .priority(let value) in attributes { return value }
        return nil
    }

    /// Whether USE-CANDIDATE is present.
    public var useCandidate: Bool {
        attributes.contains(.useCandidate)
    }

    /// The ICE-CONTROLLING tie-breaker, if present.
    public var iceControlling: UInt64? {
        for case .iceControlling(let value) in attributes { return value }
        return nil
    }

    /// The ICE-CONTROLLED tie-breaker, if present.
    public var iceControlled: UInt64? {
        for case .iceControlled(let value) in attributes { return value }
        return nil
    }

    /// The XOR-MAPPED-ADDRESS, if present.
    public var xorMappedAddress: TransportAddress? {
        for case .xorMappedAddress(let value) in attributes { return value }
        return nil
    }

    /// The ERROR-CODE, if present.
    public var errorCode: (code: UInt16, reason: String)? {
        for case .errorCode(let code, let reason) in attributes { return (code, reason) }
        return nil
    }

    /// The SOFTWARE description, if present.
    public var software: String? {
        for case .software(let value) in attributes { return value }
        return nil
    }

    // MARK: Building responses

    /// A Binding success response to `request` carrying `mappedAddress` as
    /// XOR-MAPPED-ADDRESS. Serialize it with the local ICE password as integrity key
    /// and `fingerprint: true`, or use ``makeBindingSuccessResponse(to:mappedAddress:password:)``.
    public static func bindingSuccessResponse(transactionID: STUNTransactionID, mappedAddress: TransportAddress) -> STUNMessage {
        STUNMessage(type: .bindingSuccessResponse, transactionID: transactionID, attributes: [.xorMappedAddress(mappedAddress)])
    }

    /// Bytes of a Binding success response to `request` with XOR-MAPPED-ADDRESS,
    /// MESSAGE-INTEGRITY keyed by the short-term `password` (the local ice-pwd), and
    /// FINGERPRINT.
    public static func makeBindingSuccessResponse(to request: STUNMessage, mappedAddress: TransportAddress, password: String) -> ByteBuffer {
        bindingSuccessResponse(transactionID: request.transactionID, mappedAddress: mappedAddress)
            .serialize(integrityKey: STUNIntegrity.shortTermKey(password: password), fingerprint: true)
    }

    /// Bytes of a Binding error response (e.g. 400 Bad Request, 401 Unauthorized,
    /// 487 Role Conflict) with FINGERPRINT, and MESSAGE-INTEGRITY if `password` is given.
    public static func makeBindingErrorResponse(to request: STUNMessage, code: UInt16, reason: String, password: String? = nil) -> ByteBuffer {
        STUNMessage(type: .bindingErrorResponse, transactionID: request.transactionID, attributes: [.errorCode(code: code, reason: reason)])
            .serialize(integrityKey: password.map { STUNIntegrity.shortTermKey(password: $0) }, fingerprint: true)
    }
}
