import FuzzSupport
import LiveRoomProtocol

/// Any bytes are either a server event or a LiveRoomError; never a crash. What parses round-trips.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let event = try? ServerEvent.parse(text) {
        precondition((try? ServerEvent.parse(event.json.jsonText)) == event)
    }
    return 0
}

@_cdecl("FuzzServerEvent_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
