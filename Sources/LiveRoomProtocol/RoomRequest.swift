/// A signaling request about the room itself: membership, roles, the mic connection, custom
/// messages and the media the user publishes and receives. The room core handles these.
public enum RoomRequest: Sendable, Hashable {
    case enterRoom(EnterRoomParams)
    case exitRoom
    case switchRole(Role)
    case requestMic
    case acceptMic(userId: String)
    case rejectMic(userId: String)
    case inviteMic(userId: String)
    case acceptInvitation
    case rejectInvitation
    case endMic(userId: String)
    case sendCustomCmdMsg(CustomCmdMsg)
    /// Publish audio and/or video: `sdp` is the offer of a peer connection whose sections are sendonly.
    case publish(sdp: String)
    /// Stop publishing (closes the publishing peer connection).
    case unpublish
    /// Receive an anchor's media: `sdp` is the offer of a peer connection whose sections are recvonly.
    case subscribe(userId: String, sdp: String)
    /// Stop receiving an anchor's media.
    case unsubscribe(userId: String)
    /// Restart ICE on a peer connection (its path stopped working: a network change, UDP
    /// blocked): `sdp` is the same offer with new ICE credentials. `userId` names the anchor
    /// of a subscription; nil means the publishing connection.
    case restartIce(userId: String?, sdp: String)
    /// muteLocalVideo / muteLocalAudio: others see onUserVideoAvailable / onUserAudioAvailable.
    case muteLocalVideo(Bool)
    case muteLocalAudio(Bool)
    /// Adds a product to the room's catalogue (anchors): its fields, checked by the server.
    case addProduct(JSONValue)
    /// Changes a product (anchors): the changed fields and the `version` they were based on.
    case editProduct(itemNumber: Int, changes: JSONValue)
    /// Removes a product (anchors).
    case removeProduct(itemNumber: Int)
    /// Lists a page of the room's catalogue, in item-number order: at most `limit`
    /// (``productPageSizes``) products from the `offset`th on. Answered by onProductList, which
    /// says the catalogue's total, so a client asks for the next page until it has them all.
    case listProducts(offset: Int, limit: Int)
    /// Presents a product (anchors): the room's current pop-up becomes TRTC's `item_popup_msg`
    /// for it, told to everyone (and to later comers), and, with `custom`, sent as a
    /// high-priority custom message too. Answered by onPopProduct.
    case popProduct(itemNumber: Int, custom: Bool)
    /// Ends the room's current pop-up (anchors).
    case unpopProduct
    /// Removes a replay of one of the room's products, with its file (anchors).
    case removeReplay(replayId: String)
    /// grantShop / revokeShop: makes `userId` one of the room's shop owners, or no longer one
    /// (owners only). Answered, and told to the room, by onShopOwners.
    case shopOwner(userId: String, grant: Bool)
    /// Buys `quantity` (``purchaseQuantities``) of a product: the server reserves the stock and answers with
    /// onBuyResult. The same `requestId` (``maxPurchaseRequestIdLength`` at most) again returns the same order,
    /// so a client may retry after a lost answer.
    case buyProduct(itemNumber: Int, quantity: Int, requestId: String?)

    /// The products one `listProducts` answer holds at most (the default); an answer also
    /// stops at 48 KiB of products (`Product.maxEventBytes`), whatever they hold.
    public static let productPageSizes = 1...100
    /// The highest `offset` of a `listProducts` (a room holds at most 500 products).
    public static let maxProductOffset = 10_000

    /// The units one `buyProduct` may ask for.
    public static let purchaseQuantities = 1...100
    /// The longest `requestId` of a `buyProduct`.
    public static let maxPurchaseRequestIdLength = 64

    /// TRTC's connectOtherRoom: link with anchor `userId` of `room` (nil when the request
    /// named none; the room core answers onConnectOtherRoom -3328).
    case connectOtherRoom(room: RoomID?, userId: String)
    /// TRTC's disconnectOtherRoom: end all of the caller's PK links.
    case disconnectOtherRoom
    /// TRTC's updateOtherRoomForwardMode: what of `room`'s PK anchors the caller's room receives.
    case updateOtherRoomForwardMode(room: RoomID?, mode: PKForwardMode)
    /// Asks anchor `userId` of `room` for a PK link; it answers with acceptPK or rejectPK.
    case requestPK(room: RoomID?, userId: String)
    /// Answers a PK request from anchor `userId` of `room`.
    case answerPK(room: RoomID?, userId: String, accept: Bool)
    /// A timed battle between the caller's room and the rooms it is linked with.
    case startPKBattle(durationSec: Int)
    /// The rooms whose anchors may link with the caller's room by connectOtherRoom without a
    /// request (shop owners; at most ``maxPKAllowList``; empty clears it). Answered, and told
    /// to the room's anchors, by onPKAllowList.
    case setPKAllowList(rooms: [RoomID])

    /// The most rooms a PK allow-list names.
    public static let maxPKAllowList = 20

    /// Whether the request changes what others in the room see (a role, the mic, a mute,
    /// publishing, the catalogue, the stock), so that it is broadcast, or renegotiates a peer
    /// connection, or writes to the store; the server limits how often a user may make them.
    public var changesTheRoom: Bool {
        switch self {
        case .switchRole, .requestMic, .acceptMic, .rejectMic, .inviteMic, .acceptInvitation, .rejectInvitation, .endMic,
            .publish, .unpublish, .muteLocalVideo, .muteLocalAudio, .restartIce, .addProduct, .editProduct, .removeProduct, .listProducts, .popProduct, .unpopProduct, .buyProduct, .removeReplay, .shopOwner, .connectOtherRoom, .disconnectOtherRoom, .updateOtherRoomForwardMode,
            .requestPK, .answerPK, .startPKBattle, .setPKAllowList:
            true
        case .enterRoom, .exitRoom, .sendCustomCmdMsg, .subscribe, .unsubscribe:
            false
        }
    }

    /// What the request takes from its member's budget of room changes: 1 for a change, a
    /// fifth for a page of the catalogue (a client pages through a large catalogue at once:
    /// 100 pages in a burst), nothing for the rest.
    public var roomChangeCost: Double {
        if case .listProducts = self { return 0.2 }
        return changesTheRoom ? 1 : 0
    }

    /// Whether it enters a room (the others are a member's, for its room).
    public var isEnter: Bool {
        if case .enterRoom = self { true } else { false }
    }

    /// The `type` field's value.
    public var type: String {
        switch self {
        case .enterRoom: "enterRoom"
        case .exitRoom: "exitRoom"
        case .switchRole: "switchRole"
        case .requestMic: "requestMic"
        case .acceptMic: "acceptMic"
        case .rejectMic: "rejectMic"
        case .inviteMic: "inviteMic"
        case .acceptInvitation: "acceptInvitation"
        case .rejectInvitation: "rejectInvitation"
        case .endMic: "endMic"
        case .sendCustomCmdMsg: "sendCustomCmdMsg"
        case .publish: "publish"
        case .unpublish: "unpublish"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .restartIce: "restartIce"
        case .muteLocalVideo: "muteLocalVideo"
        case .muteLocalAudio: "muteLocalAudio"
        case .addProduct: "addProduct"
        case .editProduct: "editProduct"
        case .removeProduct: "removeProduct"
        case .listProducts: "listProducts"
        case .popProduct: "popProduct"
        case .unpopProduct: "unpopProduct"
        case .buyProduct: "buyProduct"
        case .removeReplay: "removeReplay"
        case .shopOwner(_, let grant): grant ? "grantShop" : "revokeShop"
        case .connectOtherRoom: "connectOtherRoom"
        case .disconnectOtherRoom: "disconnectOtherRoom"
        case .updateOtherRoomForwardMode: "updateOtherRoomForwardMode"
        case .requestPK: "requestPK"
        case .answerPK(_, _, let accept): accept ? "acceptPK" : "rejectPK"
        case .startPKBattle: "startPKBattle"
        case .setPKAllowList: "setPKAllowList"
        }
    }

    /// Every room request `type`.
    public static let types = [
        "enterRoom", "exitRoom", "switchRole", "requestMic", "acceptMic", "rejectMic", "inviteMic",
        "acceptInvitation", "rejectInvitation", "endMic", "sendCustomCmdMsg", "publish", "unpublish", "subscribe",
        "unsubscribe", "restartIce", "muteLocalVideo", "muteLocalAudio", "addProduct", "editProduct", "removeProduct", "listProducts",
        "popProduct", "unpopProduct", "buyProduct", "removeReplay", "grantShop", "revokeShop", "connectOtherRoom", "disconnectOtherRoom", "updateOtherRoomForwardMode",
        "requestPK", "acceptPK", "rejectPK", "startPKBattle", "setPKAllowList",
    ]

    /// The JSON form a client sends.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["type": .string(type)]
        switch self {
        case .enterRoom(let p):
            o["sdkAppId"] = .number(Double(p.sdkAppId))
            o["userId"] = .string(p.userId)
            o["userSig"] = .string(p.userSig)
            if p.roomId != 0 { o["roomId"] = .number(Double(p.roomId)) }
            if p.roomId == 0 || !p.strRoomId.isEmpty { o["strRoomId"] = .string(p.strRoomId) }
            o["role"] = .string(p.role.rawValue)
            o["scene"] = "live"
            if !p.privateMapKey.isEmpty { o["privateMapKey"] = .string(p.privateMapKey) }
        case .switchRole(let role):
            o["role"] = .string(role.rawValue)
        case .acceptMic(let u), .rejectMic(let u), .inviteMic(let u), .endMic(let u):
            o["userId"] = .string(u)
        case .sendCustomCmdMsg(let m):
            o["cmdID"] = .number(Double(m.cmdID))
            o["data"] = .string(m.data)
            o["reliable"] = .bool(m.reliable)
            o["ordered"] = .bool(m.ordered)
        case .publish(let sdp):
            o["sdp"] = .string(sdp)
        case .subscribe(let userId, let sdp):
            o["userId"] = .string(userId)
            o["sdp"] = .string(sdp)
        case .unsubscribe(let userId):
            o["userId"] = .string(userId)
        case .restartIce(let userId, let sdp):
            if let userId { o["userId"] = .string(userId) }
            o["sdp"] = .string(sdp)
        case .muteLocalVideo(let mute), .muteLocalAudio(let mute):
            o["mute"] = .bool(mute)
        case .addProduct(let product):
            o["product"] = product
        case .editProduct(let itemNumber, let changes):
            o["itemNumber"] = .number(Double(itemNumber))
            o["changes"] = changes
        case .removeProduct(let itemNumber):
            o["itemNumber"] = .number(Double(itemNumber))
        case .popProduct(let itemNumber, let custom):
            o["itemNumber"] = .number(Double(itemNumber))
            o["custom"] = .bool(custom)
        case .removeReplay(let replayId):
            o["replayId"] = .string(replayId)
        case .shopOwner(let userId, _):
            o["userId"] = .string(userId)
        case .buyProduct(let itemNumber, let quantity, let requestId):
            o["itemNumber"] = .number(Double(itemNumber))
            o["quantity"] = .number(Double(quantity))
            if let requestId { o["requestId"] = .string(requestId) }
        case .connectOtherRoom(let room, let userId), .requestPK(let room, let userId), .answerPK(let room, let userId, _):
            if let room { o.merge(room.requestFields) { $1 } }
            o["userId"] = .string(userId)
        case .updateOtherRoomForwardMode(let room, let mode):
            if let room { o.merge(room.requestFields) { $1 } }
            o["mode"] = .string(mode.rawValue)
        case .startPKBattle(let durationSec):
            o["durationSec"] = .number(Double(durationSec))
        case .setPKAllowList(let rooms):
            o["rooms"] = .array(rooms.map { .object($0.requestFields) })
        case .listProducts(let offset, let limit):
            if offset != 0 { o["offset"] = .number(Double(offset)) }
            if limit != Self.productPageSizes.upperBound { o["limit"] = .number(Double(limit)) }
        case .exitRoom, .requestMic, .acceptInvitation, .rejectInvitation, .unpublish, .unpopProduct, .disconnectOtherRoom:
            break
        }
        return .object(o)
    }

    /// Reads the request of `type` from its message's fields; `nil` when `type` is not a room request.
    static func parse(type: String, _ fields: JSONFields) throws(LiveRoomError) -> RoomRequest? {
        switch type {
        case "enterRoom":
            let sdkAppId = try fields.requiredInt("sdkAppId")
            guard sdkAppId > 0 else {
                throw fields.invalid("sdkAppId", "must be a positive integer", code: ErrorCode.invalidSdkAppId)
            }
            // TRTC's live scene enters as anchor unless the role says otherwise.
            let role = try role(fields.string("role") ?? Role.anchor.rawValue, fields)
            if let scene = try fields.string("scene"), scene != "live" {
                throw fields.invalid("scene", "must be \"live\", not \(scene.quoted)")
            }
            // TRTC's integer roomId (0: not set) wins over strRoomId when both are set.
            let roomId = try fields.int("roomId", code: ErrorCode.invalidRoomId) ?? 0
            guard (0...Int(UInt32.max)).contains(roomId) else {
                throw fields.invalid("roomId", "must be 1–4294967295 (0: not set), not \(roomId)", code: ErrorCode.invalidRoomId)
            }
            return .enterRoom(
                EnterRoomParams(
                    sdkAppId: UInt64(sdkAppId), userId: try fields.string("userId") ?? "", userSig: try fields.string("userSig") ?? "",
                    roomId: UInt32(roomId), strRoomId: try fields.string("strRoomId") ?? "", role: role,
                    privateMapKey: try fields.string("privateMapKey") ?? ""))
        case "exitRoom": return .exitRoom
        case "switchRole": return .switchRole(try role(fields.requiredString("role"), fields))
        case "requestMic": return .requestMic
        case "acceptMic": return .acceptMic(userId: try fields.requiredString("userId"))
        case "rejectMic": return .rejectMic(userId: try fields.requiredString("userId"))
        case "inviteMic": return .inviteMic(userId: try fields.requiredString("userId"))
        case "acceptInvitation": return .acceptInvitation
        case "rejectInvitation": return .rejectInvitation
        case "endMic": return .endMic(userId: try fields.requiredString("userId"))
        case "sendCustomCmdMsg":
            return .sendCustomCmdMsg(
                CustomCmdMsg(
                    cmdID: try fields.requiredInt("cmdID"), data: try fields.requiredString("data"),
                    reliable: try fields.bool("reliable") ?? true, ordered: try fields.bool("ordered") ?? true))
        case "publish": return .publish(sdp: try fields.requiredString("sdp"))
        case "unpublish": return .unpublish
        case "subscribe": return .subscribe(userId: try fields.requiredString("userId"), sdp: try fields.requiredString("sdp"))
        case "unsubscribe": return .unsubscribe(userId: try fields.requiredString("userId"))
        case "restartIce": return .restartIce(userId: try fields.string("userId"), sdp: try fields.requiredString("sdp"))
        case "muteLocalVideo": return .muteLocalVideo(try fields.requiredBool("mute"))
        case "muteLocalAudio": return .muteLocalAudio(try fields.requiredBool("mute"))
        case "addProduct": return .addProduct(try fields.requiredObject("product"))
        case "editProduct": return .editProduct(itemNumber: try fields.requiredInt("itemNumber"), changes: try fields.requiredObject("changes"))
        case "removeProduct": return .removeProduct(itemNumber: try fields.requiredInt("itemNumber"))
        case "listProducts":
            return .listProducts(
                offset: try fields.int("offset", in: 0...Self.maxProductOffset) ?? 0,
                limit: try fields.int("limit", in: Self.productPageSizes) ?? Self.productPageSizes.upperBound)
        case "popProduct": return .popProduct(itemNumber: try fields.requiredInt("itemNumber"), custom: try fields.bool("custom") ?? true)
        case "unpopProduct": return .unpopProduct
        case "removeReplay": return .removeReplay(replayId: try fields.requiredString("replayId"))
        case "grantShop", "revokeShop": return .shopOwner(userId: try fields.requiredString("userId"), grant: type == "grantShop")
        case "buyProduct":
            let requestId = try fields.string("requestId", code: ErrorCode.invalidPurchase)
            if let requestId, requestId.isEmpty || requestId.count > Self.maxPurchaseRequestIdLength {
                throw fields.invalid("requestId", "must be 1–\(Self.maxPurchaseRequestIdLength) characters", code: ErrorCode.invalidPurchase)
            }
            return .buyProduct(
                itemNumber: try fields.requiredInt("itemNumber", code: ErrorCode.invalidPurchase),
                quantity: try fields.int("quantity", in: Self.purchaseQuantities, code: ErrorCode.invalidPurchase) ?? 1, requestId: requestId)
        case "connectOtherRoom": return .connectOtherRoom(room: try otherRoom(f: fields), userId: try fields.string("userId") ?? "")
        case "disconnectOtherRoom": return .disconnectOtherRoom
        case "updateOtherRoomForwardMode":
            let text = try fields.requiredString("mode", code: ErrorCode.pkInvalidParameter)
            guard let mode = PKForwardMode(rawValue: text) else {
                throw fields.invalid("mode", "must be \"audio\", \"video\", \"both\" or \"none\", not \(text.quoted)", code: ErrorCode.pkInvalidParameter)
            }
            return .updateOtherRoomForwardMode(room: try otherRoom(f: fields), mode: mode)
        case "requestPK": return .requestPK(room: try otherRoom(f: fields), userId: try fields.string("userId") ?? "")
        case "acceptPK", "rejectPK":
            return .answerPK(room: try otherRoom(f: fields), userId: try fields.string("userId") ?? "", accept: type == "acceptPK")
        case "startPKBattle": return .startPKBattle(durationSec: try fields.requiredInt("durationSec", code: ErrorCode.invalidPKBattle))
        case "setPKAllowList": return .setPKAllowList(rooms: try pkAllowList(fields))
        default: return nil
        }
    }

    /// setPKAllowList's `rooms`: objects with `strRoomId` or `roomId`, at most ``maxPKAllowList``.
    private static func pkAllowList(_ fields: JSONFields) throws(LiveRoomError) -> [RoomID] {
        guard let items = fields.object["rooms"]?.arrayValue else {
            throw fields.invalid("rooms", "must be an array of rooms ({\"strRoomId\": …} or {\"roomId\": …})", code: ErrorCode.pkInvalidParameter)
        }
        guard items.count <= maxPKAllowList else {
            throw fields.invalid("rooms", "names \(items.count) rooms; at most \(maxPKAllowList)", code: ErrorCode.pkInvalidParameter)
        }
        var rooms: [RoomID] = []
        for (index, item) in items.enumerated() {
            let key = "rooms[\(index)]"
            guard let room = try otherRoom(f: JSONFields(item, path: fields.name(key), code: ErrorCode.pkInvalidParameter)) else {
                throw fields.invalid(key, "must name a room: {\"strRoomId\": …} or {\"roomId\": …}", code: ErrorCode.pkInvalidParameter)
            }
            if !rooms.contains(room) { rooms.append(room) }
        }
        return rooms
    }

    /// The other room of a PK request: TRTC's integer `roomId` or `strRoomId`; nil when neither is set.
    private static func otherRoom(f fields: JSONFields) throws(LiveRoomError) -> RoomID? {
        if let number = try fields.int("roomId", code: ErrorCode.pkInvalidParameter), number != 0 {
            guard (1...Int(UInt32.max)).contains(number) else {
                throw fields.invalid("roomId", "must be 1–4294967295, not \(number)", code: ErrorCode.pkInvalidParameter)
            }
            return .number(UInt32(number))
        }
        guard let id = try fields.string("strRoomId", code: ErrorCode.pkInvalidParameter), !id.isEmpty else { return nil }
        return .string(id)
    }

    private static func role(_ text: String, _ fields: JSONFields) throws(LiveRoomError) -> Role {
        guard let role = Role(rawValue: text) else {
            throw fields.invalid("role", "must be \"anchor\" or \"audience\", not \(text.quoted)")
        }
        return role
    }
}
