import LiveRoomProtocol

/// Where rooms' catalogues are kept: the embedded SQLite database (`LiveRoomStore`), or later
/// a shared one. Every call is one transaction; failures the user must hear are
/// ``LiveRoomError``s with their codes, anything else is the store's own error.
public protocol CatalogueStore: Sendable {
    /// Adds `product` (version 1) to `room`'s catalogue.
    func addProduct(_ product: Product, room: String) async throws -> Product
    /// Replaces a product if its stored version is still `product.version`, storing it as the
    /// next version; -7301 when it is gone, -7302 when someone changed it first.
    func replaceProduct(_ product: Product, room: String) async throws -> Product
    /// Removes a product; -7301 when there is none. Returns its replays, whose files are to go too.
    @discardableResult
    func removeProduct(_ itemNumber: Int, room: String) async throws -> [Replay]
    /// One product, if there is one.
    func product(_ itemNumber: Int, room: String) async throws -> Product?
    /// The room's catalogue, by item number.
    func products(room: String) async throws -> [Product]
    /// Adds a finished replay to its product, keeping the newest `keep`; returns the product and
    /// the replays dropped (whose files are to go). -7301 when the product is gone.
    func addReplay(_ replay: Replay, keep: Int) async throws -> (product: Product, dropped: [Replay])
    /// Removes a replay of `room`; -7306 when there is none. Returns it and its product now.
    func removeReplay(_ replayId: String, room: String) async throws -> (replay: Replay, product: Product)
    /// A replay by id, in any room.
    func replay(_ replayId: String) async throws -> Replay?
    /// The file names of every replay, to clear files no replay owns.
    func replayFileNames() async throws -> Set<String>
    /// Makes `popUp` the room's current pop-up, or (nil) ends it.
    func setPopUp(_ popUp: PopUp?, room: String) async throws
    /// The room's current pop-up, if there is one.
    func popUp(room: String) async throws -> PopUp?
    /// The users who may change the room's shop (``ShopOwners``), sorted.
    func shopOwners(room: String) async throws -> [String]
    /// Makes `userId` the shop's owner if it has none yet, in one transaction; the owners after.
    func claimShop(room: String, userId: String) async throws -> [String]
    /// Replaces the shop's owners with `owners` (checked by ``ShopOwners/check(_:)``); the owners after.
    func setShopOwners(_ owners: [String], room: String) async throws -> [String]
}

extension CatalogueStore {
    /// Refuses `userId`'s change of `room`'s shop (-7317) unless the user is one of its owners.
    public func requireShopOwner(_ userId: String, room: String, to action: String) async throws {
        try ShopOwners.require(userId, among: try await shopOwners(room: room), to: action)
    }
}

/// Who may change a room's shop: its catalogue, pop-ups, replays and battles. The first user to
/// enter the room as an anchor while its shop has none becomes its owner (TRTC's room owner is
/// the user who created the room), kept with the catalogue across the room's lives; an owner
/// grants and revokes others, the admin API names them. Co-hosts brought on mic and other
/// anchors are not owners unless granted.
public enum ShopOwners {
    /// The most owners a shop has.
    public static let maxPerRoom = 20

    /// `owners` as stored: distinct, sorted, each a user id TRTC takes, at most ``maxPerRoom``.
    public static func check(_ owners: [String]) throws(LiveRoomError) -> [String] {
        let distinct = Array(Set(owners)).sorted()
        guard distinct.count <= maxPerRoom else {
            throw LiveRoomError(ErrorCode.tooManyShopOwners, "a shop has at most \(maxPerRoom) owners; \(distinct.count) were named")
        }
        for userId in distinct where !isUserId(userId) {
            throw LiveRoomError(ErrorCode.invalidUserId, "owner \(userId.debugDescription.prefix(80)) is not a user id (1-32 letters, digits, _ and -)")
        }
        return distinct
    }

    /// A user id as TRTC takes it: 1–32 bytes of letters, digits, `_` and `-`.
    static func isUserId(_ userId: String) -> Bool {
        (1...32).contains(userId.utf8.count)
            && userId.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// Refuses a change of the shop by `userId`, who is not among `owners`.
    public static func require(_ userId: String, among owners: [String], to action: String) throws(LiveRoomError) {
        guard owners.contains(userId) else {
            throw LiveRoomError(ErrorCode.notShopOwner, "only the room's shop owners may \(action); \(userId) is not one (an owner grants it with grantShop)")
        }
    }
}

/// The product an anchor presents now: who popped it, when, and the message viewers got.
public struct PopUp: Sendable, Hashable {
    public var itemNumber: Int
    public var userId: String
    /// TRTC's `item_popup_msg` JSON.
    public var data: String
    /// Milliseconds since 1970.
    public var poppedAt: Int64

    public init(itemNumber: Int, userId: String, data: String, poppedAt: Int64) {
        self.itemNumber = itemNumber
        self.userId = userId
        self.data = data
        self.poppedAt = poppedAt
    }
}

/// A buyer's reservation of stock.
public struct Order: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Stock is held for the buyer until the shop confirms payment or the reservation expires.
        case reserved
        /// The shop's backend confirmed payment.
        case paid
        case cancelled
        /// Unpaid when the reservation ran out: its stock went back.
        case expired
    }

    public var orderId: String
    public var roomId: String
    public var itemNumber: Int
    public var userId: String
    public var quantity: Int
    /// Price × quantity when ordered.
    public var amount: Money
    public var state: State
    /// The buyer's own id for the request, which makes a repeated request return this order.
    public var requestId: String?
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var expiresAt: Int64
    public var updatedAt: Int64

    public init(
        orderId: String, roomId: String, itemNumber: Int, userId: String, quantity: Int, amount: Money, state: State, requestId: String?,
        createdAt: Int64, expiresAt: Int64, updatedAt: Int64
    ) {
        self.orderId = orderId
        self.roomId = roomId
        self.itemNumber = itemNumber
        self.userId = userId
        self.quantity = quantity
        self.amount = amount
        self.state = state
        self.requestId = requestId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.updatedAt = updatedAt
    }

    public static let quantityRange = RoomRequest.purchaseQuantities
    public static let maxRequestIdLength = RoomRequest.maxPurchaseRequestIdLength

    /// The order as the admin API shows it: the amount as a decimal string, times in Unix milliseconds.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "orderId": .string(orderId), "roomId": RoomID(key: roomId).json, "itemNumber": .number(Double(itemNumber)),
            "userId": .string(userId), "quantity": .number(Double(quantity)), "amount": .string(amount.decimal),
            "currency": .string(amount.currency), "state": .string(state.rawValue), "createTime": .number(Double(createdAt)),
            "expireTime": .number(Double(expiresAt)), "updateTime": .number(Double(updatedAt)),
        ]
        if let requestId { object["requestId"] = .string(requestId) }
        return .object(object)
    }
}

/// Where orders are kept; each call is one transaction that commits before it returns, so an
/// answered purchase survives a crash.
public protocol OrderStore: Sendable {
    /// Reserves `quantity` of a product for `userId`: checks shelf, the user's limit and stock,
    /// takes the stock and stores the order, all in one transaction. A `requestId` seen before
    /// for the same buyer returns that order (`repeated`) and takes nothing. Returns the order and
    /// the product as it is now.
    func buy(
        itemNumber: Int, quantity: Int, userId: String, requestId: String?, room: String, now: Int64, reservation: Duration
    ) async throws -> (order: Order, product: Product, repeated: Bool)
    /// Several purchases of one room in one go, in the given order, each as ``buy(itemNumber:quantity:userId:requestId:room:now:reservation:)``
    /// would make it; one refused does not touch the others. A store that can commits them
    /// together (SQLite: one transaction, one sync to disk for a whole batch of a flash sale).
    func buy(_ purchases: [PurchaseRequest], room: String, now: Int64, reservation: Duration) async -> [PurchaseOutcome]
    /// The product as it is now and every order of it (in any state), read together; nil when
    /// there are more than `atMost` orders. A room's shop reads it to answer later buyers of a
    /// sold-out product without a transaction each (``SoldOutItems``).
    func orders(of itemNumber: Int, room: String, atMost: Int) async throws -> (product: Product?, orders: [Order])?
    /// Orders of a room (optionally in one state), newest first: `limit` of them after skipping
    /// `offset`, and how many there are in all.
    func orders(room: String, state: Order.State?, offset: Int, limit: Int) async throws -> (total: Int, orders: [Order])
    /// One order.
    func order(_ orderId: String) async throws -> Order?
    /// Moves a reserved order to paid or cancelled (a cancelled one's stock goes back); returns
    /// the order and, when stock went back, the product.
    func settle(orderId: String, to state: Order.State, now: Int64) async throws -> (order: Order, product: Product?)
    /// Expires reservations unpaid at `now`, returning their stock; returns the products whose
    /// stock came back, each with the order that expired.
    func expireOrders(now: Int64) async throws -> [(room: String, product: Product, order: Order)]
}

/// One buy request of a batch (``OrderStore/buy(_:room:now:reservation:)``).
public struct PurchaseRequest: Sendable {
    public var itemNumber: Int
    public var quantity: Int
    public var userId: String
    public var requestId: String?

    public init(itemNumber: Int, quantity: Int, userId: String, requestId: String?) {
        self.itemNumber = itemNumber
        self.quantity = quantity
        self.userId = userId
        self.requestId = requestId
    }
}

/// What became of one purchase of a batch: the order and the product as it is after it (and
/// whether the request was seen before), or why not.
public typealias PurchaseOutcome = Result<(order: Order, product: Product, repeated: Bool), any Error>

extension OrderStore {
    /// One purchase after the other, each in its own transaction.
    public func buy(_ purchases: [PurchaseRequest], room: String, now: Int64, reservation: Duration) async -> [PurchaseOutcome] {
        var outcomes: [PurchaseOutcome] = []
        for purchase in purchases {
            do {
                outcomes.append(
                    .success(
                        try await buy(
                            itemNumber: purchase.itemNumber, quantity: purchase.quantity, userId: purchase.userId, requestId: purchase.requestId,
                            room: room, now: now, reservation: reservation)))
            } catch {
                outcomes.append(.failure(error))
            }
        }
        return outcomes
    }
}

/// Where PK sales battles are kept. A battle's score is computed from the orders table, so a
/// battle running when the server stopped can be finished after a restart.
public protocol BattleStore: Sendable {
    /// Stores a battle that has started (no result yet); -7218 when its id is taken or it has
    /// fewer than two different rooms or ends before it starts.
    func startBattle(_ battle: PKBattle) async throws
    /// What `room` sold with orders created in [`from`, `to`) that are reserved or paid.
    func sales(room: String, from: Int64, to: Int64) async throws -> PKBattle.Score
    /// Scores every room over [`startedAt`, min(`endsAt`, `endedAt`)) and stores the results and
    /// the winner in one transaction; a battle finished before is returned as stored. -7218 when
    /// there is no such battle.
    func finishBattle(_ battleId: String, endedAt: Int64) async throws -> PKBattle
    /// One battle, if there is one.
    func battle(_ battleId: String) async throws -> PKBattle?
    /// The newest `limit` battles `room` fought in, newest first.
    func battles(room: String, limit: Int) async throws -> [PKBattle]
    /// Battles not finished yet (those a restart must finish), the soonest due first.
    func unfinishedBattles() async throws -> [PKBattle]
}

/// A room's shop: its catalogue, pop-up, orders and sales battles.
public typealias ShopStore = CatalogueStore & OrderStore & BattleStore
