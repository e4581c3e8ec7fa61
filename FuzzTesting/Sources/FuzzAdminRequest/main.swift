import FuzzSupport
import LiveRoomAdmin
import LiveRoomProtocol

/// The first byte picks an action (or an unknown one), the rest is the body: every input is a
/// request or a CloudAPIError, and what parses keeps the promises the server relies on.
/// The same bytes are also read as an IM group message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let first = bytes.first else { return 0 }
    let actions = AdminRequest.actions + ["Unknown\u{0A}Action"]
    let action = actions[Int(first) % actions.count]
    let body = String(decoding: bytes.dropFirst(), as: UTF8.self)
    do throws(CloudAPIError) {
        switch try AdminRequest.parse(action: action, body: body, sdkAppId: 1_400_000_000, now: 1_800_000_000) {
        case .describeRoomInfo(let start, let end, let pageNumber, let pageSize, _):
            precondition(AdminRequest.unixTimes.contains(start) && AdminRequest.unixTimes.contains(end) && start <= end)
            // What the server computes from them must not trap.
            _ = (Int64(end) * 1000 + 999, pageNumber * pageSize)
        case .removeUsers(let room, let userIds):
            precondition((1...10).contains(userIds.count))
            checkRoom(room)
        case .dismissRoom(let room), .describeRoom(let room):
            checkRoom(room)
        case .startPublishCdnStream, .updatePublishCdnStream, .stopPublishCdnStream:
            break
        }
    } catch {
        precondition(!error.message.contains("\n"), "an error message with a newline: \(error.message)")
    }
    _ = try? GroupMessage(body)
    return 0
}

/// A numeric room is 1…4294967295, a string room is not empty, and the room's key names it back.
func checkRoom(_ room: RoomID) {
    switch room {
    case .number(let number): precondition(number != 0)
    case .string(let id): precondition(!id.isEmpty)
    }
    precondition(RoomID(key: room.key) == room)
}

@_cdecl("FuzzAdminRequest_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
