import NIOCore
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWebhooks
import Synchronization

/// Who sits in which room, as the room machine last said (``RoomsStateMachine/takeSeatChanges()``),
/// for connections to read without asking the room hub; and each seat's budget of purchases.
final class Seats: Sendable {
    private struct Seat {
        var roomId: String
        var userId: String
        /// The same budget as the room changes the machine admits (10 a second, bursts of 20),
        /// kept here because purchases do not pass the machine.
        var purchases = TokenBucket(capacity: RoomsStateMachine.roomChangeBurst, ratePerSecond: RoomsStateMachine.roomChangesPerSecond)
    }

    private let seats = Mutex<[SessionID: Seat]>([:])

    func apply(_ changes: [(session: SessionID, seat: (roomId: String, userId: String)?)]) {
        guard !changes.isEmpty else { return }
        seats.withLock { seats in
            for (session, seat) in changes {
                seats[session] = seat.map { Seat(roomId: $0.roomId, userId: $0.userId) }
            }
        }
    }

    /// The room and user of `session`, with one purchase taken from its budget, or why not.
    func takePurchase(by session: SessionID, now: ContinuousClock.Instant) throws(LiveRoomError) -> (roomId: String, userId: String) {
        try seats.withLock { seats throws(LiveRoomError) in
            guard var seat = seats[session] else { throw LiveRoomError(ErrorCode.notInRoom, "enter a room first") }
            guard seat.purchases.canTake(1, now: now) else {
                throw LiveRoomError(
                    ErrorCode.roomChangeRateLimited,
                    "refused: over \(Int(RoomsStateMachine.roomChangesPerSecond)) buy requests per second (bursts of \(Int(RoomsStateMachine.roomChangeBurst)))")
            }
            seat.purchases.take(1, now: now)
            seats[session] = seat
            return (seat.roomId, seat.userId)
        }
    }
}

/// One room's shop beside the room hub. Its purchases come here straight from the buyers'
/// connections and run a few at a time in the order they came (the store orders their writes);
/// what they change is gathered (``ShopNews``) and told to the room once per interval. Once an
/// item sells out, later buyers hear so without a store transaction (``SoldOutItems``). A flash
/// sale in one room so keeps the hub, and every other room, free.
final class RoomShop: Sendable {
    let roomId: String
    private let news = Mutex((news: ShopNews(), scheduled: false))
    private let soldOut = Mutex(SoldOutItems())
    /// Purchases waiting for a worker, and how many workers run. A burst of purchases waits
    /// here, in the room's own queue, not as thousands of tasks in the process's shared pool,
    /// where every other room's work would queue behind them.
    private let queue = Mutex((waiting: CircularBuffer<@Sendable () async -> Void>(), workers: 0))
    /// Purchases run side by side at most this many at a time (SQLite writes one at a time;
    /// PostgreSQL's pool takes a few).
    static let maxWorkers = 4
    /// How long changes gather before the room hears them: at most 5 onProductChanged a second
    /// per room, however fast stock moves.
    static let newsInterval = Duration.milliseconds(200)

    init(roomId: String) {
        self.roomId = roomId
    }

    /// Runs `work` once a worker is free. The room's purchases are taken in the order they came;
    /// with several workers on several threads, one may begin a few places (fewer than
    /// ``maxWorkers``) after a purchase that came later.
    func submit(_ work: @escaping @Sendable () async -> Void) {
        let startsWorker = queue.withLock { queue in
            queue.waiting.append(work)
            guard queue.workers < Self.maxWorkers else { return false }
            queue.workers += 1
            return true
        }
        guard startsWorker else { return }
        Task {
            while let next = self.queue.withLock({ queue in
                if let next = queue.waiting.popFirst() { return next }
                queue.workers -= 1
                return nil
            }) {
                await next()
                // A purchase answered from memory does not suspend: let other rooms' work in
                // between, or a burst would hold the shared pool's threads until it is done.
                await Task.yield()
            }
        }
    }

    /// The answer to a purchase without asking the store (the item is known sold out), or nil.
    func refusal(_ itemNumber: Int, quantity: Int, userId: String, requestId: String?) -> LiveRoomError? {
        soldOut.withLock { $0.refusal(itemNumber, quantity: quantity, userId: userId, requestId: requestId, now: .now) }
    }

    /// Counts the changes to the shop's products; a purchase reads it before asking the store.
    var generation: Int { soldOut.withLock { $0.generation } }

    /// A purchase started in `generation` found no stock of `itemNumber` left, or took the last
    /// of it: unless that is known already, reads the item's orders so that later buyers are
    /// answered without the store.
    func learnSoldOut(_ itemNumber: Int, seenIn generation: Int, store: any ShopStore) async {
        guard !soldOut.withLock({ $0.knows(itemNumber, now: .now) }),
            let (product, orders) = try? await store.orders(of: itemNumber, room: roomId, atMost: SoldOutItems.maxOrders), let product
        else { return }
        soldOut.withLock { $0.soldOut(product, orders: orders, seenIn: generation, now: .now) }
    }

    /// A product changed (an edit, stock back from an order, a replay): the room hears it, and
    /// whether it is sold out is asked of the store again.
    func changed(_ product: Product, hub: RoomHub) {
        soldOut.withLock { $0.changed(product.itemNumber) }
        note({ $0.changed(product) }, hub: hub)
    }

    func removed(_ itemNumber: Int, hub: RoomHub) {
        soldOut.withLock { $0.changed(itemNumber) }
        note({ $0.removed(itemNumber) }, hub: hub)
    }

    /// A purchase of `order` left `product`: the anchors hear the sale, everyone the stock.
    func sold(_ order: Order, leaving product: Product, hub: RoomHub) {
        note(
            {
                $0.sold(order.itemNumber, quantity: order.quantity, stockLeft: product.stock)
                $0.changed(product)
            }, hub: hub)
    }

    /// Notes a change for the room; the first of an interval schedules the telling.
    private func note(_ change: (inout ShopNews) -> Void, hub: RoomHub) {
        let first = news.withLock { state in
            change(&state.news)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        guard first else { return }
        Task { [weak hub] in
            try? await Task.sleep(for: Self.newsInterval)
            let events = self.news.withLock { state in
                state.scheduled = false
                return state.news.take()
            }
            await hub?.tell(events, in: self.roomId)
        }
    }
}

/// The rooms' shops, by room key, and what every purchase needs: the store, how long an order
/// holds its stock, where webhooks go.
final class RoomShops: Sendable {
    let store: (any ShopStore)?
    let reservation: Duration
    let webhooks: WebhookService?
    private let shops = Mutex<[String: RoomShop]>([:])

    init(store: (any ShopStore)?, reservation: Duration, webhooks: WebhookService?) {
        self.store = store
        self.reservation = reservation
        self.webhooks = webhooks
    }

    /// The room's shop, made on first use.
    func shop(_ roomId: String) -> RoomShop {
        shops.withLock { shops in
            if let shop = shops[roomId] { return shop }
            let shop = RoomShop(roomId: roomId)
            shops[roomId] = shop
            return shop
        }
    }

    /// The room is gone. What its shop still has to tell is told to nobody.
    func remove(_ roomId: String) {
        _ = shops.withLock { $0.removeValue(forKey: roomId) }
    }

    /// Queues a purchase in its room's shop (``RoomShop/submit(_:)``): once a worker is free it
    /// reserves stock (the store commits before the answer), answers the buyer through `answer`,
    /// and notes the sale for the anchors and the new stock for the room.
    func buy(roomId: String, userId: String, itemNumber: Int, quantity: Int, requestId: String?, answer: ConnectionOutbox, hub: RoomHub) {
        shop(roomId).submit {
            await self.reserve(roomId: roomId, userId: userId, itemNumber: itemNumber, quantity: quantity, requestId: requestId, answer: answer, hub: hub)
        }
    }

    private func reserve(
        roomId: String, userId: String, itemNumber: Int, quantity: Int, requestId: String?, answer: ConnectionOutbox, hub: RoomHub
    ) async {
        func send(_ event: ServerEvent) { answer.push(event.json.jsonText, priority: .normal) }
        guard let store else {
            let error = LiveRoomError(ErrorCode.catalogueUnavailable, "this server keeps no catalogue")
            return send(.onBuyResult(itemNumber: itemNumber, quantity: quantity, code: error.code, message: error.message, orderId: nil, stockLeft: nil, requestId: requestId))
        }
        let shop = shop(roomId)
        // Asked when the purchase's turn comes: a burst queues before the item sells out.
        if let refusal = shop.refusal(itemNumber, quantity: quantity, userId: userId, requestId: requestId) {
            return send(.onBuyResult(itemNumber: itemNumber, quantity: quantity, code: refusal.code, message: refusal.message, orderId: nil, stockLeft: nil, requestId: requestId))
        }
        let generation = shop.generation
        do {
            let (order, product, repeated) = try await store.buy(
                itemNumber: itemNumber, quantity: quantity, userId: userId, requestId: requestId, room: roomId,
                now: EventTime.now().unixMillis, reservation: reservation)
            send(
                .onBuyResult(
                    itemNumber: order.itemNumber, quantity: order.quantity, code: 0, message: repeated ? "ok (the same request as before)" : "ok",
                    orderId: order.orderId, stockLeft: product.stock, requestId: requestId))
            guard !repeated else { return }
            var events = [WebhookEvents.order(order, at: order.createdAt)]
            if product.stock == 0 { events.append(WebhookEvents.productSoldOut(roomKey: roomId, itemNumber: order.itemNumber, at: order.createdAt)) }
            webhooks?.enqueue(events)
            shop.sold(order, leaving: product, hub: hub)
            if product.stock == 0 { await shop.learnSoldOut(itemNumber, seenIn: generation, store: store) }
        } catch {
            let error = RoomHub.catalogueError(error)
            send(.onBuyResult(itemNumber: itemNumber, quantity: quantity, code: error.code, message: error.message, orderId: nil, stockLeft: nil, requestId: requestId))
            if error.code == ErrorCode.soldOut { await shop.learnSoldOut(itemNumber, seenIn: generation, store: store) }
        }
    }
}
