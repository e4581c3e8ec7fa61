import FuzzSupport
import LiveRoomAuth

/// PrivateMapKeys: the user buffer parser on raw bytes (a parsed buffer must encode back to the
/// same bytes), the whole verification with those bytes signed by the right key (so the parser is
/// reached past the HMAC), and verification of arbitrary text.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    switch mode % 3 {
    case 0:
        if let key = try? PrivateMapKey.parse(userbuf: rest), key.userbuf != rest {
            fatalError("a parsed user buffer does not encode back to its bytes")
        }
    case 1:
        let signed = UserSig.make(sdkAppId: 1_400_000_000, secretKey: "fuzz", identifier: "u", time: 1_700_000_000, expire: 3600, userbuf: rest)
        _ = try? PrivateMapKey.verify(signed.encoded(), sdkAppId: 1_400_000_000, secretKey: "fuzz", userId: "u", room: .string("r"), now: 1_700_000_000)
    default:
        let text = String(decoding: rest, as: UTF8.self)
        _ = try? PrivateMapKey.verify(text, sdkAppId: 1_400_000_000, secretKey: "fuzz", userId: "u", room: .string("r"), now: 1_700_000_000)
    }
    return 0
}

@_cdecl("FuzzPrivateMapKey_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
