import NIOCore
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWebhooks
import Synchronization

/// Who sits in which room, as the room machine last said (``RoomsStateMachine/takeSeatChanges()``),
/// for connections to read without asking the room hub; each seat's budget of purchases; and
/// each room's lane of work (``RoomLane``), which its connections' executors follow.
final class Seats: Sendable {
    private struct Seat {
        var roomId: String
        var userId: String
        /// The same budget as the room changes the machine admits (10 a second, bursts of 20),
        /// kept here because purchases do not pass the machine.
        var purchases = TokenBucket(capacity: RoomsStateMachine.roomChangeBurst, ratePerSecond: RoomsStateMachine.roomChangesPerSecond)
    }

    private struct State {
        var seats: [SessionID: Seat] = [:]
        var executors: [SessionID: [ConnectionExecutor]] = [:]
        /// Each room's lane while someone sits in it, with how many do.
        var lanes: [String: (lane: RoomLane, seated: Int)] = [:]

        mutating func seat(_ session: SessionID, _ seat: Seat?) {
            if let old = seats[session]?.roomId {
                lanes[old]?.seated -= 1
                if lanes[old]?.seated == 0 { lanes[old] = nil }
            }
            seats[session] = seat
            guard let roomId = seat?.roomId else {
                for executor in executors[session] ?? [] { executor.move(to: nil) }
                return
            }
            let lane = lanes[roomId]?.lane ?? RoomLane()
            lanes[roomId] = (lane, (lanes[roomId]?.seated ?? 0) + 1)
            for executor in executors[session] ?? [] { executor.move(to: lane) }
        }
    }

    private let state = Mutex(State())

    func apply(_ changes: [(session: SessionID, seat: (roomId: String, userId: String)?)]) {
        guard !changes.isEmpty else { return }
        state.withLock { state in
            for (session, seat) in changes {
                state.seat(session, seat.map { Seat(roomId: $0.roomId, userId: $0.userId) })
            }
        }
    }

    /// `session`'s tasks run on `executors`, which follow its seat from room to room.
    func register(_ session: SessionID, _ executors: ConnectionExecutor...) {
        state.withLock { state in
            state.executors[session] = executors
            let lane = state.seats[session].flatMap { state.lanes[$0.roomId]?.lane }
            for executor in executors { executor.move(to: lane) }
        }
    }

    func unregister(_ session: SessionID) {
        _ = state.withLock { $0.executors.removeValue(forKey: session) }
    }

    /// The room's lane, or a lane of its own when nobody sits in it.
    func lane(of roomId: String) -> RoomLane {
        state.withLock { $0.lanes[roomId]?.lane } ?? RoomLane()
    }

    /// How many rooms have a lane (someone sits in them).
    var laneCount: Int { state.withLock { $0.lanes.count } }

    /// The room and user of `session`, with one purchase taken from its budget, or why not.
    func takePurchase(by session: SessionID, now: ContinuousClock.Instant) throws(LiveRoomError) -> (roomId: String, userId: String) {
        try state.withLock { state throws(LiveRoomError) in
            guard var seat = state.seats[session] else { throw LiveRoomError(ErrorCode.notInRoom, "enter a room first") }
            guard seat.purchases.canTake(1, now: now) else {
                throw LiveRoomError(
                    ErrorCode.roomChangeRateLimited,
                    "refused: over \(Int(RoomsStateMachine.roomChangesPerSecond)) buy requests per second (bursts of \(Int(RoomsStateMachine.roomChangeBurst)))")
            }
            seat.purchases.take(1, now: now)
            state.seats[session] = seat
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
    private let queue = Mutex((waiting: CircularBuffer<PendingPurchase>(), workers: 0))
    /// Batches of purchases run side by side at most this many at a time (SQLite writes one at
    /// a time; PostgreSQL's pool takes a few).
    static let maxWorkers = 4
    /// A worker takes at most this many waiting purchases at once; the store commits those it
    /// is asked for together (one transaction in SQLite).
    static let maxBatch = 64
    /// How long changes gather before the room hears them: at most 5 onProductChanged a second
    /// per room, however fast stock moves.
    static let newsInterval = Duration.milliseconds(200)

    init(roomId: String) {
        self.roomId = roomId
    }

    /// Queues `purchase`; once a worker is free, it takes the purchases waiting (up to
    /// ``maxBatch``, in the order they came) and hands them to `carryOut`. Workers run on `lane`
    /// (the room's); one batch may begin before an earlier one has finished.
    func submit(_ purchase: PendingPurchase, on lane: RoomLane, carryOut: @escaping @Sendable ([PendingPurchase]) async -> Void) {
        let startsWorker = queue.withLock { queue in
            queue.waiting.append(purchase)
            guard queue.workers < Self.maxWorkers else { return false }
            queue.workers += 1
            return true
        }
        guard startsWorker else { return }
        Task(executorPreference: lane) { [lane] in
            // The task's executor must outlive its jobs: the worker holds its lane.
            defer { withExtendedLifetime(lane) {} }
            while let batch = self.queue.withLock({ queue -> [PendingPurchase]? in
                guard !queue.waiting.isEmpty else {
                    queue.workers -= 1
                    return nil
                }
                let count = min(queue.waiting.count, Self.maxBatch)
                defer { queue.waiting.removeFirst(count) }
                return Array(queue.waiting.prefix(count))
            }) {
                await carryOut(batch)
                // A batch answered from memory does not suspend: let the room's connections
                // read and write in between.
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
    /// Each room's last catalogue command, which the next one waits for (kept past the room's
    /// end, until it has run: a command of a room that ended is still ordered before the next
    /// room of that id's).
    private let commands = Mutex((last: [String: (id: Int, task: Task<Void, Never>)](), next: 0))

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

    /// Runs `command` after the room's catalogue commands before it, in the order they came
    /// (an add before the pop that names it, a pop before its unpop).
    func inOrder(_ roomId: String, _ command: @escaping @Sendable () async -> Void) {
        commands.withLock { commands in
            let previous = commands.last[roomId]?.task
            commands.next += 1
            let id = commands.next
            let task = Task {
                await previous?.value
                await command()
                self.commands.withLock { if $0.last[roomId]?.id == id { $0.last[roomId] = nil } }
            }
            commands.last[roomId] = (id, task)
        }
    }

    /// The room is gone. What its shop still has to tell is told to nobody.
    func remove(_ roomId: String) {
        _ = shops.withLock { $0.removeValue(forKey: roomId) }
    }

    /// Queues a purchase in its room's shop (``RoomShop/submit(_:on:carryOut:)``): once a worker is
    /// free it reserves stock (the store commits before the answer), answers the buyer through
    /// `answer`, and notes the sale for the anchors and the new stock for the room.
    func buy(roomId: String, userId: String, itemNumber: Int, quantity: Int, requestId: String?, answer: ConnectionOutbox, hub: RoomHub) {
        let shop = shop(roomId)
        let purchase = PendingPurchase(request: PurchaseRequest(itemNumber: itemNumber, quantity: quantity, userId: userId, requestId: requestId), answer: answer)
        shop.submit(purchase, on: hub.seats.lane(of: roomId)) { [weak hub] batch in
            guard let hub else { return }
            await self.reserve(batch, in: shop, hub: hub)
        }
    }

    /// Answers what memory can (an item known sold out), and asks the store for the rest in one
    /// batch.
    private func reserve(_ batch: [PendingPurchase], in shop: RoomShop, hub: RoomHub) async {
        func send(_ purchase: PendingPurchase, code: Int, message: String, order: Order? = nil, stockLeft: Int? = nil) {
            let request = purchase.request
            let event = ServerEvent.onBuyResult(
                itemNumber: request.itemNumber, quantity: order?.quantity ?? request.quantity, code: code, message: message, orderId: order?.orderId,
                stockLeft: stockLeft, requestId: request.requestId)
            purchase.answer.push(event.json.jsonText, priority: .normal)
        }
        guard let store else {
            let error = LiveRoomError(ErrorCode.catalogueUnavailable, "this server keeps no catalogue")
            return batch.forEach { send($0, code: error.code, message: error.message) }
        }
        // Asked when the purchase's turn comes: a burst queues before the item sells out.
        var asking: [PendingPurchase] = []
        for purchase in batch {
            let request = purchase.request
            if let refusal = shop.refusal(request.itemNumber, quantity: request.quantity, userId: request.userId, requestId: request.requestId) {
                send(purchase, code: refusal.code, message: refusal.message)
            } else {
                asking.append(purchase)
            }
        }
        guard !asking.isEmpty else { return }
        let generation = shop.generation
        let outcomes = await store.buy(asking.map(\.request), room: shop.roomId, now: EventTime.now().unixMillis, reservation: reservation)
        var events: [WebhookEvent] = []
        var soldOut = Set<Int>()
        for (purchase, outcome) in zip(asking, outcomes) {
            switch outcome {
            case .success(let (order, product, repeated)):
                send(purchase, code: 0, message: repeated ? "ok (the same request as before)" : "ok", order: order, stockLeft: product.stock)
                guard !repeated else { continue }
                events.append(WebhookEvents.order(order, at: order.createdAt))
                if product.stock == 0 {
                    events.append(WebhookEvents.productSoldOut(roomKey: shop.roomId, itemNumber: order.itemNumber, at: order.createdAt))
                    soldOut.insert(order.itemNumber)
                }
                shop.sold(order, leaving: product, hub: hub)
            case .failure(let error):
                let error = RoomHub.catalogueError(error)
                send(purchase, code: error.code, message: error.message)
                if error.code == ErrorCode.soldOut { soldOut.insert(purchase.request.itemNumber) }
            }
        }
        webhooks?.enqueue(events)
        for itemNumber in soldOut.sorted() { await shop.learnSoldOut(itemNumber, seenIn: generation, store: store) }
    }
}

/// A purchase waiting in its room's queue, and where its answer goes.
struct PendingPurchase: Sendable {
    var request: PurchaseRequest
    var answer: ConnectionOutbox
}
