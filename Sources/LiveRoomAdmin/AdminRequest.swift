import Foundation
import LiveRoomProtocol
import LiveRoomPublishTasks

/// A Tencent Cloud API 3.0 error: a dotted code name (`InvalidParameter.RoomId`) and a message.
public struct CloudAPIError: Error, Equatable, Sendable {
    public var code: String
    public var message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// One admin REST call (`POST /v1/<Action>`), read and range-checked: what the server runs
/// never sees an unchecked number or a missing field.
public enum AdminRequest: Sendable {
    /// `DismissRoom` (a numeric room) or `DismissRoomByStrRoomId` (a string room).
    case dismissRoom(room: RoomID)
    /// `RemoveUser` or `RemoveUserByStrRoomId`: 1 to 10 user ids.
    case removeUsers(room: RoomID, userIds: [String])
    case describeRoom(room: RoomID)
    /// Times in Unix seconds within ``unixTimes``, `start <= end`; `pageNumber * pageSize`
    /// cannot overflow.
    case describeRoomInfo(start: Int, end: Int, pageNumber: Int, pageSize: Int, room: RoomID?)
    case startPublishCdnStream(AdminPublishCdnStreamRequest, PublishTaskConfig)
    case updatePublishCdnStream(AdminPublishCdnStreamRequest)
    case stopPublishCdnStream(taskId: String)
    /// The room's catalogue.
    case describeProducts(room: RoomID)
    /// Adds a product: its fields as on signaling (checked by the server).
    case addProduct(room: RoomID, product: JSONValue)
    /// Changes a product: the changed fields and the `version` they were based on.
    case modifyProduct(room: RoomID, itemNumber: Int, changes: JSONValue)
    case removeProduct(room: RoomID, itemNumber: Int)
    /// Removes a replay of the room's products, with its file.
    case removeReplay(room: RoomID, replayId: String)
    /// The room's orders, newest first: all, or those in one `state`; `limit` (1–1000) of them
    /// after skipping `offset`.
    case describeOrders(room: RoomID, state: String?, offset: Int, limit: Int)
    /// The shop's backend saw the payment: a reserved order becomes paid.
    case confirmOrder(orderId: String)
    /// A reserved order is cancelled and its stock goes back.
    case cancelOrder(orderId: String)
    /// The newest `limit` (1–100) PK battles the room fought in, with their results.
    case describePKBattles(room: RoomID, limit: Int)
    /// The users who may change the room's shop.
    case describeShopOwners(room: RoomID)
    /// Names the users who may change the room's shop (0 to 20; none lets the next anchor to
    /// enter claim it).
    case setShopOwners(room: RoomID, userIds: [String])
    /// Names the rooms whose anchors may link with this room's by connectOtherRoom without a
    /// request (0 to 20; the room must be open, and keeps the list while it is).
    case setPKAllowList(room: RoomID, allowed: [RoomID])

    /// The room whose live state the call reads or changes (its members, its tasks, the events
    /// its clients get), so that a cluster carries the call out on the room's home node; nil
    /// for calls on stored state only, and for those that name an order or a task.
    public var liveRoom: RoomID? {
        switch self {
        case .dismissRoom(let room), .removeUsers(let room, _), .describeRoom(let room), .addProduct(let room, _), .modifyProduct(let room, _, _),
            .removeProduct(let room, _), .removeReplay(let room, _), .setShopOwners(let room, _), .setPKAllowList(let room, _):
            room
        case .startPublishCdnStream(let request, _):
            RoomID(key: request.roomId)
        case .describeRoomInfo, .updatePublishCdnStream, .stopPublishCdnStream, .describeProducts, .describeOrders, .confirmOrder, .cancelOrder,
            .describePKBattles, .describeShopOwners:
            nil
        }
    }

    /// The actions this API knows.
    public static let actions = [
        "DismissRoom", "DismissRoomByStrRoomId", "RemoveUser", "RemoveUserByStrRoomId", "DescribeRoom", "DescribeRoomInfo",
        "StartPublishCdnStream", "UpdatePublishCdnStream", "StopPublishCdnStream", "DescribeProducts", "AddProduct", "ModifyProduct",
        "RemoveProduct", "RemoveReplay", "DescribeOrders", "ConfirmOrder", "CancelOrder", "DescribePKBattles", "DescribeShopOwners",
        "SetShopOwners", "SetPKAllowList",
    ]

    /// The states `DescribeOrders` may ask for.
    public static let orderStates = ["reserved", "paid", "cancelled", "expired"]

    /// Unix times (seconds) an admin call may name: 1970 to 2100. Milliseconds of any of them fit
    /// an Int64, so a huge `EndTime` is refused instead of overflowing.
    public static let unixTimes = 0...4_102_444_800
    /// The highest `PageNumber` of `DescribeRoomInfo`: with 100 rooms a page, ten million rooms.
    public static let maxPageNumber = 100_000
    /// The highest `Offset` of `DescribeOrders`.
    public static let maxOrderOffset = 10_000_000
    /// The largest request body the server reads.
    public static let maxBodyBytes = 1 << 20

    /// Reads `action` with its JSON `body`. `now` (Unix seconds) gives `DescribeRoomInfo` its
    /// default time range (the last day).
    public static func parse(action: String, body: String, sdkAppId: UInt64, now: Int) throws(CloudAPIError) -> AdminRequest {
        guard actions.contains(action) else {
            throw CloudAPIError("InvalidAction", "unknown action \(action.quoted); known: \(actions.joined(separator: ", "))")
        }
        let p = try fields(body)
        let params = JSONValue.object(p.object)
        let appId = try read { () throws(LiveRoomError) in try p.requiredInt("SdkAppId") }
        guard appId == Int(exactly: sdkAppId) else {
            throw CloudAPIError("InvalidParameter.SdkAppId", "SdkAppId \(appId) is not this server's (\(sdkAppId))")
        }
        switch action {
        case "DismissRoom":
            return .dismissRoom(room: try roomNumber(p))
        case "DismissRoomByStrRoomId":
            return .dismissRoom(room: try strRoomId(p))
        case "RemoveUser", "RemoveUserByStrRoomId":
            let room = action == "RemoveUser" ? try roomNumber(p) : try strRoomId(p)
            return .removeUsers(room: room, userIds: try userIds(p, 1...10))
        case "DescribeRoom":
            return .describeRoom(room: try room(p))
        case "DescribeRoomInfo":
            let (start, end, pageNumber, pageSize) = try read { () throws(LiveRoomError) in
                (
                    try p.int("StartTime", in: unixTimes) ?? max(0, now - 86_400), try p.int("EndTime", in: unixTimes) ?? now,
                    try p.int("PageNumber", in: 0...maxPageNumber) ?? 0,
                    try p.int("PageSize", in: 1...100) ?? 100
                )
            }
            guard start <= end else { throw CloudAPIError("InvalidParameter.StartTime", "StartTime is after EndTime") }
            let room = p.has("RoomId") ? try room(p) : nil
            return .describeRoomInfo(start: start, end: end, pageNumber: pageNumber, pageSize: pageSize, room: room)
        case "StartPublishCdnStream":
            let (request, config) = try task { () throws(LiveRoomError) in try AdminPublishCdnStreamRequest.parseStart(params) }
            return .startPublishCdnStream(request, config)
        case "UpdatePublishCdnStream":
            return .updatePublishCdnStream(try task { () throws(LiveRoomError) in try AdminPublishCdnStreamRequest.parseUpdate(params) })
        case "DescribeProducts":
            return .describeProducts(room: try room(p))
        case "AddProduct":
            return .addProduct(room: try room(p), product: try read { () throws(LiveRoomError) in try p.requiredObject("Product") })
        case "ModifyProduct":
            let (itemNumber, changes) = try read { () throws(LiveRoomError) in (try p.requiredInt("ItemNumber"), try p.requiredObject("Changes")) }
            return .modifyProduct(room: try room(p), itemNumber: itemNumber, changes: changes)
        case "RemoveProduct":
            return .removeProduct(room: try room(p), itemNumber: try read { () throws(LiveRoomError) in try p.requiredInt("ItemNumber") })
        case "RemoveReplay":
            return .removeReplay(room: try room(p), replayId: try read { () throws(LiveRoomError) in try p.requiredString("ReplayId") })
        case "DescribeOrders":
            let (state, offset, limit) = try read { () throws(LiveRoomError) in
                (try p.string("State"), try p.int("Offset", in: 0...maxOrderOffset) ?? 0, try p.int("Limit", in: 1...1000) ?? 100)
            }
            if let state, !orderStates.contains(state) {
                throw CloudAPIError("InvalidParameter.State", "State must be one of \(orderStates.joined(separator: ", ")), not \(state.quoted)")
            }
            return .describeOrders(room: try room(p), state: state, offset: offset, limit: limit)
        case "DescribeShopOwners":
            return .describeShopOwners(room: try room(p))
        case "SetShopOwners":
            return .setShopOwners(room: try room(p), userIds: try userIds(p, 0...20))
        case "SetPKAllowList":
            return .setPKAllowList(room: try room(p), allowed: try allowedRooms(p))
        case "DescribePKBattles":
            return .describePKBattles(room: try room(p), limit: try read { () throws(LiveRoomError) in try p.int("Limit", in: 1...100) ?? 20 })
        case "ConfirmOrder", "CancelOrder":
            let orderId = try read { () throws(LiveRoomError) in try p.requiredString("OrderId") }
            guard (1...64).contains(orderId.count) else { throw CloudAPIError("InvalidParameter.OrderId", "OrderId must be 1-64 characters") }
            return action == "ConfirmOrder" ? .confirmOrder(orderId: orderId) : .cancelOrder(orderId: orderId)
        default:  // "StopPublishCdnStream"
            return .stopPublishCdnStream(taskId: try task { () throws(LiveRoomError) in try AdminPublishCdnStreamRequest.parseStopTaskId(params) })
        }
    }

    /// A publish task error as the Tencent Cloud error name, with LiveRoom's numeric code in the message.
    public static func cloudError(_ error: LiveRoomError) -> CloudAPIError {
        CloudAPIError(ErrorCode.cloudErrorName(for: error), "\(error.code): \(error.message)")
    }

    private static func fields(_ body: String) throws(CloudAPIError) -> JSONFields {
        let text = body.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let value = text.isEmpty ? [:] : try? JSONValue.parse(text) else {
            throw CloudAPIError("InvalidParameter.JsonParseError", "the request body is not valid JSON")
        }
        guard value.objectValue != nil else {
            throw CloudAPIError("InvalidParameter", "the request body must be a JSON object, not \(value.typeName)")
        }
        // Tencent Cloud callers may send integers as text ("SdkAppId": "1400000000").
        do throws(LiveRoomError) {
            return try JSONFields(value, integersMayBeText: true)
        } catch {
            throw CloudAPIError("InvalidParameter", error.message)
        }
    }

    /// Reads parameters, turning a reading error into `MissingParameter` or `InvalidParameter.<Name>`.
    /// The `UserIds` array, of a count in `counts`.
    private static func userIds(_ p: JSONFields, _ counts: ClosedRange<Int>) throws(CloudAPIError) -> [String] {
        let userIds = try read { () throws(LiveRoomError) in
            guard let userIds = try p.stringArray("UserIds") else { throw p.missing("UserIds") }
            return userIds
        }
        guard counts.contains(userIds.count) else {
            throw CloudAPIError("InvalidParameter.UserIds", "UserIds must hold \(counts.lowerBound) to \(counts.upperBound) user ids, not \(userIds.count)")
        }
        return userIds
    }

    private static func read<T>(_ body: () throws(LiveRoomError) -> T) throws(CloudAPIError) -> T {
        do {
            return try body()
        } catch where error.code == ErrorCode.missingField {
            throw CloudAPIError("MissingParameter", error.message)
        } catch {
            throw CloudAPIError("InvalidParameter.\(error.field ?? "")", error.message)
        }
    }

    private static func task<T>(_ body: () throws(LiveRoomError) -> T) throws(CloudAPIError) -> T {
        do {
            return try body()
        } catch {
            throw cloudError(error)
        }
    }

    /// `RoomId` of a string room: a non-empty string.
    private static func strRoomId(_ p: JSONFields) throws(CloudAPIError) -> RoomID {
        let roomId = try read { () throws(LiveRoomError) in try p.string("RoomId") } ?? ""
        guard !roomId.isEmpty else {
            throw CloudAPIError("InvalidParameter.RoomId", "RoomId is missing or empty")
        }
        return .string(roomId)
    }

    /// `RoomId` of a numeric room: an integer 1–4294967295 (or its decimal text).
    private static func roomNumber(_ p: JSONFields) throws(CloudAPIError) -> RoomID {
        guard let number = try read({ () throws(LiveRoomError) in try p.int("RoomId", in: 1...Int(UInt32.max)) }) else {
            throw CloudAPIError("InvalidParameter.RoomId", "RoomId is missing; it is the numeric room's id, 1–4294967295")
        }
        return .number(UInt32(number))
    }

    /// `AllowedRoomIds`: up to ``RoomRequest/maxPKAllowList`` room ids, each a number (a numeric
    /// room) or a string (a string room), as `RoomId` is.
    private static func allowedRooms(_ p: JSONFields) throws(CloudAPIError) -> [RoomID] {
        guard let items = p.value("AllowedRoomIds")?.arrayValue, items.count <= RoomRequest.maxPKAllowList else {
            throw CloudAPIError("InvalidParameter.AllowedRoomIds", "AllowedRoomIds must be an array of 0 to \(RoomRequest.maxPKAllowList) room ids")
        }
        var rooms: [RoomID] = []
        for item in items {
            let room = try Self.room(try read { () throws(LiveRoomError) in try JSONFields(.object(["RoomId": item])) })
            if !rooms.contains(room) { rooms.append(room) }
        }
        return rooms
    }

    /// `RoomId` of either kind, told apart by its JSON type as in TRTC's callbacks: a number
    /// names a numeric room, a string a string room.
    private static func room(_ p: JSONFields) throws(CloudAPIError) -> RoomID {
        p.value("RoomId")?.doubleValue != nil ? try roomNumber(p) : try strRoomId(p)
    }
}
