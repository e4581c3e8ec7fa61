import LiveRoomAuth

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? UserSig.verify(text, sdkAppId: 1_400_000_000, secretKey: "fuzz", identifier: "u", now: 1_700_000_000)
    return 0
}
