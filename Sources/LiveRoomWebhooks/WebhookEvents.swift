import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol

/// The event groups and types LiveRoom posts. Groups 1 and 2 are TRTC's room and media
/// callbacks; LiveRoom's own groups start at 1001 (TRTC's own are small numbers) and their
/// event types are the group times 100 plus a number (100101, 100102, ...).
public enum WebhookEventType {
    public static let roomGroup = 1
    public static let createRoom = 101
    public static let dismissRoom = 102
    public static let enterRoom = 103
    public static let exitRoom = 104
    public static let changeRole = 105

    public static let mediaGroup = 2
    public static let startVideo = 201
    public static let stopVideo = 202
    public static let startAudio = 203
    public static let stopAudio = 204

    public static let publishTaskGroup = 1001
    public static let cdnStreamStateChanged = 100101

    public static let commerceGroup = 1002
    public static let orderPlaced = 100201
    public static let orderPaid = 100202
    public static let orderCancelled = 100203
    public static let orderExpired = 100204
    public static let productSoldOut = 100205

    public static let pkGroup = 1003
    public static let pkLinkMade = 100301
    public static let pkLinkEnded = 100302
    public static let pkBattleStarted = 100303
    public static let pkBattleEnded = 100304
}

/// Builds webhook events from what the room hub carries out (pure functions).
public enum WebhookEvents {
    /// TRTC's role numbers: 20 anchor, 21 audience.
    public static func trtcRole(_ role: Role) -> Int64 { role == .anchor ? 20 : 21 }

    /// LiveRoom does not know a client's platform: `TerminalType` and `UserType` are 0 (unknown).
    static let unknown: WebhookValue = .int(0)

    /// Event 104's `Reason` for a history record's reason: 1 exit, 2 connection lost,
    /// 3 removed by the admin API, 4 room dismissed, 5 replaced by a newer session of the user.
    public static func exitReason(_ reason: String) -> Int64 {
        switch reason {
        case "exit": 1
        case "disconnected": 2
        case "removed": 3
        case "dismissed": 4
        case "replaced": 5
        default: 0
        }
    }

    /// Event 102's `Reason`: 1 the last user left, 2 dismissed (admin API or server shutdown).
    public static func dismissReason(_ reason: String) -> Int64 {
        switch reason {
        case "empty": 1
        case "dismissed": 2
        default: 0
        }
    }

    /// Groups 1, 2 and the PK links of group 1003 from room records, in order. `now` (ms) times
    /// the records that carry no time of their own (media and PK links). A room's creation
    /// names the user whose entering created it.
    public static func events(from records: [RoomRecord], now: Int64) -> [WebhookEvent] {
        var events: [WebhookEvent] = []
        for (index, record) in records.enumerated() {
            switch record {
            case .roomCreated(let roomId, let at):
                var creator = ""
                if index + 1 < records.count, case .userEntered(roomId, let userId, _, _) = records[index + 1] { creator = userId }
                events.append(room(roomId, WebhookEventType.createRoom, at: at, userId: creator, role: nil, reason: nil))
            case .roomDissolved(let roomId, let at, let reason):
                events.append(room(roomId, WebhookEventType.dismissRoom, at: at, userId: "", role: nil, reason: dismissReason(reason)))
            case .userEntered(let roomId, let userId, let role, let at):
                events.append(room(roomId, WebhookEventType.enterRoom, at: at, userId: userId, role: role, reason: nil))
            case .roleChanged(let roomId, let userId, let role, let at):
                events.append(room(roomId, WebhookEventType.changeRole, at: at, userId: userId, role: role, reason: nil))
            case .userLeft(let roomId, let userId, let at, let reason):
                events.append(room(roomId, WebhookEventType.exitRoom, at: at, userId: userId, role: nil, reason: exitReason(reason)))
            case .mediaChanged(let roomId, let userId, let video, let audio):
                if let video {
                    events.append(media(roomId, video ? WebhookEventType.startVideo : WebhookEventType.stopVideo, at: now, userId: userId))
                }
                if let audio {
                    events.append(media(roomId, audio ? WebhookEventType.startAudio : WebhookEventType.stopAudio, at: now, userId: userId))
                }
            case .pkLinked(let link, let onlyRoom):
                events += pkLink(link, type: WebhookEventType.pkLinkMade, at: now).filter { onlyRoom == nil || $0.roomKey == onlyRoom }
            case .pkUnlinked(let link, let onlyRoom):
                events += pkLink(link, type: WebhookEventType.pkLinkEnded, at: now).filter { onlyRoom == nil || $0.roomKey == onlyRoom }
            }
        }
        return events
    }

    static func room(_ roomKey: String, _ type: Int, at: Int64, userId: String, role: Role?, reason: Int64?) -> WebhookEvent {
        var fields = [
            WebhookField("UserId", .string(userId)), WebhookField("Role", .int(role.map(trtcRole) ?? 0)),
            WebhookField("TerminalType", unknown), WebhookField("UserType", unknown),
        ]
        if let reason { fields.append(WebhookField("Reason", .int(reason))) }
        return WebhookEvent(roomKey: roomKey, group: WebhookEventType.roomGroup, type: type, at: at, fields: fields)
    }

    static func media(_ roomKey: String, _ type: Int, at: Int64, userId: String) -> WebhookEvent {
        WebhookEvent(
            roomKey: roomKey, group: WebhookEventType.mediaGroup, type: type, at: at,
            fields: [
                WebhookField("UserId", .string(userId)), WebhookField("Role", .int(20)), WebhookField("TerminalType", unknown),
                WebhookField("UserType", unknown),
            ])
    }

    /// One event for each of the link's rooms, in that room's order: `UserId` its anchor,
    /// `OtherRoomId` and `OtherUserId` the far end, `Caller` whether this end made the link.
    static func pkLink(_ link: PKLink, type: Int, at: Int64) -> [WebhookEvent] {
        [(link.caller, link.callee, true), (link.callee, link.caller, false)].map { end, other, isCaller in
            WebhookEvent(
                roomKey: end.roomId, group: WebhookEventType.pkGroup, type: type, at: at,
                fields: [
                    WebhookField("UserId", .string(end.userId)), WebhookField("OtherRoomId", roomIdValue(other.roomId)),
                    WebhookField("OtherUserId", .string(other.userId)), WebhookField("Caller", .bool(isCaller)),
                ])
        }
    }

    /// A room id as TRTC writes `RoomId`: a number for a numeric room, a string otherwise.
    public static func roomIdValue(_ roomKey: String) -> WebhookValue {
        switch RoomID(key: roomKey) {
        case .number(let number): .int(Int64(number))
        case .string(let id): .string(id)
        }
    }

    // MARK: Publish tasks

    /// A publish task's CDN URL changed state, as `onCdnStreamStateChanged` reports it
    /// (`Status` 0–4, `Code`, `Message`).
    public static func cdnStreamStateChanged(
        roomKey: String, taskId: String, url: String, status: Int, code: Int, message: String, at: Int64
    ) -> WebhookEvent {
        WebhookEvent(
            roomKey: roomKey, group: WebhookEventType.publishTaskGroup, type: WebhookEventType.cdnStreamStateChanged, at: at,
            fields: [
                WebhookField("TaskId", .string(taskId)), WebhookField("CdnUrl", .string(url)), WebhookField("Status", .int(Int64(status))),
                WebhookField("Code", .int(Int64(code))), WebhookField("Message", .string(message)),
            ])
    }

    // MARK: Commerce

    /// An order's event: placed (reserved), paid, cancelled or expired, by its state.
    public static func order(_ order: Order, at: Int64) -> WebhookEvent {
        let type = switch order.state {
        case .reserved: WebhookEventType.orderPlaced
        case .paid: WebhookEventType.orderPaid
        case .cancelled: WebhookEventType.orderCancelled
        case .expired: WebhookEventType.orderExpired
        }
        return WebhookEvent(
            roomKey: order.roomId, group: WebhookEventType.commerceGroup, type: type, at: at,
            fields: [
                WebhookField("OrderId", .string(order.orderId)), WebhookField("UserId", .string(order.userId)),
                WebhookField("ItemNumber", .int(Int64(order.itemNumber))), WebhookField("Quantity", .int(Int64(order.quantity))),
                WebhookField("AmountMinor", .int(order.amount.minorUnits)), WebhookField("Currency", .string(order.amount.currency)),
                WebhookField("State", .string(order.state.rawValue)),
            ])
    }

    /// A product's stock reached 0.
    public static func productSoldOut(roomKey: String, itemNumber: Int, at: Int64) -> WebhookEvent {
        WebhookEvent(
            roomKey: roomKey, group: WebhookEventType.commerceGroup, type: WebhookEventType.productSoldOut, at: at,
            fields: [WebhookField("ItemNumber", .int(Int64(itemNumber)))])
    }

    // MARK: PK battles

    /// A battle started: one event per room, `Rooms` the rooms in the battle's order.
    public static func battleStarted(_ battle: PKBattle, at: Int64) -> [WebhookEvent] {
        battle.rooms.map { side in
            WebhookEvent(
                roomKey: side.roomId, group: WebhookEventType.pkGroup, type: WebhookEventType.pkBattleStarted, at: at,
                fields: [
                    WebhookField("BattleId", .string(battle.battleId)), WebhookField("UserId", .string(side.userId)),
                    WebhookField("StartedAt", .int(battle.startedAt)), WebhookField("EndsAt", .int(battle.endsAt)),
                    WebhookField("Rooms", .string(battle.rooms.map { RoomID(key: $0.roomId).description }.joined(separator: ","))),
                ])
        }
    }

    /// A battle ended: one event per room with its units and the winner (`WinnerRoomId`,
    /// an empty string for a draw, `Won` whether this room won).
    public static func battleEnded(_ battle: PKBattle, at: Int64) -> [WebhookEvent] {
        battle.rooms.map { side in
            let units = battle.results?.first { $0.roomId == side.roomId }?.units ?? 0
            return WebhookEvent(
                roomKey: side.roomId, group: WebhookEventType.pkGroup, type: WebhookEventType.pkBattleEnded, at: at,
                fields: [
                    WebhookField("BattleId", .string(battle.battleId)), WebhookField("UserId", .string(side.userId)),
                    WebhookField("Units", .int(Int64(units))),
                    WebhookField("WinnerRoomId", battle.winnerRoomId.map(roomIdValue) ?? .string("")),
                    WebhookField("Won", .bool(battle.winnerRoomId == side.roomId)),
                ])
        }
    }
}
