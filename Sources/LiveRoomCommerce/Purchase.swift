import LiveRoomProtocol

/// The rules of a purchase, the same for every store: what a request may ask for and, in this
/// order, why a product cannot be bought (not in the catalogue, off the shelf, over the buyer's
/// limit, not enough stock). Stores only run the SQL that takes the stock atomically and call
/// these for the answer.
public enum Purchase {
    /// Checks what a request asks for before any store is asked.
    public static func check(quantity: Int, requestId: String?) throws(LiveRoomError) {
        guard Order.quantityRange.contains(quantity) else {
            throw LiveRoomError(ErrorCode.invalidPurchase, "quantity must be \(Order.quantityRange.lowerBound)-\(Order.quantityRange.upperBound), not \(quantity)")
        }
        if let requestId, requestId.isEmpty || requestId.count > Order.maxRequestIdLength {
            throw LiveRoomError(ErrorCode.invalidPurchase, "requestId must be 1-\(Order.maxRequestIdLength) characters")
        }
    }

    /// The product if it can be sold at all: it is in the catalogue and on the shelf.
    public static func offered(_ product: Product?, itemNumber: Int) throws(LiveRoomError) -> Product {
        guard let product else { throw productNotFound(itemNumber) }
        guard product.onShelf else { throw LiveRoomError(ErrorCode.productOffShelf, "item \(itemNumber) is off the shelf") }
        return product
    }

    /// Checks the buyer's limit, `held` being what the buyer has reserved or paid for already.
    public static func checkLimit(_ product: Product, quantity: Int, held: Int) throws(LiveRoomError) {
        guard let limit = product.limitPerUser, held + quantity > limit else { return }
        throw LiveRoomError(ErrorCode.purchaseLimitExceeded, "item \(product.itemNumber) is limited to \(limit) per buyer; you hold \(held)")
    }

    /// Checks that `stock` covers `quantity`.
    public static func checkStock(_ stock: Int, quantity: Int, itemNumber: Int) throws(LiveRoomError) {
        guard stock < quantity else { return }
        throw stock == 0 ? soldOut(itemNumber) : LiveRoomError(ErrorCode.soldOut, "only \(stock) of item \(itemNumber) left")
    }

    public static func soldOut(_ itemNumber: Int) -> LiveRoomError {
        LiveRoomError(ErrorCode.soldOut, "item \(itemNumber) is sold out")
    }

    public static func productNotFound(_ itemNumber: Int) -> LiveRoomError {
        LiveRoomError(ErrorCode.productNotFound, "there is no item \(itemNumber) in the catalogue")
    }
}

/// What one buyer holds of one item: the units of their reserved and paid orders, and the request
/// ids of all their orders of it (a retry of one gets that order back).
public struct Holding: Sendable, Equatable {
    public var quantity = 0
    public var requestIds: Set<String> = []

    public init(quantity: Int = 0, requestIds: Set<String> = []) {
        self.quantity = quantity
        self.requestIds = requestIds
    }

    /// Each buyer's holding among `orders` (the orders of one item).
    public static func of(_ orders: some Sequence<Order>) -> [String: Holding] {
        var holdings: [String: Holding] = [:]
        for order in orders {
            // In place: a copy would copy the buyer's request ids on each insert.
            if order.state == .reserved || order.state == .paid { holdings[order.userId, default: Holding()].quantity += order.quantity }
            if let requestId = order.requestId { holdings[order.userId, default: Holding()].requestIds.insert(requestId) }
        }
        return holdings
    }
}

/// The items a room's shop has seen sell out, so that a flash sale's late buyers hear "sold out"
/// (or "over your limit") without a store transaction each. It knows what each buyer holds of
/// the item, so it answers them all the way the store would, limit before stock; only a retried
/// request (a request id of one of the buyer's orders of the item) still asks the store, which
/// gives that order back. A request id the buyer used for another item is not known here: such
/// a request is answered as a new one. An item is forgotten when anything changes it (an edit,
/// stock coming back from a cancelled or expired order: every change the shop tells the room),
/// and after ``maxAge`` in any case, so that a change this node did not see (another node of a
/// cluster) is read from the store within that time.
///
/// A purchase that found the stock empty may finish after a change it did not see: it says which
/// ``generation`` it started in, and is not believed when a change came since.
public struct SoldOutItems: Sendable {
    /// How long "sold out" is believed without asking the store again.
    public static let maxAge = Duration.seconds(1)
    /// The most items kept at once (the oldest goes first) and the most orders of one item; an
    /// item with more orders is not kept. Together they bound the memory a room's shop spends.
    public static let maxItems = 4
    public static let maxOrders = 10_000

    private struct Item {
        var product: Product
        var holdings: [String: Holding]
        var since: ContinuousClock.Instant
    }

    private var items: [Int: Item] = [:]
    /// Counts changes; a purchase notes it before asking the store.
    public private(set) var generation = 0

    public init() {}

    /// The answer to a purchase without asking the store, or nil when the store must answer.
    public mutating func refusal(
        _ itemNumber: Int, quantity: Int, userId: String, requestId: String?, now: ContinuousClock.Instant
    ) -> LiveRoomError? {
        guard knows(itemNumber, now: now) else {
            items[itemNumber] = nil  // forgotten once too old
            return nil
        }
        guard let item = items[itemNumber] else { return nil }
        let holding = item.holdings[userId]
        if let requestId, holding?.requestIds.contains(requestId) == true { return nil }
        do {
            try Purchase.checkLimit(item.product, quantity: quantity, held: holding?.quantity ?? 0)
            try Purchase.checkStock(0, quantity: quantity, itemNumber: itemNumber)
            return nil
        } catch {
            return error
        }
    }

    /// Whether `itemNumber` is known to be sold out at `now`.
    public func knows(_ itemNumber: Int, now: ContinuousClock.Instant) -> Bool {
        items[itemNumber].map { now - $0.since < Self.maxAge } ?? false
    }

    /// What the store said after a purchase started in `generation` found no stock (or took the
    /// last of it): the product as it is now and its orders (``OrderStore/orders(of:room:atMost:)``).
    /// Kept, as what each buyer holds, when nothing changed the shop since, the product is on
    /// the shelf with no stock, and it has at most ``maxOrders`` orders.
    public mutating func soldOut(_ product: Product, orders: [Order], seenIn generation: Int, now: ContinuousClock.Instant) {
        guard generation == self.generation, product.onShelf, product.stock == 0, orders.count <= Self.maxOrders else { return }
        if items[product.itemNumber] == nil, items.count >= Self.maxItems,
            let oldest = items.min(by: { $0.value.since < $1.value.since })?.key
        {
            items[oldest] = nil
        }
        items[product.itemNumber] = Item(product: product, holdings: Holding.of(orders), since: now)
    }

    /// Something changed `itemNumber` (or removed it): ask the store again.
    public mutating func changed(_ itemNumber: Int) {
        generation &+= 1
        items[itemNumber] = nil
    }
}

/// A room's view of its products' stock, for answering a burst at wire speed: the stock the
/// store last reported for each item and the units that purchases on their way to the store
/// ask for. A purchase for more than the stock not yet asked for is answered sold out at once,
/// without waiting for the store or for the purchases before it; the store stays the judge of
/// the rest (it never sells below zero), and an item whose stock is not known yet is admitted.
///
/// So when 10,000 buyers press "buy" for 100 units, about 100 purchases go to the store and the
/// others hear -7310 as fast as the server reads them. A purchase the store then refuses (a
/// buyer over the limit) gives its units back to the view when its answer comes.
public struct StockView: Sendable {
    struct Item {
        /// The stock as the store last reported it; nil until it has.
        var stock: Int?
        /// Units asked for by purchases admitted and not yet answered.
        var pending = 0
        /// The buyers' request ids admitted (user id, NUL, request id): a retry of one is
        /// admitted again, so that the store answers it with its order.
        var requests: Set<String> = []

        /// Admits `quantity` units (a retry of a request id kept is always admitted), keeping
        /// the request id when `keep`: the refusal, if any, and whether the id was kept.
        mutating func admit(quantity: Int, key: String?, keep: Bool) -> (LiveRoomError?, kept: Bool) {
            if let key, requests.contains(key) {
                pending += quantity
                return (nil, false)
            }
            if let stock, pending + quantity > stock {
                let left = max(0, stock - pending)
                let message = left == 0 ? "sold out: every unit left is taken by purchases in progress" : "sold out: \(left) left that no purchase in progress has asked for"
                return (LiveRoomError(ErrorCode.soldOut, message), false)
            }
            pending += quantity
            guard let key, keep else { return (nil, false) }
            return (nil, requests.insert(key).inserted)
        }
    }

    private var items: [Int: Item] = [:]
    /// The most items the view keeps (a room holds at most 500 products): purchases of other
    /// item numbers (none in the catalogue, or a hostile client's) are admitted uncounted.
    static let maxItems = 1_024
    /// The most request ids the view keeps, over all items; later ones are not kept, and a
    /// retry of one is answered by the view like a new purchase.
    static let maxRequests = 50_000
    private var requestCount = 0

    public init() {}

    /// A purchase of `quantity` units of `itemNumber` wants to go to the store: nil admits it
    /// (its units are counted until ``answered(_:quantity:stockLeft:)``), else the sold-out
    /// refusal to answer at once.
    public mutating func admit(_ itemNumber: Int, quantity: Int, userId: String, requestId: String?) -> LiveRoomError? {
        guard items[itemNumber] != nil || items.count < Self.maxItems else { return nil }
        let key = requestId.map { userId + "\u{0}" + $0 }
        let keep = requestCount < Self.maxRequests
        // Changed in place: a copy of the item would copy its set of request ids on each insert,
        // a cost that grows with every purchase of the sale (it did: 50,000 ids, 1,200 buys a second).
        let (refusal, kept) = items[itemNumber, default: Item()].admit(quantity: quantity, key: key, keep: keep)
        if kept { requestCount += 1 }
        return refusal
    }

    /// An admitted purchase was answered; `stockLeft` is the stock the store reported with it
    /// (after it, for a sale; 0 for a sold-out refusal), nil when it said nothing of the stock.
    public mutating func answered(_ itemNumber: Int, quantity: Int, stockLeft: Int?) {
        // Taken out and put back, not copied: the dictionary holds no second reference to its set.
        guard var item = items.removeValue(forKey: itemNumber) else { return }
        item.pending = max(0, item.pending - quantity)
        if let stockLeft { item.stock = stockLeft }
        // An item of unknown stock with nothing pending and no request kept is forgotten (it may not exist).
        if item.stock != nil || item.pending > 0 || !item.requests.isEmpty { items[itemNumber] = item }
    }

    /// The store reported an item's stock (a change, an edit, stock back from an order).
    public mutating func known(_ itemNumber: Int, stock: Int) {
        guard items[itemNumber] != nil || items.count < Self.maxItems else { return }
        items[itemNumber, default: Item()].stock = stock
    }

    /// The item is gone: nothing is known of it.
    public mutating func removed(_ itemNumber: Int) {
        items[itemNumber]?.stock = nil
    }

    /// Units of `itemNumber` asked for by purchases in progress.
    public func pending(_ itemNumber: Int) -> Int { items[itemNumber]?.pending ?? 0 }
}
