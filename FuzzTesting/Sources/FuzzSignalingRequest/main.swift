import LiveRoomCore

/// Any bytes are either a request or a LiveRoomError; never a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let request = try? SignalingRequest.parse(text) {
        // What parses must round-trip.
        precondition((try? SignalingRequest.parse(request.json.jsonText)) == request)
    }
    return 0
}
