import Foundation
import LiveRoomProtocol
import LiveRoomWire

/// One line a user types on `liveroom join`'s standard input.
public enum ClientCommand: Sendable, Hashable {
    /// A signaling request to send.
    case request(SignalingRequest)
    /// Leave the room and end the session.
    case leave
    /// Send an SEI message on the next `repeatCount` video frames we publish (TRTC's
    /// `sendSEIMsg`); it goes in our own video, not over signaling.
    case sendSEI(data: [UInt8], repeatCount: Int)

    /// Present a product (`pop <itemNumber> [custom|sei|both]`): the server makes it the room's
    /// pop-up (and, with `custom`, sends it as a custom message); with `sei` the CLI also sends
    /// the pop-up's message as SEI on its next frames.
    case pop(itemNumber: Int, custom: Bool, sei: Bool)

    /// The frames a pop-up's SEI message rides on, so a lost frame does not lose it.
    public static let popUpSEIRepeatCount = 3

    /// The most frames one SEI message is repeated on (2 s at 15 fps).
    public static let maxSEIRepeatCount = 30

    /// The commands and their arguments, for help and error messages.
    public static let usage = """
        custom <cmdID> <text>        send a custom message (cmdID 1-10) to the room
        sei <text> [repeatCount]     send text (UTF-8, at most 1000 bytes) as SEI on
                                     the next repeatCount (1-30, default 1) video
                                     frames (anchor); a text that ends in a number
                                     needs the repeat count after it
        sei-hex <hex> [repeatCount]  the same with bytes given in hex
        switch-role anchor|audience  switch role (to anchor needs an accepted mic
                                     request or invitation)
        request-mic                  ask the anchors to bring you on mic
        accept-mic <user>            accept a user's mic request (anchor)
        reject-mic <user>            reject a user's mic request (anchor)
        invite-mic <user>            invite an audience member on mic (anchor)
        accept-invite                accept a mic invitation
        reject-invite                reject a mic invitation
        end-mic <user>               send a co-host back to the audience (anchor)
        mute-video on|off            stop (on) or resume (off) sending your video
        mute-audio on|off            stop (on) or resume (off) sending your audio
        product add <json>           add a product (shop owner):
                                     {"itemNumber":1,"title":"Tea","price":"199.00",
                                     "itemUrl":"https://…","stock":100} (also currency,
                                     imageUrl, limitPerUser, onShelf)
        product edit <item> <json>   change a product (shop owner): the changed
                                     fields and "version"
        product remove <item>        remove a product (shop owner)
        product list [offset]        list a page of the room's products from offset
                                     (default 0): onProductList, with their total
        product remove-replay <id>   remove a replay of a product, with its file
                                     (shop owner)
        pop <item> [custom|sei|both] present a product to the room (shop owner;
                                     default both)
        unpop                        end the pop-up (shop owner)
        grant-shop <user>            let <user> change the room's shop too (shop
                                     owner): onShopOwners to the room
        revoke-shop <user>           take it back (shop owner)
        buy <item> [qty] [requestId] buy qty (1-100, default 1) of a product:
                                     onBuyResult; the same requestId again returns the
                                     same order
        connect-room <room> <user>   link with anchor <user> of another room for a PK
                                     (anchor): onConnectOtherRoom; a numeric room is
                                     written #123; the other anchor must have accepted
                                     your pk-request or pk-allow'ed your room (-7403)
        disconnect-room              end all of your PK links (anchor):
                                     onDisconnectOtherRoom
        pk-forward <room> <mode>     what of <room>'s PK anchors your room gets: audio,
                                     video, both or none (anchor):
                                     onUpdateOtherRoomForwardMode
        pk-request <room> <user>     ask anchor <user> of <room> for a PK link; it
                                     answers with pk-accept or pk-reject (onPKRequest
                                     tells it)
        pk-accept <room> <user>      accept a PK request from anchor <user> of <room>
        pk-reject <room> <user>      reject it
        pk-allow [room ...]          rooms whose anchors may connect-room with yours
                                     without pk-request (shop owner; none clears):
                                     onPKAllowList
        pk-battle <seconds>          a sales battle (5-3600 s) with the rooms you are
                                     linked with: onPKBattleStarted, onPKBattleScore
                                     each second, onPKBattleEnded with the winner
        start-publish <json>         start a publish media stream task; json is
                                     {"target":{…},"encoderParam":{…},
                                     "mixingConfig":{…}}
        update-publish <task> <json> change a task: json holds any of target,
                                     encoderParam, mixingConfig
        stop-publish [task]          stop a task, or all of yours without a task id
        leave                        exit the room and end the session
        """

    /// Parses one line. Blank lines and `#` comments give nil.
    public static func parse(_ line: String) throws(LiveRoomError) -> ClientCommand? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let (word, rest) = split(trimmed)
        func noArgument() throws(LiveRoomError) {
            guard rest.isEmpty else { throw LiveRoomError(ErrorCode.invalidField, "\(word) takes no argument") }
        }
        func user() throws(LiveRoomError) -> String {
            let (user, extra) = split(rest)
            guard !user.isEmpty, extra.isEmpty else {
                throw LiveRoomError(ErrorCode.missingField, "usage: \(word) <user>")
            }
            return user
        }
        func onOff() throws(LiveRoomError) -> Bool {
            switch rest {
            case "on": return true
            case "off": return false
            default: throw LiveRoomError(ErrorCode.invalidField, "usage: \(word) on|off")
            }
        }
        switch word {
        case "custom":
            let (idText, text) = split(rest)
            guard let cmdID = Int(idText), !text.isEmpty else {
                throw LiveRoomError(ErrorCode.missingField, "usage: custom <cmdID> <text>")
            }
            return .request(.room(.sendCustomCmdMsg(CustomCmdMsg(cmdID: cmdID, data: text))))
        case "switch-role":
            guard let role = Role(rawValue: rest) else {
                throw LiveRoomError(ErrorCode.invalidField, "usage: switch-role anchor|audience")
            }
            return .request(.room(.switchRole(role)))
        case "request-mic":
            try noArgument()
            return .request(.room(.requestMic))
        case "accept-mic": return .request(.room(.acceptMic(userId: try user())))
        case "reject-mic": return .request(.room(.rejectMic(userId: try user())))
        case "invite-mic": return .request(.room(.inviteMic(userId: try user())))
        case "end-mic": return .request(.room(.endMic(userId: try user())))
        case "accept-invite":
            try noArgument()
            return .request(.room(.acceptInvitation))
        case "reject-invite":
            try noArgument()
            return .request(.room(.rejectInvitation))
        case "mute-video": return .request(.room(.muteLocalVideo(try onOff())))
        case "mute-audio": return .request(.room(.muteLocalAudio(try onOff())))
        case "start-publish", "update-publish", "stop-publish":
            return .request(try publishTaskCommand(word, rest))
        case "sei", "sei-hex":
            return try seiCommand(word, rest)
        case "product", "grant-shop", "revoke-shop":
            return .request(.room(word == "product" ? try productRequest(rest) : try shopOwnerRequest(word, rest)))
        case "pop":
            let (number, mode) = split(rest)
            guard let itemNumber = Int(number), ["", "custom", "sei", "both"].contains(mode) else {
                throw LiveRoomError(ErrorCode.invalidProduct, "usage: pop <itemNumber> [custom|sei|both]")
            }
            return .pop(itemNumber: itemNumber, custom: mode != "sei", sei: mode != "custom")
        case "unpop":
            try noArgument()
            return .request(.room(.unpopProduct))
        case "buy":
            let (number, more) = split(rest)
            let (count, requestId) = split(more)
            guard let itemNumber = Int(number), count.isEmpty || Int(count) != nil, !requestId.contains(where: \.isWhitespace) else {
                throw LiveRoomError(ErrorCode.invalidPurchase, "usage: buy <itemNumber> [quantity] [requestId]")
            }
            return .request(.room(.buyProduct(itemNumber: itemNumber, quantity: Int(count) ?? 1, requestId: requestId.isEmpty ? nil : requestId)))
        case "connect-room", "pk-request", "pk-accept", "pk-reject", "disconnect-room", "pk-forward", "pk-battle", "pk-allow":
            return .request(.room(try pkCommand(word, rest)))
        case "leave":
            try noArgument()
            return .leave
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown command \"\(word)\"; commands:\n\(usage)")
        }
    }

    /// `sei <text> [repeatCount]`, `sei-hex <hex> [repeatCount]`.
    static func seiCommand(_ word: String, _ rest: String) throws(LiveRoomError) -> ClientCommand {
        let usage = "usage: \(word) <\(word == "sei" ? "text" : "hex")> [repeatCount]"
        var text = rest
        var repeatCount = 1
        if let space = rest.lastIndex(where: { $0 == " " || $0 == "\t" }), let count = Int(rest[rest.index(after: space)...]) {
            text = rest[..<space].trimmingCharacters(in: .whitespaces)
            repeatCount = count
        }
        guard !text.isEmpty else { throw LiveRoomError(ErrorCode.invalidSEIMessage, usage) }
        guard (1...maxSEIRepeatCount).contains(repeatCount) else {
            throw LiveRoomError(ErrorCode.invalidSEIMessage, "the repeat count must be 1-\(maxSEIRepeatCount), not \(repeatCount)")
        }
        let data: [UInt8]
        if word == "sei" {
            data = Array(text.utf8)
        } else {
            let digits = Array(text.filter { !$0.isWhitespace })
            guard digits.count % 2 == 0, digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
                throw LiveRoomError(ErrorCode.invalidSEIMessage, "sei-hex takes an even number of hex digits; \(usage)")
            }
            data = stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
        }
        guard data.count <= SEIMessage.maxDataLength else {
            throw LiveRoomError(ErrorCode.invalidSEIMessage, "an SEI message is at most \(SEIMessage.maxDataLength) bytes, not \(data.count)")
        }
        return .sendSEI(data: data, repeatCount: repeatCount)
    }

    /// `start-publish`, `update-publish`, `stop-publish`: publish media stream tasks.
    static func publishTaskCommand(_ word: String, _ rest: String) throws(LiveRoomError) -> SignalingRequest {
        switch word {
        case "start-publish":
            let usage = #"usage: start-publish {"target":{…},"encoderParam":{…},"mixingConfig":{…}}"#
            let object = try publishObject(rest, usage: usage)
            guard object["target"] != nil else {
                throw LiveRoomError(ErrorCode.missingField, "start-publish needs \"target\"; \(usage)")
            }
            return try publishRequest("startPublishMediaStream", object, command: word)
        case "update-publish":
            let usage = #"usage: update-publish <task> {"target":{…},"encoderParam":{…},"mixingConfig":{…}} (any of the three)"#
            let (taskId, json) = split(rest)
            guard !taskId.isEmpty, !json.isEmpty else { throw LiveRoomError(ErrorCode.missingField, usage) }
            var object = try publishObject(json, usage: usage)
            object["taskId"] = .string(taskId)
            return try publishRequest("updatePublishMediaStream", object, command: word)
        case "stop-publish":
            let (taskId, extra) = split(rest)
            guard extra.isEmpty else { throw LiveRoomError(ErrorCode.invalidField, "usage: stop-publish [task]") }
            return .publishTask(.stopPublishMediaStream(taskId: taskId))
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown command \"\(word)\"")
        }
    }

    /// The cross-room PK commands.
    static func pkCommand(_ word: String, _ rest: String) throws(LiveRoomError) -> RoomRequest {
        switch word {
        case "connect-room", "pk-request", "pk-accept", "pk-reject":
            let (roomText, user) = split(rest)
            guard let room = pkRoom(roomText), !user.isEmpty, !user.contains(where: \.isWhitespace) else {
                throw LiveRoomError(ErrorCode.pkInvalidParameter, "usage: \(word) <room> <user> (a numeric room as #123)")
            }
            switch word {
            case "connect-room": return .connectOtherRoom(room: room, userId: user)
            case "pk-request": return .requestPK(room: room, userId: user)
            default: return .answerPK(room: room, userId: user, accept: word == "pk-accept")
            }
        case "disconnect-room":
            guard rest.isEmpty else { throw LiveRoomError(ErrorCode.invalidField, "\(word) takes no argument") }
            return .disconnectOtherRoom
        case "pk-forward":
            let (roomText, modeText) = split(rest)
            guard let room = pkRoom(roomText), let mode = PKForwardMode(rawValue: modeText) else {
                throw LiveRoomError(ErrorCode.pkInvalidParameter, "usage: pk-forward <room> audio|video|both|none")
            }
            return .updateOtherRoomForwardMode(room: room, mode: mode)
        case "pk-battle":
            guard let seconds = Int(rest) else { throw LiveRoomError(ErrorCode.invalidPKBattle, "usage: pk-battle <seconds>") }
            return .startPKBattle(durationSec: seconds)
        case "pk-allow":
            let rooms = rest.split(whereSeparator: \.isWhitespace).compactMap { pkRoom(String($0)) }
            guard rooms.count <= RoomRequest.maxPKAllowList else {
                throw LiveRoomError(ErrorCode.pkInvalidParameter, "usage: pk-allow [room ...] (at most \(RoomRequest.maxPKAllowList) rooms)")
            }
            return .setPKAllowList(rooms: rooms)
        default:
            throw LiveRoomError(ErrorCode.unknownRequest, "unknown command \"\(word)\"")
        }
    }

    /// A room named on the command line: `#123` for the numeric room 123, anything else a string room.
    static func pkRoom(_ text: String) -> RoomID? {
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("#"), let number = UInt32(text.dropFirst()), number != 0 { return .number(number) }
        return .string(text)
    }

    /// The JSON object argument of `start-publish` and `update-publish`: only `target`,
    /// `encoderParam` and `mixingConfig` may be in it (a misspelt key would be dropped unseen).
    private static func publishObject(_ text: String, usage: String) throws(LiveRoomError) -> [String: JSONValue] {
        guard !text.isEmpty else { throw LiveRoomError(ErrorCode.missingField, usage) }
        let value: JSONValue
        do {
            value = try JSONValue.parse(text)
        } catch {
            throw LiveRoomError(ErrorCode.malformedJSON, "not valid JSON; \(usage)")
        }
        guard let object = value.objectValue else {
            throw LiveRoomError(ErrorCode.invalidField, "expected a JSON object, not \(value.typeName); \(usage)")
        }
        let known: Set = ["target", "encoderParam", "mixingConfig"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw LiveRoomError(ErrorCode.invalidField, "unknown key \"\(unknown)\"; \(usage)")
        }
        return object
    }

    /// The request of type `type` with `fields`, checked as the server checks it.
    private static func publishRequest(
        _ type: String, _ fields: [String: JSONValue], command: String
    ) throws(LiveRoomError) -> SignalingRequest {
        var object = fields
        object["type"] = .string(type)
        do {
            return try SignalingRequest.parse(.object(object))
        } catch {
            throw LiveRoomError(error.code, "\(command): \(error.message)")
        }
    }

    /// `product add|edit|remove|list …`.
    /// The admin API call (`/v1/<Action>` and its body without SdkAppId) that does what
    /// `product <text>` does on `join`, for the one-shot `liveroom product`.
    public static func productAdminCall(_ text: String, room: RoomID) throws(LiveRoomError) -> (action: String, body: JSONValue) {
        var body: [String: JSONValue] = ["RoomId": room.json]
        switch try productRequest(text) {
        case .addProduct(let product):
            body["Product"] = product
            return ("AddProduct", .object(body))
        case .editProduct(let itemNumber, let changes):
            body["ItemNumber"] = .number(Double(itemNumber))
            body["Changes"] = changes
            return ("ModifyProduct", .object(body))
        case .removeProduct(let itemNumber):
            body["ItemNumber"] = .number(Double(itemNumber))
            return ("RemoveProduct", .object(body))
        case .removeReplay(let replayId):
            body["ReplayId"] = .string(replayId)
            return ("RemoveReplay", .object(body))
        default:
            return ("DescribeProducts", .object(body))
        }
    }

    /// `grant-shop <user>` / `revoke-shop <user>`.
    private static func shopOwnerRequest(_ word: String, _ rest: String) throws(LiveRoomError) -> RoomRequest {
        guard !rest.isEmpty, !rest.contains(where: \.isWhitespace) else { throw LiveRoomError(ErrorCode.invalidParameter, "usage: \(word) <userId>") }
        return .shopOwner(userId: rest, grant: word == "grant-shop")
    }

    private static func productRequest(_ text: String) throws(LiveRoomError) -> RoomRequest {
        let usage = "usage: product add <json> | product edit <itemNumber> <json> | product remove <itemNumber> | product list [offset] | product remove-replay <replayId>"
        let (verb, rest) = split(text)
        func object(_ text: String) throws(LiveRoomError) -> JSONValue {
            guard let value = try? JSONValue.parse(text), value.objectValue != nil else {
                throw LiveRoomError(ErrorCode.invalidProduct, "product \(verb) needs a JSON object; \(usage)")
            }
            return value
        }
        func itemNumber(_ text: String) throws(LiveRoomError) -> Int {
            guard let number = Int(text) else { throw LiveRoomError(ErrorCode.invalidProduct, "product \(verb) needs an item number; \(usage)") }
            return number
        }
        switch verb {
        case "add": return .addProduct(try object(rest))
        case "edit":
            let (number, json) = split(rest)
            return .editProduct(itemNumber: try itemNumber(number), changes: try object(json))
        case "remove": return .removeProduct(itemNumber: try itemNumber(rest))
        case "remove-replay":
            guard !rest.isEmpty, !rest.contains(" ") else { throw LiveRoomError(ErrorCode.missingField, usage) }
            return .removeReplay(replayId: rest)
        case "list":
            guard rest.isEmpty || (Int(rest).map { (0...RoomRequest.maxProductOffset).contains($0) } ?? false) else {
                throw LiveRoomError(ErrorCode.invalidField, usage)
            }
            return .listProducts(offset: Int(rest) ?? 0, limit: RoomRequest.productPageSizes.upperBound)
        default: throw LiveRoomError(ErrorCode.missingField, usage)
        }
    }

    /// The first word and the rest, trimmed.
    private static func split(_ text: String) -> (String, String) {
        guard let space = text.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return (text, "") }
        return (String(text[..<space]), text[space...].trimmingCharacters(in: .whitespaces))
    }
}
