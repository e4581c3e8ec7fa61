/// A STUN message type: a 12-bit method and a 2-bit class interleaved in 14 bits
/// (RFC 8489 §5).
public struct STUNMessageType: Hashable, Sendable, CustomStringConvertible {
    /// The message class.
    public enum Class: UInt8, Hashable, Sendable {
        case request = 0b00
        case indication = 0b01
        case successResponse = 0b10
        case errorResponse = 0b11
    }

    /// The STUN method (12 bits); `0x001` is Binding.
    public var method: UInt16
    /// The message class.
    public var messageClass: Class

    /// The Binding method.
    public static let bindingMethod: UInt16 = 0x001

    public static let bindingRequest = STUNMessageType(method: bindingMethod, messageClass: .request)
    public static let bindingIndication = STUNMessageType(method: bindingMethod, messageClass: .indication)
    public static let bindingSuccessResponse = STUNMessageType(method: bindingMethod, messageClass: .successResponse)
    public static let bindingErrorResponse = STUNMessageType(method: bindingMethod, messageClass: .errorResponse)

    /// Creates a message type; `method` is masked to 12 bits.
    public init(method: UInt16, messageClass: Class) {
        self.method = method & 0x0FFF
        self.messageClass = messageClass
    }

    /// Decodes the 16-bit type field. Throws if either of the two top bits is set.
    public init(rawValue: UInt16) throws(WireError) {
        guard rawValue & 0xC000 == 0 else {
            throw .malformed("STUN message type 0x\(String(rawValue, radix: 16)) has top bits set")
        }
        let method = (rawValue & 0x000F) | ((rawValue & 0x00E0) >> 1) | ((rawValue & 0x3E00) >> 2)
        let classBits = UInt8(truncatingIfNeeded: ((rawValue & 0x0010) >> 4) | ((rawValue & 0x0100) >> 7))
        self.method = method
        self.messageClass = Class(rawValue: classBits)!  // two bits, all four values defined
    }

    /// The 16-bit type field.
    public var rawValue: UInt16 {
        let method = self.method & 0x0FFF
        let classBits = UInt16(messageClass.rawValue)
        return (method & 0x000F) | ((method & 0x0070) << 1) | ((method & 0x0F80) << 2)
            | ((classBits & 0b01) << 4) | ((classBits & 0b10) << 7)
    }

    public var description: String {
        "STUN method 0x\(String(method, radix: 16)) \(messageClass)"
    }
}
