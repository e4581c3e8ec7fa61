import Foundation

/// A TLSSigAPIv2 PrivateMapKey: a permission ticket for one user in one room. It is a UserSig
/// whose signed content also carries a user buffer (`TLS.userbuf`) naming the room, an expiry
/// and the privileges, as Tencent's public libraries make it with `genPrivateMapKey` (numeric
/// room) and `genPrivateMapKeyWithStringRoomID` (string room).
///
/// The user buffer, big-endian: version (1 byte: 0 numeric room, 1 string room), user id length
/// (2) and bytes, SDKAppID (4), numeric room id (4, 0 for a string room), expiry as seconds since
/// 1970 (4), privilege map (4), account type (4, always 0), and for version 1 the string room
/// id's length (2) and bytes.
public struct PrivateMapKey: Sendable, Hashable {
    /// The privilege map's bits.
    public struct Privileges: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let createRoom = Privileges(rawValue: 1)
        public static let enterRoom = Privileges(rawValue: 2)
        public static let sendAudio = Privileges(rawValue: 4)
        public static let receiveAudio = Privileges(rawValue: 8)
        public static let sendVideo = Privileges(rawValue: 16)
        public static let receiveVideo = Privileges(rawValue: 32)
        public static let sendSubStream = Privileges(rawValue: 64)
        public static let receiveSubStream = Privileges(rawValue: 128)
        /// 255: every privilege in the room.
        public static let all = Privileges(rawValue: 255)
        /// 42: enter and receive audio and video, nothing sent.
        public static let enterAndReceive: Privileges = [.enterRoom, .receiveAudio, .receiveVideo]

        static let names: [(Privileges, String)] = [
            (.createRoom, "create room"), (.enterRoom, "enter room"), (.sendAudio, "send audio"), (.receiveAudio, "receive audio"),
            (.sendVideo, "send video"), (.receiveVideo, "receive video"), (.sendSubStream, "send sub-stream"),
            (.receiveSubStream, "receive sub-stream"),
        ]

        /// `send audio (4)`, `enter room (2), send video (16)`.
        public var description: String {
            let parts = Self.names.filter { contains($0.0) }.map { "\($0.1) (\($0.0.rawValue))" }
            return parts.isEmpty ? "none (0)" : parts.joined(separator: ", ")
        }
    }

    /// The room a key is for.
    public enum Room: Sendable, Hashable, CustomStringConvertible {
        /// TRTC's numeric room id (version 0 keys).
        case numeric(UInt32)
        /// TRTC's string room id (version 1 keys).
        case string(String)

        public var description: String {
            switch self {
            case .string(let id): "room \"\(id)\""
            case .numeric(let number): "room \(number)"
            }
        }
    }

    public var userId: String
    public var sdkAppId: UInt32
    public var room: Room
    /// Seconds since 1970 when the privileges end.
    public var expiresAt: UInt32
    public var privileges: Privileges
    public var accountType: UInt32

    public init(userId: String, sdkAppId: UInt32, room: Room, expiresAt: UInt32, privileges: Privileges, accountType: UInt32 = 0) {
        self.userId = userId
        self.sdkAppId = sdkAppId
        self.room = room
        self.expiresAt = expiresAt
        self.privileges = privileges
        self.accountType = accountType
    }

    /// TRTC's code for a PrivateMapKey that is missing, does not verify, or lacks a privilege
    /// (ERR_SERVER_INFO_PRIVILEGE_FLAG_ERROR).
    public static let errorCode = -100006
    /// The longest user buffer accepted: the fixed fields with a 32-byte user id and a 64-byte room id (TRTC's limits).
    static let maxUserbufBytes = 1 + 2 + 32 + 20 + 2 + 64

    /// The user buffer's bytes.
    public var userbuf: [UInt8] {
        var bytes: [UInt8] = []
        func append32(_ value: UInt32) { bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func appendString(_ text: String) {
            let utf8 = Array(text.utf8.prefix(0xFFFF))
            bytes += [UInt8(utf8.count >> 8), UInt8(utf8.count & 0xFF)] + utf8
        }
        switch room {
        case .numeric: bytes.append(0)
        case .string: bytes.append(1)
        }
        appendString(userId)
        append32(sdkAppId)
        if case .numeric(let number) = room { append32(number) } else { append32(0) }
        append32(expiresAt)
        append32(privileges.rawValue)
        append32(accountType)
        if case .string(let id) = room { appendString(id) }
        return bytes
    }

    /// Reads a user buffer; every field must be there and nothing after them.
    public static func parse(userbuf bytes: [UInt8]) throws(PrivateMapKeyError) -> PrivateMapKey {
        var index = 0
        func take(_ count: Int) throws(PrivateMapKeyError) -> ArraySlice<UInt8> {
            guard count <= bytes.count - index else { throw PrivateMapKeyError("the PrivateMapKey's user buffer ends early") }
            defer { index += count }
            return bytes[index..<(index + count)]
        }
        func read32() throws(PrivateMapKeyError) -> UInt32 { try take(4).reduce(0) { $0 << 8 | UInt32($1) } }
        func readString(_ name: String) throws(PrivateMapKeyError) -> String {
            let length = try take(2).reduce(0) { $0 << 8 | Int($1) }
            guard let text = String(validating: try take(length), as: UTF8.self) else {
                throw PrivateMapKeyError("the PrivateMapKey's \(name) is not UTF-8")
            }
            return text
        }
        let version = try take(1).first!
        guard version <= 1 else { throw PrivateMapKeyError("the PrivateMapKey's user buffer has version \(version); 0 and 1 are known") }
        let userId = try readString("user id")
        let sdkAppId = try read32()
        let numericRoom = try read32()
        let expiresAt = try read32()
        let privileges = Privileges(rawValue: try read32())
        let accountType = try read32()
        guard version == 0 || numericRoom == 0 else {
            throw PrivateMapKeyError("the PrivateMapKey's user buffer names a string room and numeric room \(numericRoom) at once")
        }
        let room: Room = version == 0 ? .numeric(numericRoom) : .string(try readString("room id"))
        guard index == bytes.count else { throw PrivateMapKeyError("the PrivateMapKey's user buffer has \(bytes.count - index) bytes too many") }
        return PrivateMapKey(userId: userId, sdkAppId: sdkAppId, room: room, expiresAt: expiresAt, privileges: privileges, accountType: accountType)
    }

    /// Makes a key as `genPrivateMapKey` / `genPrivateMapKeyWithStringRoomID` do: valid for
    /// `expire` seconds from `time` (both as signature expiry and as privilege expiry).
    public static func make(
        sdkAppId: UInt64, secretKey: String, userId: String, room: Room, privileges: Privileges, time: Int64, expire: Int64
    ) -> String {
        let key = PrivateMapKey(
            userId: userId, sdkAppId: UInt32(truncatingIfNeeded: sdkAppId), room: room,
            expiresAt: UInt32(truncatingIfNeeded: time + expire), privileges: privileges)
        return UserSig.make(sdkAppId: sdkAppId, secretKey: secretKey, identifier: userId, time: time, expire: expire, userbuf: key.userbuf).encoded()
    }

    /// Checks a key for a user entering a room: the signature (with the secret key), the user,
    /// the SDKAppID, the room and both expiries. The privileges are the caller's to check.
    ///
    /// A numeric-room key admits exactly that numeric room and a string-room key exactly that
    /// string room, as in TRTC: a key for room 123 does not admit room "123".
    public static func verify(
        _ text: String, sdkAppId: UInt64, secretKey: String, userId: String, room: Room, now: Int64
    ) throws(PrivateMapKeyError) -> PrivateMapKey {
        let sig: UserSig
        do {
            sig = try UserSig.verify(text, sdkAppId: sdkAppId, secretKey: secretKey, identifier: userId, now: now)
        } catch {
            throw PrivateMapKeyError("the PrivateMapKey does not verify: \(error.message.replacingOccurrences(of: "UserSig", with: "it"))")
        }
        guard let encoded = sig.userbuf else { throw PrivateMapKeyError("this is a UserSig, not a PrivateMapKey: it has no TLS.userbuf") }
        guard encoded.utf8.count <= (maxUserbufBytes + 2) / 3 * 4 + 4, let bytes = Data(base64Encoded: encoded) else {
            throw PrivateMapKeyError("the PrivateMapKey's TLS.userbuf is not base64 of a user buffer")
        }
        let key = try parse(userbuf: Array(bytes))
        guard key.userId == userId else { throw PrivateMapKeyError("the PrivateMapKey's user buffer names another user") }
        guard UInt64(key.sdkAppId) == sdkAppId else { throw PrivateMapKeyError("the PrivateMapKey's user buffer names SDKAppID \(key.sdkAppId)") }
        guard key.room == room else { throw PrivateMapKeyError("the PrivateMapKey is for \(key.room), not \(room)") }
        guard Int64(key.expiresAt) > now else { throw PrivateMapKeyError("the PrivateMapKey's privileges expired at \(key.expiresAt) (now \(now))") }
        return key
    }
}

/// Why a PrivateMapKey was refused or a privilege is missing; always TRTC's -100006.
public struct PrivateMapKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var code: Int { PrivateMapKey.errorCode }
    public init(_ message: String) { self.message = message }
    public var description: String { "\(code): \(message)" }
}
