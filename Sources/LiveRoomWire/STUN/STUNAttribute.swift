import NIOCore

/// One STUN attribute (RFC 8489 §14, RFC 8445 §16.1).
///
/// Attributes this module understands are decoded; all others are kept as
/// ``other(type:value:)`` so a message round-trips.
public enum STUNAttribute: Hashable, Sendable {
    /// USERNAME (0x0006): for ICE, `"<receiver ufrag>:<sender ufrag>"`.
    case username(String)
    /// MESSAGE-INTEGRITY (0x0008): the 20-byte HMAC-SHA1 as received.
    case messageIntegrity([UInt8])
    /// FINGERPRINT (0x8028): CRC-32 of the message XOR 0x5354554E, as received.
    case fingerprint(UInt32)
    /// XOR-MAPPED-ADDRESS (0x0020), already un-XORed.
    case xorMappedAddress(TransportAddress)
    /// MAPPED-ADDRESS (0x0001), the legacy plain form.
    case mappedAddress(TransportAddress)
    /// PRIORITY (0x0024).
    case priority(UInt32)
    /// USE-CANDIDATE (0x0025), no value.
    case useCandidate
    /// ICE-CONTROLLED (0x8029) with its tie-breaker.
    case iceControlled(UInt64)
    /// ICE-CONTROLLING (0x802A) with its tie-breaker.
    case iceControlling(UInt64)
    /// ERROR-CODE (0x0009): code 300–699 and a reason phrase.
    case errorCode(code: UInt16, reason: String)
    /// SOFTWARE (0x8022).
    case software(String)
    /// Any other attribute, value without padding.
    case other(type: UInt16, value: [UInt8])

    /// Attribute type codes.
    public enum TypeCode {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let unknownAttributes: UInt16 = 0x000A
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
    }

    /// The attribute type code.
    public var typeCode: UInt16 {
        switch self {
        case .username: return TypeCode.username
        case .messageIntegrity: return TypeCode.messageIntegrity
        case .fingerprint: return TypeCode.fingerprint
        case .xorMappedAddress: return TypeCode.xorMappedAddress
        case .mappedAddress: return TypeCode.mappedAddress
        case .priority: return TypeCode.priority
        case .useCandidate: return TypeCode.useCandidate
        case .iceControlled: return TypeCode.iceControlled
        case .iceControlling: return TypeCode.iceControlling
        case .errorCode: return TypeCode.errorCode
        case .software: return TypeCode.software
        case .other(let type, _): return type
        }
    }

    /// Decodes one attribute value (without padding). `transactionID` is needed to
    /// un-XOR an IPv6 XOR-MAPPED-ADDRESS.
    static func decode(type: UInt16, value: ByteBuffer, transactionID: STUNTransactionID) throws(WireError) -> STUNAttribute {
        var value = value
        func requireLength(_ length: Int, _ name: String) throws(WireError) {
            guard value.readableBytes == length else {
                throw .malformed("STUN \(name) must be \(length) bytes, got \(value.readableBytes)")
            }
        }
        func utf8(_ name: String, maxBytes: Int) throws(WireError) -> String {
            guard value.readableBytes <= maxBytes else {
                throw .malformed("STUN \(name) longer than \(maxBytes) bytes")
            }
            let bytes = value.readableBytesView
            guard let string = String(validating: bytes, as: UTF8.self) else {
                throw .malformed("STUN \(name) is not valid UTF-8")
            }
            return string
        }
        switch type {
        case TypeCode.username:
            return .username(try utf8("USERNAME", maxBytes: 513))
        case TypeCode.software:
            return .software(try utf8("SOFTWARE", maxBytes: 763))
        case TypeCode.messageIntegrity:
            try requireLength(20, "MESSAGE-INTEGRITY")
            return .messageIntegrity(Array(value.readableBytesView))
        case TypeCode.fingerprint:
            try requireLength(4, "FINGERPRINT")
            return .fingerprint(try value.readWireInteger(as: UInt32.self, "STUN FINGERPRINT"))
        case TypeCode.priority:
            try requireLength(4, "PRIORITY")
            return .priority(try value.readWireInteger(as: UInt32.self, "STUN PRIORITY"))
        case TypeCode.useCandidate:
            try requireLength(0, "USE-CANDIDATE")
            return .useCandidate
        case TypeCode.iceControlled:
            try requireLength(8, "ICE-CONTROLLED")
            return .iceControlled(try value.readWireInteger(as: UInt64.self, "STUN ICE-CONTROLLED"))
        case TypeCode.iceControlling:
            try requireLength(8, "ICE-CONTROLLING")
            return .iceControlling(try value.readWireInteger(as: UInt64.self, "STUN ICE-CONTROLLING"))
        case TypeCode.errorCode:
            guard value.readableBytes >= 4 else { throw .truncated("STUN ERROR-CODE shorter than 4 bytes") }
            let word = try value.readWireInteger(as: UInt32.self, "STUN ERROR-CODE")
            let errorClass = UInt16((word >> 8) & 0x7)
            let number = UInt16(word & 0xFF)
            guard (3...6).contains(errorClass), number < 100 else {
                throw .malformed("STUN ERROR-CODE class \(errorClass) number \(number) out of range")
            }
            return .errorCode(code: errorClass * 100 + number, reason: try utf8("ERROR-CODE reason", maxBytes: 763))
        case TypeCode.xorMappedAddress, TypeCode.mappedAddress:
            let isXOR = type == TypeCode.xorMappedAddress
            let name = isXOR ? "XOR-MAPPED-ADDRESS" : "MAPPED-ADDRESS"
            _ = try value.readWireInteger(as: UInt8.self, "STUN \(name) reserved")
            let family = try value.readWireInteger(as: UInt8.self, "STUN \(name) family")
            var port = try value.readWireInteger(as: UInt16.self, "STUN \(name) port")
            if isXOR { port ^= UInt16(STUNMessage.magicCookie >> 16) }
            switch family {
            case 0x01:
                guard value.readableBytes == 4 else { throw .malformed("STUN \(name) IPv4 needs 4 address bytes") }
                var address = try value.readWireInteger(as: UInt32.self, "STUN \(name) IPv4")
                if isXOR { address ^= STUNMessage.magicCookie }
                let mapped = TransportAddress(address: .v4(address), port: port)
                return isXOR ? .xorMappedAddress(mapped) : .mappedAddress(mapped)
            case 0x02:
                guard value.readableBytes == 16 else { throw .malformed("STUN \(name) IPv6 needs 16 address bytes") }
                var high = try value.readWireInteger(as: UInt64.self, "STUN \(name) IPv6")
                var low = try value.readWireInteger(as: UInt64.self, "STUN \(name) IPv6")
                if isXOR {
                    high ^= UInt64(STUNMessage.magicCookie) << 32 | UInt64(transactionID.high)
                    low ^= transactionID.low
                }
                let mapped = TransportAddress(address: .v6(high: high, low: low), port: port)
                return isXOR ? .xorMappedAddress(mapped) : .mappedAddress(mapped)
            default:
                throw .malformed("STUN \(name) has unknown address family \(family)")
            }
        default:
            return .other(type: type, value: Array(value.readableBytesView))
        }
    }

    /// Writes the attribute value (without header or padding).
    func encodeValue(into buffer: inout ByteBuffer, transactionID: STUNTransactionID) {
        switch self {
        case .username(let string), .software(let string):
            buffer.writeString(string)
        case .messageIntegrity(let bytes), .other(_, let bytes):
            buffer.writeBytes(bytes)
        case .fingerprint(let value), .priority(let value):
            buffer.writeInteger(value)
        case .useCandidate:
            break
        case .iceControlled(let value), .iceControlling(let value):
            buffer.writeInteger(value)
        case .errorCode(let code, let reason):
            buffer.writeInteger(UInt16(0))
            buffer.writeInteger(UInt8(truncatingIfNeeded: (code / 100) & 0x7))
            buffer.writeInteger(UInt8(truncatingIfNeeded: code % 100))
            buffer.writeString(reason)
        case .xorMappedAddress(let mapped), .mappedAddress(let mapped):
            let isXOR: Bool
            if case .xorMappedAddress = self { isXOR = true } else { isXOR = false }
            buffer.writeInteger(UInt8(0))
            let cookieHigh = UInt16(truncatingIfNeeded: STUNMessage.magicCookie >> 16)
            switch mapped.address {
            case .v4(let address):
                buffer.writeInteger(UInt8(0x01))
                buffer.writeInteger(isXOR ? mapped.port ^ cookieHigh : mapped.port)
                buffer.writeInteger(isXOR ? address ^ STUNMessage.magicCookie : address)
            case .v6(let high, let low):
                buffer.writeInteger(UInt8(0x02))
                buffer.writeInteger(isXOR ? mapped.port ^ cookieHigh : mapped.port)
                if isXOR {
                    buffer.writeInteger(high ^ (UInt64(STUNMessage.magicCookie) << 32 | UInt64(transactionID.high)))
                    buffer.writeInteger(low ^ transactionID.low)
                } else {
                    buffer.writeInteger(high)
                    buffer.writeInteger(low)
                }
            }
        }
    }
}
