/// One SEI message as TRTC's `sendSEIMsg` sends it: a payload type and the sender's bytes
/// (ITU-T H.264 D.1). Payload type 5 (user_data_unregistered) starts with a 16-byte UUID.
public struct SEIMessage: Sendable, Hashable, Codable {
    /// The sei_message payloadType: 242 by default (TRTC's), 5, or 100–254 except 244.
    public var payloadType: Int
    /// The 16-byte UUID of a payload type 5 message; nil for every other type.
    public var uuid: [UInt8]?
    /// The sender's bytes.
    public var data: [UInt8]

    public init(payloadType: Int = SEIMessage.defaultPayloadType, uuid: [UInt8]? = nil, data: [UInt8]) {
        self.payloadType = payloadType
        self.uuid = uuid
        self.data = data
    }

    /// TRTC's payload type for its own players.
    public static let defaultPayloadType = 242
    /// The most bytes of data one message carries (TRTC: 1 KB).
    public static let maxDataLength = 1000
    /// The UUID a payload type 5 message gets when the sender names none.
    public static let defaultUUID: [UInt8] = Array("LiveRoomSEIData!".utf8)

    /// Whether `type` is a payload type a sender may use: 5, or 100–254 except 244 (which
    /// TRTC keeps for its timestamp SEI).
    public static func isAllowedPayloadType(_ type: Int) -> Bool {
        type == 5 || ((100...254).contains(type) && type != 244)
    }

    /// The bytes of the sei_message payload: the UUID (type 5) then the data.
    public var payload: [UInt8] {
        (uuid ?? []) + data
    }
}

/// What LiveRoom adds to each message it sends, as a payload type 5 message with its own
/// UUID placed right before it: the sender's number for the message (so receivers report a
/// message once however many frames repeat it) and when it was sent (wall clock, ms), from
/// which viewers measure latency. Players that do not know the UUID skip it.
public struct SEITag: Sendable, Hashable {
    public var sequence: UInt32
    public var sentAtMilliseconds: UInt64

    public init(sequence: UInt32, sentAtMilliseconds: UInt64) {
        self.sequence = sequence
        self.sentAtMilliseconds = sentAtMilliseconds
    }

    /// The UUID of LiveRoom's tag messages.
    public static let uuid: [UInt8] = Array("LiveRoomSEITag01".utf8)
    static let version: UInt8 = 1

    /// The tag as a payload type 5 message.
    public var message: SEIMessage {
        var data: [UInt8] = [Self.version]
        for shift in stride(from: 24, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: sequence >> UInt32(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: sentAtMilliseconds >> UInt64(shift))) }
        return SEIMessage(payloadType: 5, uuid: Self.uuid, data: data)
    }

    /// The tag a message is, or nil when it is none.
    public init?(_ message: SEIMessage) {
        guard message.payloadType == 5, message.uuid == Self.uuid, message.data.count == 13, message.data[0] == Self.version else { return nil }
        sequence = message.data[1...4].reduce(0) { $0 << 8 | UInt32($1) }
        sentAtMilliseconds = message.data[5...12].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A message with the tag that came before it, if any.
public struct TaggedSEIMessage: Sendable, Hashable {
    public var message: SEIMessage
    public var tag: SEITag?

    public init(message: SEIMessage, tag: SEITag? = nil) {
        self.message = message
        self.tag = tag
    }
}

extension Array where Element == UInt8 {
    /// The bytes as lowercase hex without separators (`"4c52"`).
    public var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(count * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
