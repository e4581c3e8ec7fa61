import FuzzSupport
import LiveRoomAuth

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: "fuzz", identifier: "u", now: 1_700_000_000)
    return 0
}

@_cdecl("FuzzUserSig_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
