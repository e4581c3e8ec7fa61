import LiveRoomProtocol

// The refusals every shop store gives in the same words, whatever its database: the SQLite
// and PostgreSQL stores check the same things before and inside their transactions.

extension PKBattle {
    /// Whether a new battle can be stored: an id of 1 to ``maxBattleIdLength`` characters,
    /// ``minRooms`` or more different rooms, an end after its start.
    public func checkNew() throws(LiveRoomError) {
        guard !battleId.isEmpty, battleId.count <= Self.maxBattleIdLength else {
            throw LiveRoomError(ErrorCode.invalidParameter, "battleId must be 1-\(Self.maxBattleIdLength) characters")
        }
        guard rooms.count >= Self.minRooms, Set(rooms.map(\.roomId)).count == rooms.count else {
            throw LiveRoomError(ErrorCode.invalidParameter, "a battle needs \(Self.minRooms) or more different rooms")
        }
        guard endsAt > startedAt else {
            throw LiveRoomError(ErrorCode.invalidParameter, "a battle must end after it starts")
        }
    }

    public static func alreadyExists(_ battleId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.invalidParameter, "there is already a battle \(battleId.quoted)")
    }

    public static func notFound(_ battleId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.invalidParameter, "there is no battle \(battleId.quoted)")
    }
}

extension Order {
    public static func notFound(_ orderId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.orderNotFound, "there is no order \(orderId.quoted)")
    }

    /// Only a reserved order is paid or cancelled.
    public func checkReserved() throws(LiveRoomError) {
        guard state == .reserved else { throw Self.notReserved(self) }
    }

    public static func notReserved(_ order: Order) -> LiveRoomError {
        LiveRoomError(ErrorCode.orderNotReserved, "order \(order.orderId.quoted) is \(order.state.rawValue), not reserved")
    }
}

extension Replay {
    public static func notFound(_ replayId: String) -> LiveRoomError {
        LiveRoomError(ErrorCode.replayNotFound, "there is no replay \(replayId.quoted) in this room")
    }
}

extension Product {
    public static var catalogueFull: LiveRoomError {
        LiveRoomError(ErrorCode.tooManyProducts, "the room's catalogue holds \(maxPerRoom) products, the most it may")
    }

    public static func alreadyInCatalogue(_ itemNumber: Int) -> LiveRoomError {
        LiveRoomError(ErrorCode.productExists, "item \(itemNumber) is already in the catalogue")
    }

    /// An edit that names a version other than the stored one.
    public static func versionConflict(_ itemNumber: Int, stored: Int, given: Int) -> LiveRoomError {
        LiveRoomError(
            ErrorCode.productVersionConflict,
            "item \(itemNumber) is at version \(stored), not \(given): someone changed it first; list it and edit again")
    }
}
