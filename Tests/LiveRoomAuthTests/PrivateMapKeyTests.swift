import Foundation
import Testing

@testable import LiveRoomAuth

@Suite struct PrivateMapKeyTests {
    static let secret = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e"
    static let appId: UInt64 = 1_400_000_000

    /// PrivateMapKeys made with Tencent's published TLSSigAPIv2 library, PyPI `tls-sig-api-v2`
    /// 1.1, signing a user buffer laid out as its `genPrivateMapKey` and
    /// `genPrivateMapKeyWithStringRoomID` lay it out, with the clock fixed:
    ///
    ///     pip install --no-deps --target /tmp/tls tls-sig-api-v2==1.1
    ///     PYTHONPATH=/tmp/tls python3 - <<'PY'
    ///     import struct, time
    ///     import TLSSigAPIv2
    ///     time.time = lambda: 1700000000
    ///     api = TLSSigAPIv2.TLSSigAPIv2(1400000000, "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e")
    ///     def userbuf(account, room_number, expire, privileges, room_string):
    ///         buf = bytes([1 if room_string else 0]) + struct.pack(">H", len(account)) + account.encode()
    ///         buf += struct.pack(">IIIII", 1400000000, room_number, int(time.time()) + expire, privileges, 0)
    ///         if room_string: buf += struct.pack(">H", len(room_string)) + room_string.encode()
    ///         return buf
    ///     print(api.gen_sig_with_userbuf("xiaojun", 86400 * 180, userbuf("xiaojun", 10000, 86400 * 180, 255, "")))
    ///     print(api.gen_sig_with_userbuf("fan_1", 3600, userbuf("fan_1", 0, 3600, 42, "shop 1")))
    ///     PY
    static let tencentNumericRoomKey =
        "eJxdjl0LgjAUhv*K7Lbwi6QP6GKFqDDCSgi629xcS9PhV0r031Ozgt6bA89zDud9gAAd1ZrlYKUAU9XBVBmIoCwtRSTeohE4u1bpRxY0xlIK2iljpo8ZHWukyFlvLMsyf7wUt4HO--arguWkivovEEKXOcmFmNIgya4NeEe24f4c2xrs4y*G8a0heH-WLmFNrObuco9ncEMcHCNs600xqTWKQs9nnJyikByQtwbPF*BNRVk_"
    static let tencentStringRoomKey =
        "eJxdjtsKgkAQhl9F9jo8JZ2gi0UyiDAyi-AmdF11kPV8WIrePTXzov9q*L6Z4X8h*3gRG1qgjYBUUUYzYSDg06SCAL4icJOH8lOlH7tZBn4nFE0eMzrKMyhoZ*aLiVXAeqIs-3brkhZeHfT-8RkbDjPq*9OwSazhIfubLfFhyvFIiBo1RMd8qgJhf844065WvCa0hVWzs3WpNV12SE*5pFmOGnIIU89LzFtEtuj9AS1SRmg_"

    @Test func keysFromTencentsLibraryVerifyWithTheirRoomAndPrivileges() throws {
        let numeric = try PrivateMapKey.verify(Self.tencentNumericRoomKey, sdkAppId: Self.appId, secretKey: Self.secret, userId: "xiaojun", room: .numeric(10000), now: 1_700_000_000)
        #expect(numeric == PrivateMapKey(userId: "xiaojun", sdkAppId: 1_400_000_000, room: .numeric(10000), expiresAt: 1_715_552_000, privileges: .all))
        let string = try PrivateMapKey.verify(Self.tencentStringRoomKey, sdkAppId: Self.appId, secretKey: Self.secret, userId: "fan_1", room: .string("shop 1"), now: 1_700_003_599)
        #expect(string.room == .string("shop 1") && string.privileges == .enterAndReceive && string.privileges.rawValue == 42)
        #expect(string.privileges.description == "enter room (2), receive audio (8), receive video (32)")
        // Our generator makes the same bytes the library signed.
        let ours = try UserSig.decode(PrivateMapKey.make(sdkAppId: Self.appId, secretKey: Self.secret, userId: "fan_1", room: .string("shop 1"), privileges: .enterAndReceive, time: 1_700_000_000, expire: 3600))
        #expect(ours == (try UserSig.decode(Self.tencentStringRoomKey)))
    }

    @Test func aKeyIsRefusedForAnotherRoomUserAppOrSecretAndOnceExpired() throws {
        func refusal(
            _ key: String, user: String = "fan_1", room: PrivateMapKey.Room = .string("shop 1"), appId: UInt64 = Self.appId, secret: String = Self.secret,
            now: Int64 = 1_700_000_000
        ) -> String? {
            do {
                _ = try PrivateMapKey.verify(key, sdkAppId: appId, secretKey: secret, userId: user, room: room, now: now)
                return nil
            } catch {
                #expect(error.code == -100006)
                return error.message
            }
        }
        let key = Self.tencentStringRoomKey
        #expect(refusal(key) == nil)
        #expect(refusal(key, room: .string("shop 2"))?.contains(#"for room "shop 1", not room "shop 2""#) == true)
        // A numeric room's key admits that numeric room only, not the string room of its digits (nor the other way).
        #expect(refusal(Self.tencentNumericRoomKey, user: "xiaojun", room: .numeric(10000)) == nil)
        #expect(refusal(Self.tencentNumericRoomKey, user: "xiaojun", room: .string("10000"))?.contains(#"for room 10000, not room "10000""#) == true)
        #expect(refusal(Self.tencentNumericRoomKey, user: "xiaojun", room: .numeric(10001))?.contains("for room 10000, not room 10001") == true)
        let digits = PrivateMapKey.make(sdkAppId: Self.appId, secretKey: Self.secret, userId: "fan_1", room: .string("10000"), privileges: .all, time: 1_700_000_000, expire: 60)
        #expect(refusal(digits, room: .numeric(10000))?.contains(#"for room "10000", not room 10000"#) == true)
        #expect(refusal(key, user: "fan_2")?.contains(#"made for user "fan_1", not "fan_2""#) == true)
        #expect(refusal(key, appId: 1_400_000_001)?.contains("SDKAppID") == true)
        #expect(refusal(key, secret: "another")?.contains("signature does not match") == true)
        #expect(refusal(key, now: 1_700_003_600)?.contains("expired") == true)
        let plain = UserSig.make(sdkAppId: Self.appId, secretKey: Self.secret, identifier: "fan_1", time: 1_700_000_000, expire: 60).encoded()
        #expect(refusal(plain)?.contains("not a PrivateMapKey") == true)
        #expect(refusal("")?.contains("does not verify") == true)
        // A signed buffer that says something else than the signature's own expiry still ends at its own.
        let shortLived = PrivateMapKey(userId: "fan_1", sdkAppId: 1_400_000_000, room: .string("shop 1"), expiresAt: 1_700_000_010, privileges: .all)
        let signed = UserSig.make(sdkAppId: Self.appId, secretKey: Self.secret, identifier: "fan_1", time: 1_700_000_000, expire: 3600, userbuf: shortLived.userbuf).encoded()
        #expect(refusal(signed, now: 1_700_000_009) == nil)
        #expect(refusal(signed, now: 1_700_000_010)?.contains("privileges expired") == true)
    }

    @Test func userBuffersRoundTripAndMalformedOnesAreRefused() throws {
        for room in [PrivateMapKey.Room.numeric(0), .numeric(.max), .string("a"), .string(String(repeating: "r", count: 64))] {
            let key = PrivateMapKey(userId: "u", sdkAppId: 7, room: room, expiresAt: 99, privileges: [.enterRoom, .sendVideo])
            #expect(try PrivateMapKey.parse(userbuf: key.userbuf) == key)
        }
        let valid = PrivateMapKey(userId: "u", sdkAppId: 7, room: .string("r"), expiresAt: 99, privileges: .all).userbuf
        for cut in 0..<valid.count {
            #expect(throws: PrivateMapKeyError.self) { try PrivateMapKey.parse(userbuf: Array(valid.prefix(cut))) }
        }
        #expect(throws: PrivateMapKeyError("the PrivateMapKey's user buffer has 1 bytes too many")) { try PrivateMapKey.parse(userbuf: valid + [0]) }
        #expect(throws: PrivateMapKeyError("the PrivateMapKey's user buffer has version 2; 0 and 1 are known")) { try PrivateMapKey.parse(userbuf: [2] + valid.dropFirst()) }
        #expect(throws: PrivateMapKeyError("the PrivateMapKey's user buffer ends early")) { try PrivateMapKey.parse(userbuf: [1, 0xFF, 0xFF]) }
        // Found by FuzzPrivateMapKey: a string-room buffer with a numeric room id would not encode back.
        var both = valid
        both[1 + 2 + 1 + 4] = 1
        #expect(throws: PrivateMapKeyError("the PrivateMapKey's user buffer names a string room and numeric room 16777216 at once")) { try PrivateMapKey.parse(userbuf: both) }
    }
}
