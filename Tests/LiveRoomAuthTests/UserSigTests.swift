import Foundation
import Testing

@testable import LiveRoomAuth

@Suite struct UserSigTests {
    static let secret = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e"

    @Test func knownVectorSignature() {
        let sig = UserSig.signature(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", time: 1_700_000_000, expire: 15_552_000)
        #expect(sig == "LvA7d/Iw7gSsnskvVzBDPOCCDbuNCw4GHwTC0bip+B4=")
    }

    @Test func roundTripVerifies() throws {
        let text = UserSig.make(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", time: 1_700_000_000, expire: 15_552_000).encoded()
        #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
        let sig = try UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", now: 1_700_000_100)
        #expect(sig.signature == "LvA7d/Iw7gSsnskvVzBDPOCCDbuNCw4GHwTC0bip+B4=")
    }

    /// A UserSig made the way the public libraries make it (zlib level 9, another field order) verifies.
    @Test func foreignEncodingVerifies() throws {
        let json = """
            {"TLS.sig":"LvA7d/Iw7gSsnskvVzBDPOCCDbuNCw4GHwTC0bip+B4=","TLS.time":1700000000,"TLS.expire":15552000,\
            "TLS.sdkappid":1400000000,"TLS.identifier":"xiaojun","TLS.ver":"2.0"}
            """
        let text = UserSig.encodeBase64URL(Zlib.compress(Array(json.utf8)))
        try UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", now: 1_700_000_100)
    }

    /// UserSigs made by Tencent's published TLSSigAPIv2 library, PyPI `tls-sig-api-v2` 1.1
    /// (https://github.com/tencentyun/tls-sig-api-v2-python), with its clock fixed:
    ///
    ///     pip install --no-deps --target /tmp/tls tls-sig-api-v2==1.1
    ///     PYTHONPATH=/tmp/tls python3 - <<'EOF'
    ///     import time
    ///     import TLSSigAPIv2
    ///     time.time = lambda: 1700000000
    ///     api = TLSSigAPIv2.TLSSigAPIv2(1400000000, "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e")
    ///     print(api.gen_sig("xiaojun", 86400 * 180))
    ///     print(api.gen_sig_with_userbuf("xiaojun", 86400 * 180, b"abc"))
    ///     EOF
    ///
    /// (Python 3.11; the library's JSON has spaces after `:` and `,`, and its own field order.)
    static let tencentUserSig =
        "eJyrVgrxCdYrSy1SslJQMtIzUNJRAItkpqTmlWSmZUIkKjIT87NK82CSxSnZiQUFmSlAKUMTAyiAyqVWFGQWpYJkTE1NjRDiJZm5YFFzNPXFmekgG3zKHM1T9D3LzdODi-OKs8vCqpxcAvydnV2SSv2cy03cPcpDnA2SMgu0nUxslWoBHdYzUg__"
    static let tencentUserSigWithUserbuf =
        "eJyrVgrxCdYrSy1SslJQMtIzUNJRAItkpqTmlWSmZUIkKjIT87NK82CSxSnZiQUFmSlAKUMTAyiAyqVWFGQWpYJkTE1NjRDiJZm5YFFzNPWlxalFSaVpIFsiw72y4FZkpoOEArNCjAwMKwKyI7L1E30NU7UrDcoSs6OSDLyNMgOK3EpTtbUNik0rzZLcfG2VagHdkjl6"

    @Test func aUserSigFromTencentsLibraryDecodesAndVerifies() throws {
        let expected = UserSig(
            identifier: "xiaojun", sdkAppId: 1_400_000_000, time: 1_700_000_000, expire: 15_552_000,
            signature: "LvA7d/Iw7gSsnskvVzBDPOCCDbuNCw4GHwTC0bip+B4=")
        #expect(try UserSig.decode(Self.tencentUserSig) == expected)
        #expect(UserSig.make(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", time: 1_700_000_000, expire: 15_552_000) == expected)
        let lastValidSecond: Int64 = 1_700_000_000 + 15_552_000 - 1
        #expect(try UserSig.verify(Self.tencentUserSig, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", now: lastValidSecond) == expected)
        #expect(throws: UserSigError.checkFailed("UserSig signature does not match this SDKAppID's secret key")) {
            try UserSig.verify(Self.tencentUserSig, sdkAppId: 1_400_000_000, secretKey: "another-secret-key", identifier: "xiaojun", now: 1_700_000_000)
        }
        #expect(throws: UserSigError.checkFailed("UserSig expired at 1715552000 (now 1715552000)")) {
            try UserSig.verify(Self.tencentUserSig, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", now: lastValidSecond + 1)
        }
    }

    /// With a userbuf (what a PrivateMapKey carries) the library signs `TLS.userbuf:` too, and so
    /// does LiveRoom's verification.
    @Test func aUserSigWithAUserbufFromTencentsLibraryVerifies() throws {
        let expected = UserSig(
            identifier: "xiaojun", sdkAppId: 1_400_000_000, time: 1_700_000_000, expire: 15_552_000,
            signature: "QjT201xPkXk/aM1e+y0vakZb0K2iPrFue++0s5y6bFM=", userbuf: "YWJj")
        #expect(try UserSig.decode(Self.tencentUserSigWithUserbuf) == expected)
        #expect(try UserSig.verify(Self.tencentUserSigWithUserbuf, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", now: 1_700_000_000) == expected)
        #expect(UserSig.make(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", time: 1_700_000_000, expire: 15_552_000, userbuf: Array("abc".utf8)) == expected)
        var forged = expected
        forged.userbuf = "YWJk"  // "abd": another buffer under the same signature
        #expect(throws: UserSigError.checkFailed("UserSig signature does not match this SDKAppID's secret key")) {
            try UserSig.verify(forged.encoded(), sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "xiaojun", now: 1_700_000_000)
        }
    }

    @Test func expiredIsRefused() {
        let text = UserSig.make(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "u", time: 1000, expire: 60).encoded()
        #expect(throws: UserSigError.self) {
            try UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "u", now: 1060)
        }
        do {
            try UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "u", now: 2000)
            Issue.record("expired UserSig verified")
        } catch {
            #expect(error.code == -100018)
            #expect(error.message.contains("expired"))
        }
        #expect((try? UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "u", now: 1059)) != nil)
    }

    @Test func mismatchesSayWhich() {
        let text = UserSig.make(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "alice", time: 1000, expire: 600).encoded()
        func failure(app: UInt64 = 1_400_000_000, key: String = Self.secret, user: String = "alice") -> UserSigError? {
            do {
                try UserSig.verify(text, sdkAppId: app, secretKey: key, identifier: user, now: 1001)
            } catch {
                return error
            }
            return nil
        }
        #expect(failure() == nil)
        let wrongUser = failure(user: "bob")
        #expect(wrongUser?.code == -100018)
        #expect(wrongUser?.message.contains("user") == true)
        let wrongApp = failure(app: 1_400_000_001)
        #expect(wrongApp?.message.contains("SDKAppID") == true)
        let wrongKey = failure(key: "other")
        #expect(wrongKey?.message.contains("signature") == true)
    }

    @Test func tamperingIsRefused() throws {
        // Re-sign the JSON with a later expiry but keep the old signature.
        let json = """
            {"TLS.ver":"2.0","TLS.identifier":"alice","TLS.sdkappid":1400000000,"TLS.expire":999999,"TLS.time":1000,\
            "TLS.sig":"\(UserSig.signature(sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "alice", time: 1000, expire: 600))"}
            """
        let forged = UserSig.encodeBase64URL(Zlib.compress(Array(json.utf8)))
        #expect(throws: UserSigError.checkFailed("UserSig signature does not match this SDKAppID's secret key")) {
            try UserSig.verify(forged, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "alice", now: 2000)
        }
    }

    @Test(arguments: ["", "!!!not base64!!!", "aGVsbG8_", UserSig.encodeBase64URL(Zlib.compress(Array("[1,2]".utf8))),
        UserSig.encodeBase64URL(Zlib.compress(Array("{\"TLS.identifier\":\"a\"}".utf8)))])
    func malformedIsRefusedWith3320(text: String) {
        do {
            try UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: Self.secret, identifier: "a", now: 0)
            Issue.record("malformed UserSig verified")
        } catch {
            #expect(error.code == -3320)
        }
    }

    @Test func inflateIsBounded() {
        let big = [UInt8](repeating: 0x41, count: 200_000)
        #expect(Zlib.decompress(Zlib.compress(big), limit: 64 * 1024) == nil)
        #expect(Zlib.decompress(Zlib.compress(Array("abc".utf8)), limit: 16) == Array("abc".utf8))
    }
}
