import LiveRoomProtocol

/// A timed sales battle between the rooms of a cross-room PK: each room scores the units and
/// the amount of the orders placed in it from ``startedAt`` until ``endsAt`` (or an earlier
/// end). The store keeps it, so a finished battle's result outlives a restart and a battle
/// running when the server stopped is finished afterwards from the orders.
public struct PKBattle: Sendable, Hashable {
    /// One room of the battle and the anchor who fights for it.
    public struct Side: Sendable, Hashable {
        /// The room's key (`RoomID.key`).
        public var roomId: String
        /// The room's anchor.
        public var userId: String

        public init(roomId: String, userId: String) {
            self.roomId = roomId
            self.userId = userId
        }
    }

    /// What one room sold during the battle: reserved and paid orders.
    public struct Score: Sendable, Hashable {
        /// The room's key (`RoomID.key`).
        public var roomId: String
        /// Units ordered.
        public var units: Int
        /// The orders' amounts per currency, in minor units; no entry for a currency with no orders.
        public var amounts: [String: Int64]

        public init(roomId: String, units: Int, amounts: [String: Int64]) {
            self.roomId = roomId
            self.units = units
            self.amounts = amounts
        }

        /// The amounts as ``Money``, by currency.
        public var money: [Money] {
            amounts.sorted { $0.key < $1.key }.map { Money(minorUnits: $0.value, currency: $0.key) }
        }

        /// The score as the admin API and events show it: amounts as decimal strings with their currency.
        public var json: JSONValue {
            [
                "roomId": RoomID(key: roomId).json, "units": .number(Double(units)),
                "amounts": .array(money.map { ["amount": .string($0.decimal), "currency": .string($0.currency)] }),
            ]
        }
    }

    /// Unique; chosen by whoever starts the battle.
    public var battleId: String
    /// The rooms in the order they were named.
    public var rooms: [Side]
    /// Milliseconds since 1970.
    public var startedAt: Int64
    /// When the battle is due to end; orders from then on do not count.
    public var endsAt: Int64
    /// When it was finished (at ``endsAt`` or earlier, when the PK stopped); nil while it runs.
    public var endedAt: Int64?
    /// Every room's score, in the order of ``rooms``, once finished.
    public var results: [Score]?
    /// The winning room once finished; nil while it runs and for a draw.
    public var winnerRoomId: String?

    public init(
        battleId: String, rooms: [Side], startedAt: Int64, endsAt: Int64, endedAt: Int64? = nil, results: [Score]? = nil,
        winnerRoomId: String? = nil
    ) {
        self.battleId = battleId
        self.rooms = rooms
        self.startedAt = startedAt
        self.endsAt = endsAt
        self.endedAt = endedAt
        self.results = results
        self.winnerRoomId = winnerRoomId
    }

    /// The fewest rooms a battle has.
    public static let minRooms = 2
    public static let maxBattleIdLength = 64

    /// Whether it has a result (a winner or a draw).
    public var isFinished: Bool { endedAt != nil }

    /// The room that sold the most, or nil for a draw. When every room sold in one currency
    /// (or nothing), the highest amount wins; amounts in different currencies cannot be
    /// compared, so then the most units wins. A tie at the top is a draw.
    public static func winner(of scores: [Score]) -> String? {
        let currencies = Set(scores.flatMap(\.amounts.keys))
        let points: [(roomId: String, points: Int64)]
        if currencies.count <= 1 {
            let currency = currencies.first ?? ""
            points = scores.map { ($0.roomId, $0.amounts[currency] ?? 0) }
        } else {
            points = scores.map { ($0.roomId, Int64($0.units)) }
        }
        guard let best = points.map(\.points).max() else { return nil }
        let leaders = points.filter { $0.points == best }
        return leaders.count == 1 ? leaders[0].roomId : nil
    }

    /// The battle as the admin API and events show it, times in Unix milliseconds; `results`,
    /// `endTime` (when finished) and `winnerRoomId` are null while it runs, and `winnerRoomId` is
    /// null for a draw.
    public var json: JSONValue {
        [
            "battleId": .string(battleId),
            "rooms": .array(rooms.map { ["roomId": RoomID(key: $0.roomId).json, "userId": .string($0.userId)] }),
            "startTime": .number(Double(startedAt)), "dueTime": .number(Double(endsAt)),
            "endTime": endedAt.map { .number(Double($0)) } ?? .null,
            "results": results.map { .array($0.map(\.json)) } ?? .null,
            "winnerRoomId": winnerRoomId.map { RoomID(key: $0).json } ?? .null,
        ]
    }
}
