import NIOCore
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomWebhooks
import LiveRoomWire
import Logging
import Synchronization

/// One room's shop beside the room hub. Its purchases come here straight from the buyers'
/// connections and run a few at a time in the order they came (the store orders their writes);
/// what they change is gathered (``ShopNews``) and told to the room once per interval. Once an
/// item sells out, later buyers hear so without a store transaction (``SoldOutItems``). A flash
/// sale in one room so keeps the hub, and every other room, free.
final class RoomShop: Sendable {
    let roomId: String
    private let news = Mutex((news: ShopNews(), scheduled: false))
    private let soldOut = Mutex(SoldOutItems())
    /// The stock not yet asked for, which answers a burst beyond it at once (``StockView``).
    private let stock = Mutex(StockView())
    /// Purchases waiting for a worker, and how many workers run. A burst of purchases waits
    /// here, in the room's own queue, not as thousands of tasks in the process's shared pool,
    /// where every other room's work would queue behind them.
    private let queue = Mutex((waiting: CircularBuffer<PendingPurchase>(), workers: 0))
    /// How fast the queue drains: a buy that would wait longer than ``admitWait`` is busy at once.
    private let pace = Mutex(StorePace())
    /// Batches of purchases run side by side at most this many at a time (SQLite writes one at
    /// a time; PostgreSQL's pool takes a few).
    static let maxWorkers = 4
    /// A worker takes at most this many waiting purchases at once; the store commits those it
    /// is asked for together (one transaction in SQLite).
    static let maxBatch = 64
    /// How long changes gather before the room hears them: at most 5 onProductChanged a second
    /// per room, however fast stock moves.
    static let newsInterval = Duration.milliseconds(200)
    /// The longest a purchase is let queue for, by the pace the queue drains at; past it, and
    /// with more than a batch waiting, the buyer hears -7316 (busy, retry) at once. Buys that
    /// come faster than the store commits so wait at most about this long, not until
    /// ``RoomShops/maxWait`` turns them away after they waited.
    static let admitWait = Duration.milliseconds(250)

    init(roomId: String) {
        self.roomId = roomId
    }

    /// Queues `purchase`; once a worker is free, it takes the purchases waiting (up to
    /// ``maxBatch``, in the order they came) and hands them to `carryOut`. Workers run on `lane`
    /// (the room's); one batch may begin before an earlier one has finished. A purchase past
    /// `bound` (the room's or the server's) is not queued: the refusal says which.
    func submit(
        _ purchase: PendingPurchase, on lane: RoomLane, bound: WaitingPurchases, carryOut: @escaping @Sendable ([PendingPurchase]) async -> Void
    ) -> LiveRoomError? {
        let outcome = queue.withLock { queue -> Result<Bool, LiveRoomError> in
            if let refusal = Self.refusal(waiting: queue.waiting.count, workers: queue.workers, pace: pace.withLock { $0 }) { return .failure(refusal) }
            if let refusal = bound.take(waitingInRoom: queue.waiting.count) { return .failure(refusal) }
            queue.waiting.append(purchase)
            guard queue.workers < Self.maxWorkers else { return .success(false) }
            queue.workers += 1
            return .success(true)
        }
        switch outcome {
        case .failure(let refusal): return refusal
        case .success(false): return nil
        case .success(true): break
        }
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
                bound.release(count)
                return Array(queue.waiting.prefix(count))
            }) {
                let started = ContinuousClock.now
                await carryOut(batch)
                self.pace.withLock { $0.drained(batch.count, in: .now - started) }
                // A batch answered from memory does not suspend: let the room's connections
                // read and write in between.
                await Task.yield()
            }
        }
        return nil
    }

    /// Busy, for a purchase that would queue behind `waiting` others for longer than
    /// ``admitWait`` at the queue's `pace`; nil while no more than a batch waits.
    static func refusal(waiting: Int, workers: Int, pace: StorePace) -> LiveRoomError? {
        guard waiting >= maxBatch, let wait = pace.expectedWait(behind: waiting, workers: workers), wait > admitWait else { return nil }
        return LiveRoomError(
            ErrorCode.shopBusy,
            "busy: \(waiting) purchases wait for the store in this room, about \(wait.ticks(rate: 1000)) ms; retry with the same requestId in a moment")
    }

    /// A purchase wants to queue for the store: nil admits it, else the sold-out answer to
    /// give at once. Every purchase admitted is ``answered(_:stockLeft:)`` later.
    func admit(_ request: PurchaseRequest) -> LiveRoomError? {
        stock.withLock { $0.admit(request.itemNumber, quantity: request.quantity, userId: request.userId, requestId: request.requestId) }
    }

    /// An admitted purchase was answered, with the stock the store reported (nil: none).
    func answered(_ request: PurchaseRequest, stockLeft: Int?) {
        stock.withLock { $0.answered(request.itemNumber, quantity: request.quantity, stockLeft: stockLeft) }
    }

    /// The store reported `product` as it is (a listing, a pop).
    func know(_ product: Product) {
        stock.withLock { $0.known(product.itemNumber, stock: product.stock) }
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
    func changed(_ product: Product, seats: Seats) {
        soldOut.withLock { $0.changed(product.itemNumber) }
        know(product)
        note({ $0.changed(product) }, seats: seats)
    }

    func removed(_ itemNumber: Int, seats: Seats) {
        soldOut.withLock { $0.changed(itemNumber) }
        stock.withLock { $0.removed(itemNumber) }
        note({ $0.removed(itemNumber) }, seats: seats)
    }

    /// A purchase of `order` left `product`: the anchors hear the sale, everyone the stock.
    func sold(_ order: Order, leaving product: Product, seats: Seats) {
        note(
            {
                $0.sold(order.itemNumber, quantity: order.quantity, stockLeft: product.stock)
                $0.changed(product)
            }, seats: seats)
    }

    /// Notes a change for the room; the first of an interval schedules the telling: everyone
    /// hears the changed products, the anchors the sales, straight from the room's actor (a
    /// sale's news passes no hub).
    private func note(_ change: (inout ShopNews) -> Void, seats: Seats) {
        let first = news.withLock { state in
            change(&state.news)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        guard first else { return }
        Task {
            try? await Task.sleep(for: Self.newsInterval)
            let news = self.news.withLock { state in
                state.scheduled = false
                return state.news.take()
            }
            guard let room = seats.room(self.roomId) else { return }
            for event in news.room { await room.broadcast(event) }
            if let event = news.anchors { await room.tellAnchors(event) }
        }
    }
}

/// The rooms' shops, by room key, and what every purchase and catalogue command needs: the
/// store, how long an order holds its stock, where webhooks go, the rooms and connections to
/// tell, the replays to start and stop. Catalogue commands are in Catalogue.swift.
final class RoomShops: Sendable {
    let store: (any ShopStore)?
    let reservation: Duration
    let webhooks: WebhookService?
    let seats: Seats
    let outboxes: Outboxes
    let replays: ReplayRecorder
    let logger: Logger
    /// How many purchases may wait, per room and in all.
    let waiting: WaitingPurchases
    /// From a purchase reaching its room's shop to its answer being handed to the buyer's
    /// connection (`liveroom_purchase_answer_seconds`).
    let answerDelays = Mutex(DelayHistogram())
    private let shops = Mutex<[String: RoomShop]>([:])
    /// Each room's last catalogue command, which the next one waits for (kept past the room's
    /// end, until it has run: a command of a room that ended is still ordered before the next
    /// room of that id's).
    private let commands = Mutex((last: [String: (id: Int, task: Task<Void, Never>)](), next: 0))

    init(
        store: (any ShopStore)?, reservation: Duration, webhooks: WebhookService?, seats: Seats, outboxes: Outboxes, replays: ReplayRecorder,
        waiting: WaitingPurchases, logger: Logger
    ) {
        self.waiting = waiting
        self.store = store
        self.reservation = reservation
        self.webhooks = webhooks
        self.seats = seats
        self.outboxes = outboxes
        self.replays = replays
        self.logger = logger
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
    func buy(roomId: String, userId: String, itemNumber: Int, quantity: Int, requestId: String?, answer: ConnectionOutbox) {
        let shop = shop(roomId)
        let purchase = PendingPurchase(request: PurchaseRequest(itemNumber: itemNumber, quantity: quantity, userId: userId, requestId: requestId), answer: answer)
        // Beyond the stock not yet asked for: sold out, at once, without queueing.
        if let soldOut = shop.admit(purchase.request) { return self.answer(purchase, code: soldOut.code, message: soldOut.message) }
        let refusal = shop.submit(purchase, on: seats.lane(of: roomId), bound: waiting) { batch in
            await self.reserve(batch, in: shop)
        }
        if let refusal {
            shop.answered(purchase.request, stockLeft: nil)
            self.answer(purchase, code: refusal.code, message: refusal.message)
        }
    }

    /// The longest a purchase waits in its room's queue for the store: one that waited longer
    /// when its turn comes is answered -7316 (busy) without a store transaction, so every buy is
    /// answered within about this (plus one batch) however far buys outrun the store.
    static let maxWait = Duration.milliseconds(750)

    /// Answers a purchase with onBuyResult.
    private func answer(_ purchase: PendingPurchase, code: Int, message: String, order: Order? = nil, stockLeft: Int? = nil) {
        answerDelays.withLock { $0.record(.now - purchase.queuedAt) }
        let request = purchase.request
        let event = ServerEvent.onBuyResult(
            itemNumber: request.itemNumber, quantity: order?.quantity ?? request.quantity, code: code, message: message, orderId: order?.orderId,
            stockLeft: stockLeft, requestId: request.requestId)
        purchase.answer.push(event.json.jsonText, priority: .normal)
    }

    /// Answers what memory can (an item known sold out), and asks the store for the rest in one
    /// batch.
    private func reserve(_ batch: [PendingPurchase], in shop: RoomShop) async {
        guard let store else {
            let error = LiveRoomError(ErrorCode.catalogueUnavailable, "this server keeps no catalogue")
            return batch.forEach {
                shop.answered($0.request, stockLeft: nil)
                answer($0, code: error.code, message: error.message)
            }
        }
        // Asked when the purchase's turn comes: a burst queues before the item sells out.
        var asking: [PendingPurchase] = []
        let now = ContinuousClock.now
        for purchase in batch {
            let request = purchase.request
            if now - purchase.queuedAt > Self.maxWait {
                // More buys come than the store commits: the buyer hears "busy" within the
                // bound rather than its answer ever later.
                shop.answered(request, stockLeft: nil)
                answer(purchase, code: ErrorCode.shopBusy, message: "busy: the purchase waited \(Self.maxWait) for the store; retry with the same requestId")
            } else if let refusal = shop.refusal(request.itemNumber, quantity: request.quantity, userId: request.userId, requestId: request.requestId) {
                shop.answered(request, stockLeft: refusal.code == ErrorCode.soldOut ? 0 : nil)
                answer(purchase, code: refusal.code, message: refusal.message)
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
                shop.answered(purchase.request, stockLeft: product.stock)
                answer(purchase, code: 0, message: repeated ? "ok (the same request as before)" : "ok", order: order, stockLeft: product.stock)
                guard !repeated else { continue }
                events.append(WebhookEvents.order(order, at: order.createdAt))
                if product.stock == 0 {
                    events.append(WebhookEvents.productSoldOut(roomKey: shop.roomId, itemNumber: order.itemNumber, at: order.createdAt))
                    soldOut.insert(order.itemNumber)
                }
                shop.sold(order, leaving: product, seats: seats)
            case .failure(let error):
                let error = Self.catalogueError(error)
                shop.answered(purchase.request, stockLeft: nil)
                answer(purchase, code: error.code, message: error.message)
                if error.code == ErrorCode.soldOut { soldOut.insert(purchase.request.itemNumber) }
            }
        }
        webhooks?.enqueue(events)
        for itemNumber in soldOut.sorted() { await shop.learnSoldOut(itemNumber, seenIn: generation, store: store) }
    }
}

/// How many purchases may wait for the store, in one room and in all rooms together, and how
/// many wait now. Past either bound a buyer hears -7316 at once, so a burst larger than the
/// store can serve costs the server a bounded amount of memory and answers every buyer promptly.
final class WaitingPurchases: Sendable {
    let maxPerRoom: Int
    let max: Int
    private let waiting = Atomic<Int>(0)

    init(maxPerRoom: Int, max: Int) {
        self.maxPerRoom = maxPerRoom
        self.max = max
    }

    /// Purchases waiting in every room now.
    var count: Int { waiting.load(ordering: .relaxed) }

    /// Counts one more waiting purchase in a room where `waitingInRoom` wait, or says why not.
    func take(waitingInRoom: Int) -> LiveRoomError? {
        guard waitingInRoom < maxPerRoom else {
            return LiveRoomError(ErrorCode.shopBusy, "\(maxPerRoom) purchases are waiting in this room; retry in a moment")
        }
        var current = waiting.load(ordering: .relaxed)
        while current < max {
            let (exchanged, original) = waiting.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return nil }
            current = original
        }
        return LiveRoomError(ErrorCode.shopBusy, "\(max) purchases are waiting on this server; retry in a moment")
    }

    /// `count` waiting purchases were taken by a worker.
    func release(_ count: Int) {
        waiting.subtract(count, ordering: .relaxed)
    }
}

/// A purchase waiting in its room's queue, and where its answer goes.
struct PendingPurchase: Sendable {
    var request: PurchaseRequest
    var answer: ConnectionOutbox
    var queuedAt = ContinuousClock.now
}
