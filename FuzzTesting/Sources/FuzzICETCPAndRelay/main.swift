import FuzzSupport
import LiveRoomServer

/// The media port's other doors (``MediaPortHarness``): the first byte picks one. Even: the
/// rest is the byte stream of a new ICE-TCP connection, through its RFC 4571 framing to the
/// loop. Odd: the rest is the body of a node relay datagram sealed with the cluster's key (so
/// it gets past authentication to the decoding and the relay's book), then a turn of the timers.
nonisolated(unsafe) let harness = try! MediaPortHarness()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    if first & 1 == 0 {
        harness.runTCP(rest)
    } else {
        // Operation 4 (a sealed relay datagram) on either loop, its length capped at 255, then the timers.
        let body = Array(rest.prefix(255))
        harness.run([first & 0x08 | 4, UInt8(body.count)] + body + [5, 0])
    }
    return 0
}

@_cdecl("FuzzICETCPAndRelay_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
