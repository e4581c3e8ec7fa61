/// A message from the server to one client, named after the TRTC callback it mirrors.
/// On the wire it is a JSON object with `"event"` set to the callback name and the
/// callback's parameters as fields.
public enum ServerEvent: Sendable, Hashable {
    /// Elapsed milliseconds on success, or a negative error code.
    case onEnterRoom(result: Int, errMsg: String? = nil)
    /// 0 exitRoom was called, 1 removed by the server (or replaced by a newer session), 2 room dismissed.
    case onExitRoom(reason: Int)
    case onRemoteUserEnterRoom(userId: String)
    /// 0 left, 1 timed out, 2 removed, 3 switched to audience.
    case onRemoteUserLeaveRoom(userId: String, reason: Int)
    /// `role` is the user's role after the call (LiveRoom adds it to TRTC's callback).
    case onSwitchRole(errCode: Int, errMsg: String, role: Role)
    /// An audience member asks to come on mic (sent to anchors).
    case onMicRequest(userId: String)
    /// The answer to this user's mic request; `userId` is the anchor who answered.
    case onMicRequestResult(userId: String, accepted: Bool, reason: String)
    /// An anchor invites this audience member on mic.
    case onMicInvitation(userId: String)
    /// The invited user's answer (sent to the inviting anchor).
    case onMicInvitationResult(userId: String, accepted: Bool, reason: String)
    case onRecvCustomCmdMsg(userId: String, cmdID: Int, seq: Int, data: String)
    /// The SDP answer to this user's `publish` offer.
    case onPublishAnswer(sdp: String)
    /// The SDP answer to this user's `subscribe` offer for `userId`'s media.
    case onSubscribeAnswer(userId: String, sdp: String)
    /// The SDP answer to `restartIce`: for the subscription to `userId`, or (nil) the publishing connection.
    case onIceRestartAnswer(userId: String?, sdp: String)
    /// An anchor's video became available (published, unmuted) or not.
    case onUserVideoAvailable(userId: String, available: Bool)
    /// An anchor's audio became available or not.
    case onUserAudioAvailable(userId: String, available: Bool)
    /// The answer to `startPublishMediaStream`: `code` 0 and the new task's id, or a negative
    /// error code (an ``ErrorCode``, -7200…-7299 for the task's own) and a message.
    case onStartPublishMediaStream(taskId: String, code: Int, message: String)
    /// The answer to `updatePublishMediaStream`: `code` 0, or a negative error code and a message.
    case onUpdatePublishMediaStream(taskId: String, code: Int, message: String)
    /// The answer to `stopPublishMediaStream` (`taskId` as the request gave it, empty for
    /// "all my tasks"): `code` 0, or a negative error code and a message.
    case onStopPublishMediaStream(taskId: String, code: Int, message: String)
    /// One CDN URL of a task changed state. `status`, as TRTC's:
    /// 0 stopped (idle: the task stopped or an update removed the URL), 1 connecting,
    /// 2 pushing, 3 reconnecting (after a failure or a drop), 4 failed (every retry failed;
    /// `code` and `message` say why).
    case onCdnStreamStateChanged(taskId: String, cdnUrl: String, status: Int, code: Int, message: String)
    /// A page of the room's catalogue (answer to `listProducts`): each product's JSON, from the
    /// `offset`th product on, of `total` in the catalogue.
    case onProductList(products: [JSONValue], offset: Int, total: Int)
    /// The answer to `addProduct`, `editProduct` or `removeProduct`: `code` 0 and the product
    /// as stored (none after a removal), or an error code and a message.
    case onProductResult(request: String, itemNumber: Int, code: Int, message: String, product: JSONValue?)
    /// Products of the room changed (added, edited, stock) or were removed; a burst of changes
    /// comes as one event.
    case onProductChanged(products: [JSONValue], removed: [Int])
    /// The answer to `popProduct`: `code` 0 and the pop-up's message (which the anchor may also
    /// send as SEI), or an error code and a message.
    case onPopProduct(itemNumber: Int, code: Int, message: String, data: String?)
    /// The room's current pop-up: `userId` popped `itemNumber`, whose message is `data`; nil
    /// item and data when it ended. Also sent right after onEnterRoom while one is up.
    case onPopUpChanged(userId: String, itemNumber: Int?, data: String?)
    /// Who may change the room's shop (its catalogue, pop-ups, replays, battles): sent with the
    /// catalogue after `listProducts`, and to everyone in the room when an owner grants or revokes.
    case onShopOwners(owners: [String])
    /// The answer to `buyProduct`: `code` 0 with the reserved order's id and the stock left, or
    /// an error code (sold out, off the shelf, over the limit, unknown item) and a message.
    /// `requestId` is the request's own, when it had one.
    case onBuyResult(itemNumber: Int, quantity: Int, code: Int, message: String, orderId: String?, stockLeft: Int?, requestId: String?)
    /// Sales since the last onProductSold (to anchors): per item, the units sold and the stock
    /// left; a burst of purchases comes as one event.
    case onProductSold(sales: [ProductSale])
    /// TRTC's answer to connectOtherRoom (and acceptPK, requestPK): `errCode` 0 when the
    /// link to anchor `userId` is made.
    case onConnectOtherRoom(userId: String, errCode: Int, errMsg: String)
    /// TRTC's answer to disconnectOtherRoom.
    case onDisconnectOtherRoom(errCode: Int, errMsg: String)
    /// TRTC's answer to updateOtherRoomForwardMode.
    case onUpdateOtherRoomForwardMode(errCode: Int, errMsg: String)
    /// An anchor of another room asks for a PK link (answer with acceptPK or rejectPK).
    case onPKRequest(userId: String, room: RoomID, timeoutSec: Int)
    /// The rooms whose anchors may link with this room's without a request (to the room's
    /// anchors, after setPKAllowList or the admin API's SetPKAllowList).
    case onPKAllowList(rooms: [RoomID])
    /// onPKBattleStarted, onPKBattleScore or onPKBattleEnded (`name`), with the battle's fields.
    case onPKBattle(name: String, fields: [String: JSONValue])
    /// `requestType` names the request that failed, where one did.
    case onError(errCode: Int, errMsg: String, requestType: String?)

    /// The `event` field's value: the TRTC callback's name.
    public var name: String {
        switch self {
        case .onEnterRoom: "onEnterRoom"
        case .onExitRoom: "onExitRoom"
        case .onRemoteUserEnterRoom: "onRemoteUserEnterRoom"
        case .onRemoteUserLeaveRoom: "onRemoteUserLeaveRoom"
        case .onSwitchRole: "onSwitchRole"
        case .onMicRequest: "onMicRequest"
        case .onMicRequestResult: "onMicRequestResult"
        case .onMicInvitation: "onMicInvitation"
        case .onMicInvitationResult: "onMicInvitationResult"
        case .onRecvCustomCmdMsg: "onRecvCustomCmdMsg"
        case .onPublishAnswer: "onPublishAnswer"
        case .onSubscribeAnswer: "onSubscribeAnswer"
        case .onIceRestartAnswer: "onIceRestartAnswer"
        case .onUserVideoAvailable: "onUserVideoAvailable"
        case .onUserAudioAvailable: "onUserAudioAvailable"
        case .onStartPublishMediaStream: "onStartPublishMediaStream"
        case .onUpdatePublishMediaStream: "onUpdatePublishMediaStream"
        case .onStopPublishMediaStream: "onStopPublishMediaStream"
        case .onCdnStreamStateChanged: "onCdnStreamStateChanged"
        case .onProductList: "onProductList"
        case .onProductResult: "onProductResult"
        case .onProductChanged: "onProductChanged"
        case .onPopProduct: "onPopProduct"
        case .onPopUpChanged: "onPopUpChanged"
        case .onShopOwners: "onShopOwners"
        case .onBuyResult: "onBuyResult"
        case .onProductSold: "onProductSold"
        case .onConnectOtherRoom: "onConnectOtherRoom"
        case .onDisconnectOtherRoom: "onDisconnectOtherRoom"
        case .onUpdateOtherRoomForwardMode: "onUpdateOtherRoomForwardMode"
        case .onPKRequest: "onPKRequest"
        case .onPKAllowList: "onPKAllowList"
        case .onPKBattle(let name, _): name
        case .onError: "onError"
        }
    }

    /// The name of an `onCdnStreamStateChanged` status number (0…4), nil for any other.
    public static func cdnStreamStatusName(_ status: Int) -> String? {
        switch status {
        case 0: "stopped"
        case 1: "connecting"
        case 2: "pushing"
        case 3: "reconnecting"
        case 4: "failed"
        default: nil
        }
    }

    /// `onError` for `error`, naming the request that failed.
    public static func error(_ error: LiveRoomError, requestType: String? = nil) -> ServerEvent {
        .onError(errCode: error.code, errMsg: error.message, requestType: requestType)
    }

    /// The JSON form the server sends.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["event": .string(name)]
        switch self {
        case .onEnterRoom(let result, let errMsg):
            o["result"] = .number(Double(result))
            if let errMsg { o["errMsg"] = .string(errMsg) }
        case .onExitRoom(let reason):
            o["reason"] = .number(Double(reason))
        case .onRemoteUserEnterRoom(let userId), .onMicRequest(let userId), .onMicInvitation(let userId):
            o["userId"] = .string(userId)
        case .onRemoteUserLeaveRoom(let userId, let reason):
            o["userId"] = .string(userId)
            o["reason"] = .number(Double(reason))
        case .onSwitchRole(let errCode, let errMsg, let role):
            o["errCode"] = .number(Double(errCode))
            o["errMsg"] = .string(errMsg)
            o["role"] = .string(role.rawValue)
        case .onMicRequestResult(let userId, let accepted, let reason), .onMicInvitationResult(let userId, let accepted, let reason):
            o["userId"] = .string(userId)
            o["accepted"] = .bool(accepted)
            o["reason"] = .string(reason)
        case .onRecvCustomCmdMsg(let userId, let cmdID, let seq, let data):
            o["userId"] = .string(userId)
            o["cmdID"] = .number(Double(cmdID))
            o["seq"] = .number(Double(seq))
            o["data"] = .string(data)
        case .onPublishAnswer(let sdp):
            o["sdp"] = .string(sdp)
        case .onSubscribeAnswer(let userId, let sdp):
            o["userId"] = .string(userId)
            o["sdp"] = .string(sdp)
        case .onIceRestartAnswer(let userId, let sdp):
            if let userId { o["userId"] = .string(userId) }
            o["sdp"] = .string(sdp)
        case .onUserVideoAvailable(let userId, let available), .onUserAudioAvailable(let userId, let available):
            o["userId"] = .string(userId)
            o["available"] = .bool(available)
        case .onStartPublishMediaStream(let taskId, let code, let message),
            .onUpdatePublishMediaStream(let taskId, let code, let message),
            .onStopPublishMediaStream(let taskId, let code, let message):
            o["taskId"] = .string(taskId)
            o["code"] = .number(Double(code))
            o["message"] = .string(message)
        case .onCdnStreamStateChanged(let taskId, let cdnUrl, let status, let code, let message):
            o["taskId"] = .string(taskId)
            o["cdnUrl"] = .string(cdnUrl)
            o["status"] = .number(Double(status))
            o["code"] = .number(Double(code))
            o["message"] = .string(message)
        case .onProductList(let products, let offset, let total):
            o["products"] = .array(products)
            o["offset"] = .number(Double(offset))
            o["total"] = .number(Double(total))
        case .onShopOwners(let owners):
            o["owners"] = .array(owners.map { .string($0) })
        case .onProductResult(let request, let itemNumber, let code, let message, let product):
            o["request"] = .string(request)
            o["itemNumber"] = .number(Double(itemNumber))
            o["code"] = .number(Double(code))
            o["message"] = .string(message)
            if let product { o["product"] = product }
        case .onProductChanged(let products, let removed):
            o["products"] = .array(products)
            o["removed"] = .array(removed.map { .number(Double($0)) })
        case .onPopProduct(let itemNumber, let code, let message, let data):
            o["itemNumber"] = .number(Double(itemNumber))
            o["code"] = .number(Double(code))
            o["message"] = .string(message)
            if let data { o["data"] = .string(data) }
        case .onPopUpChanged(let userId, let itemNumber, let data):
            o["userId"] = .string(userId)
            o["itemNumber"] = itemNumber.map { .number(Double($0)) } ?? .null
            o["data"] = data.map { .string($0) } ?? .null
        case .onBuyResult(let itemNumber, let quantity, let code, let message, let orderId, let stockLeft, let requestId):
            o["itemNumber"] = .number(Double(itemNumber))
            o["quantity"] = .number(Double(quantity))
            o["code"] = .number(Double(code))
            o["message"] = .string(message)
            if let orderId { o["orderId"] = .string(orderId) }
            if let stockLeft { o["stockLeft"] = .number(Double(stockLeft)) }
            if let requestId { o["requestId"] = .string(requestId) }
        case .onProductSold(let sales):
            o["sales"] = .array(sales.map(\.json))
        case .onConnectOtherRoom(let userId, let errCode, let errMsg):
            o["userId"] = .string(userId)
            o["errCode"] = .number(Double(errCode))
            o["errMsg"] = .string(errMsg)
        case .onDisconnectOtherRoom(let errCode, let errMsg), .onUpdateOtherRoomForwardMode(let errCode, let errMsg):
            o["errCode"] = .number(Double(errCode))
            o["errMsg"] = .string(errMsg)
        case .onPKRequest(let userId, let room, let timeoutSec):
            o.merge(room.requestFields) { $1 }
            o["userId"] = .string(userId)
            o["timeoutSec"] = .number(Double(timeoutSec))
        case .onPKAllowList(let rooms):
            o["rooms"] = .array(rooms.map { .object($0.requestFields) })
        case .onPKBattle(_, let fields):
            o.merge(fields) { old, _ in old }
        case .onError(let errCode, let errMsg, let requestType):
            o["errCode"] = .number(Double(errCode))
            o["errMsg"] = .string(errMsg)
            if let requestType { o["requestType"] = .string(requestType) }
        }
        return .object(o)
    }

    /// Every `event` the server sends.
    public static let names = [
        "onEnterRoom", "onExitRoom", "onRemoteUserEnterRoom", "onRemoteUserLeaveRoom", "onSwitchRole", "onMicRequest",
        "onMicRequestResult", "onMicInvitation", "onMicInvitationResult", "onRecvCustomCmdMsg", "onPublishAnswer",
        "onSubscribeAnswer", "onIceRestartAnswer", "onUserVideoAvailable", "onUserAudioAvailable", "onStartPublishMediaStream",
        "onUpdatePublishMediaStream", "onStopPublishMediaStream", "onCdnStreamStateChanged", "onProductList", "onProductResult",
        "onProductChanged", "onPopProduct", "onPopUpChanged", "onShopOwners", "onBuyResult", "onProductSold", "onConnectOtherRoom", "onDisconnectOtherRoom",
        "onUpdateOtherRoomForwardMode", "onPKRequest", "onPKAllowList", "onPKBattleStarted", "onPKBattleScore", "onPKBattleEnded", "onError",
    ]

    private static func array(_ key: String, _ fields: JSONFields) throws(LiveRoomError) -> [JSONValue] {
        guard let value = fields.value(key) else { throw fields.missing(key) }
        guard let array = value.arrayValue else { throw fields.invalid(key, "must be an array, not \(value.typeName)") }
        return array
    }

    /// A room an event names: `roomId` (a number) or `strRoomId`.
    private static func eventRoom(_ f: JSONFields) throws(LiveRoomError) -> RoomID {
        if let number = try f.int("roomId") { return .number(UInt32(clamping: number)) }
        return .string(try f.requiredString("strRoomId"))
    }

    /// Parses one event frame as the server sends it. Fields the event does not have are ignored.
    public static func parse(_ text: String) throws(LiveRoomError) -> ServerEvent {
        try parse(JSONValue.parse(text, message: "server event"))
    }

    public static func parse(_ value: JSONValue) throws(LiveRoomError) -> ServerEvent {
        let f = try JSONFields(value, path: "")
        let name = try f.requiredString("event")
        switch name {
        case "onEnterRoom": return .onEnterRoom(result: try f.requiredInt("result"), errMsg: try f.string("errMsg"))
        case "onExitRoom": return .onExitRoom(reason: try f.requiredInt("reason"))
        case "onRemoteUserEnterRoom", "onMicRequest", "onMicInvitation":
            let userId = try f.requiredString("userId")
            switch name {
            case "onMicRequest": return .onMicRequest(userId: userId)
            case "onMicInvitation": return .onMicInvitation(userId: userId)
            default: return .onRemoteUserEnterRoom(userId: userId)
            }
        case "onRemoteUserLeaveRoom": return .onRemoteUserLeaveRoom(userId: try f.requiredString("userId"), reason: try f.requiredInt("reason"))
        case "onSwitchRole":
            let roleText = try f.requiredString("role")
            guard let role = Role(rawValue: roleText) else {
                throw f.invalid("role", "must be \"anchor\" or \"audience\", not \(roleText.quoted)")
            }
            return .onSwitchRole(errCode: try f.requiredInt("errCode"), errMsg: try f.requiredString("errMsg"), role: role)
        case "onMicRequestResult", "onMicInvitationResult":
            let (userId, accepted, reason) = (try f.requiredString("userId"), try f.requiredBool("accepted"), try f.requiredString("reason"))
            if name == "onMicRequestResult" { return .onMicRequestResult(userId: userId, accepted: accepted, reason: reason) }
            return .onMicInvitationResult(userId: userId, accepted: accepted, reason: reason)
        case "onRecvCustomCmdMsg":
            return .onRecvCustomCmdMsg(
                userId: try f.requiredString("userId"), cmdID: try f.requiredInt("cmdID"), seq: try f.requiredInt("seq"),
                data: try f.requiredString("data"))
        case "onPublishAnswer": return .onPublishAnswer(sdp: try f.requiredString("sdp"))
        case "onSubscribeAnswer": return .onSubscribeAnswer(userId: try f.requiredString("userId"), sdp: try f.requiredString("sdp"))
        case "onIceRestartAnswer": return .onIceRestartAnswer(userId: try f.string("userId"), sdp: try f.requiredString("sdp"))
        case "onUserVideoAvailable", "onUserAudioAvailable":
            let (userId, available) = (try f.requiredString("userId"), try f.requiredBool("available"))
            if name == "onUserVideoAvailable" { return .onUserVideoAvailable(userId: userId, available: available) }
            return .onUserAudioAvailable(userId: userId, available: available)
        case "onStartPublishMediaStream", "onUpdatePublishMediaStream", "onStopPublishMediaStream":
            let (taskId, code, message) = (try f.requiredString("taskId"), try f.requiredInt("code"), try f.requiredString("message"))
            switch name {
            case "onStartPublishMediaStream": return .onStartPublishMediaStream(taskId: taskId, code: code, message: message)
            case "onUpdatePublishMediaStream": return .onUpdatePublishMediaStream(taskId: taskId, code: code, message: message)
            default: return .onStopPublishMediaStream(taskId: taskId, code: code, message: message)
            }
        case "onCdnStreamStateChanged":
            return .onCdnStreamStateChanged(
                taskId: try f.requiredString("taskId"), cdnUrl: try f.requiredString("cdnUrl"), status: try f.requiredInt("status"),
                code: try f.requiredInt("code"), message: try f.requiredString("message"))
        case "onProductList", "onProductResult", "onProductChanged", "onPopProduct", "onPopUpChanged", "onShopOwners", "onBuyResult", "onProductSold":
            return try parseShopEvent(name, f)
        case "onConnectOtherRoom":
            return .onConnectOtherRoom(userId: try f.requiredString("userId"), errCode: try f.requiredInt("errCode"), errMsg: try f.requiredString("errMsg"))
        case "onDisconnectOtherRoom", "onUpdateOtherRoomForwardMode":
            let (errCode, errMsg) = (try f.requiredInt("errCode"), try f.requiredString("errMsg"))
            if name == "onDisconnectOtherRoom" { return .onDisconnectOtherRoom(errCode: errCode, errMsg: errMsg) }
            return .onUpdateOtherRoomForwardMode(errCode: errCode, errMsg: errMsg)
        case "onPKRequest":
            return .onPKRequest(userId: try f.requiredString("userId"), room: try eventRoom(f), timeoutSec: try f.requiredInt("timeoutSec"))
        case "onPKAllowList":
            var rooms: [RoomID] = []
            for (index, item) in try array("rooms", f).enumerated() { rooms.append(try eventRoom(JSONFields(item, path: "rooms[\(index)]"))) }
            return .onPKAllowList(rooms: rooms)
        case "onPKBattleStarted", "onPKBattleScore", "onPKBattleEnded":
            var fields = value.objectValue ?? [:]
            fields["event"] = nil
            return .onPKBattle(name: name, fields: fields)
        case "onError":
            return .onError(errCode: try f.requiredInt("errCode"), errMsg: try f.requiredString("errMsg"), requestType: try f.string("requestType"))
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown event \(name.quoted); known: \(names.joined(separator: ", "))", field: "event")
        }
    }

    /// The live-shopping events.
    static func parseShopEvent(_ name: String, _ f: JSONFields) throws(LiveRoomError) -> ServerEvent {
        switch name {
        case "onProductList":
            let products = try array("products", f)
            return .onProductList(products: products, offset: try f.int("offset") ?? 0, total: try f.int("total") ?? products.count)
        case "onProductResult":
            return .onProductResult(
                request: try f.requiredString("request"), itemNumber: try f.requiredInt("itemNumber"), code: try f.requiredInt("code"),
                message: try f.requiredString("message"), product: f.value("product"))
        case "onProductChanged":
            let removed = try array("removed", f).map { value throws(LiveRoomError) -> Int in
                guard let number = value.intValue else { throw f.invalid("removed", "must hold item numbers") }
                return number
            }
            return .onProductChanged(products: try array("products", f), removed: removed)
        case "onPopProduct":
            return .onPopProduct(
                itemNumber: try f.requiredInt("itemNumber"), code: try f.requiredInt("code"), message: try f.requiredString("message"),
                data: try f.string("data"))
        case "onPopUpChanged":
            return .onPopUpChanged(userId: try f.requiredString("userId"), itemNumber: try f.int("itemNumber"), data: try f.string("data"))
        case "onShopOwners":
            return .onShopOwners(
                owners: try array("owners", f).map { value throws(LiveRoomError) -> String in
                    guard let owner = value.stringValue else { throw f.invalid("owners", "must hold user ids") }
                    return owner
                })
        case "onBuyResult":
            return .onBuyResult(
                itemNumber: try f.requiredInt("itemNumber"), quantity: try f.requiredInt("quantity"), code: try f.requiredInt("code"),
                message: try f.requiredString("message"), orderId: try f.string("orderId"), stockLeft: try f.int("stockLeft"),
                requestId: try f.string("requestId"))
        case "onProductSold":
            return .onProductSold(
                sales: try array("sales", f).map { value throws(LiveRoomError) -> ProductSale in
                    let sale = try JSONFields(value, path: "sales")
                    return ProductSale(
                        itemNumber: try sale.requiredInt("itemNumber"), quantity: try sale.requiredInt("quantity"), stockLeft: try sale.requiredInt("stockLeft"))
                })
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown event \(name.quoted)", field: "event")
        }
    }
}

/// Units of one item sold since the last onProductSold, and the stock left after them.
public struct ProductSale: Sendable, Hashable {
    public var itemNumber: Int
    public var quantity: Int
    public var stockLeft: Int

    public init(itemNumber: Int, quantity: Int, stockLeft: Int) {
        self.itemNumber = itemNumber
        self.quantity = quantity
        self.stockLeft = stockLeft
    }

    public var json: JSONValue {
        ["itemNumber": .number(Double(itemNumber)), "quantity": .number(Double(quantity)), "stockLeft": .number(Double(stockLeft))]
    }
}
