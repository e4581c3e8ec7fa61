import FuzzSupport
import LiveRoomServer

/// The media port's datagram path as the server runs it (``MediaPortHarness``): two loops and
/// their hand-offs, ICE-lite, DTLS, SRTP and RTCP of a real publisher and subscriber, the SFU,
/// and the node relay. Each input is a list of operations; none may trap.
nonisolated(unsafe) let harness = try! MediaPortHarness()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    harness.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@_cdecl("FuzzMediaPort_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
