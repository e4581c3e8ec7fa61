import Dispatch
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomStore
import Synchronization
import Testing

@testable import LiveRoomServer

@Suite struct SeatsTests {
    @Test func aPurchaseNeedsASeatAndIsBudgetedPerSeat() throws {
        let seats = Seats()
        let now = ContinuousClock.now
        #expect(throws: LiveRoomError(ErrorCode.notInRoom, "enter a room first")) { try seats.takePurchase(by: 1, now: now) }
        seats.apply([(1, ("shop", "buyer")), (2, ("other", "fan"))])
        #expect(try seats.takePurchase(by: 1, now: now) == ("shop", "buyer"))
        // A burst of 20 (one taken above), then refusals until the budget refills.
        for _ in 1..<Int(RoomsStateMachine.roomChangeBurst) { _ = try seats.takePurchase(by: 1, now: now) }
        let limited = #expect(throws: LiveRoomError.self) { try seats.takePurchase(by: 1, now: now) }
        #expect(limited?.code == ErrorCode.roomChangeRateLimited)
        #expect(try seats.takePurchase(by: 2, now: now) == ("other", "fan"), "another seat has its own budget")
        #expect(try seats.takePurchase(by: 1, now: now + .milliseconds(100)) == ("shop", "buyer"), "10 a second come back")
        seats.apply([(1, nil)])
        let gone = #expect(throws: LiveRoomError.self) { try seats.takePurchase(by: 1, now: now + .seconds(5)) }
        #expect(gone?.code == ErrorCode.notInRoom)
        // Entering again starts a full budget.
        seats.apply([(1, ("shop", "buyer"))])
        for _ in 0..<Int(RoomsStateMachine.roomChangeBurst) { _ = try seats.takePurchase(by: 1, now: now + .seconds(5)) }
    }
}

@Suite struct RoomShopTests {
    /// A burst of purchases waits in the room's queue: at most `maxWorkers` batches run at once,
    /// each of at most `maxBatch` purchases that came one after the other, and every purchase
    /// runs once.
    @Test func aBurstRunsInOrderedBatchesWithAtMostAFewAtOnce() async throws {
        let shop = RoomShop(roomId: "shop")
        let lane = RoomLane()
        let outbox = ConnectionOutbox(maxBytes: 1 << 20)
        let state = Mutex((running: 0, most: 0, batches: [[Int]](), done: 0))
        let count = 300
        @Sendable func carryOut(_ batch: [PendingPurchase]) async {
            state.withLock {
                $0.running += 1
                $0.most = max($0.most, $0.running)
                $0.batches.append(batch.compactMap { $0.request.requestId.flatMap(Int.init) })
            }
            try? await Task.sleep(for: .milliseconds(5))
            state.withLock {
                $0.running -= 1
                $0.done += batch.count
            }
        }
        for n in 0..<count {
            let refusal = shop.submit(
                PendingPurchase(request: PurchaseRequest(itemNumber: 1, quantity: 1, userId: "u", requestId: String(n)), answer: outbox), on: lane,
                bound: WaitingPurchases(maxPerRoom: count, max: count), carryOut: carryOut)
            #expect(refusal == nil)
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLock({ $0.done }) < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let final = state.withLock { $0 }
        #expect(final.done == count)
        #expect(final.most <= RoomShop.maxWorkers && final.most > 1, "\(final.most) at once")
        #expect(final.batches.flatMap { $0 }.sorted() == Array(0..<count), "each purchase once")
        #expect(final.batches.allSatisfy { $0.count <= RoomShop.maxBatch && $0 == Array(($0.first ?? 0)..<(($0.first ?? 0) + $0.count)) }, "\(final.batches)")
        #expect(final.batches.count < count / 2, "the waiting are taken together: \(final.batches.map(\.count))")
        // Once the burst is done, new work starts again.
        _ = shop.submit(
            PendingPurchase(request: PurchaseRequest(itemNumber: 1, quantity: 1, userId: "u", requestId: "again"), answer: outbox), on: lane,
            bound: WaitingPurchases(maxPerRoom: 1, max: 1), carryOut: carryOut)
        while state.withLock({ $0.done }) == count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(state.withLock { $0.done } == count + 1)
    }

    /// Purchases beyond the room's bound or the server's are refused at once with -7316 and
    /// never queued; the bound counts only those waiting, so it frees as workers take them.
    @Test func purchasesPastTheRoomsOrTheServersBoundAreRefusedAtOnce() async throws {
        let bound = WaitingPurchases(maxPerRoom: 3, max: 5)
        let (first, second) = (RoomShop(roomId: "first"), RoomShop(roomId: "second"))
        let lane = RoomLane()
        let outbox = ConnectionOutbox(maxBytes: 1 << 20)
        // A job holds the lane (at most 10 s), so no worker takes a purchase until it is released.
        let hold = DispatchSemaphore(value: 0)
        Task(executorPreference: lane) { _ = hold.wait(timeout: .now() + 10) }
        let taken = Mutex([String]())
        @Sendable func carryOut(_ batch: [PendingPurchase]) async {
            taken.withLock { $0 += batch.compactMap(\.request.requestId) }
        }
        func buy(_ shop: RoomShop, _ id: String) -> LiveRoomError? {
            shop.submit(
                PendingPurchase(request: PurchaseRequest(itemNumber: 1, quantity: 1, userId: "u", requestId: id), answer: outbox), on: lane, bound: bound,
                carryOut: carryOut)
        }
        #expect(buy(first, "f1") == nil && buy(first, "f2") == nil && buy(first, "f3") == nil)
        let roomFull = buy(first, "f4")
        #expect(roomFull?.code == ErrorCode.shopBusy && roomFull?.message.contains("in this room") == true, "\(String(describing: roomFull))")
        // The second room has a bound of its own, but the server's (5) is reached first.
        #expect(buy(second, "s1") == nil && buy(second, "s2") == nil)
        let serverFull = buy(second, "s3")
        #expect(serverFull?.code == ErrorCode.shopBusy && serverFull?.message.contains("on this server") == true, "\(String(describing: serverFull))")
        #expect(bound.count == 5)
        // Released, the workers take everything queued, each once, and the bound frees.
        hold.signal()
        let deadline = ContinuousClock.now + .seconds(10)
        while taken.withLock({ $0.count }) < 5, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(taken.withLock { $0.sorted() } == ["f1", "f2", "f3", "s1", "s2"])
        #expect(bound.count == 0)
        #expect(buy(first, "again") == nil)
    }
}

@Suite struct PurchaseWaitTests {
    /// A purchase whose turn comes after it waited longer than ``RoomShops/maxWait`` for the
    /// store (buys come faster than the store commits) is answered busy at once, without a store
    /// transaction, so no buyer waits much longer than that; one that did not wait is ordered.
    @Test func aPurchaseThatWaitedPastTheBoundIsAnsweredBusyWithoutTheStore() async throws {
        let store = try RoomStore()
        let h = try await HubHarness(catalogue: store)
        let host = try await h.entered("host", role: .anchor, room: "shop")
        host.send(.addProduct(["itemNumber": 1, "title": "Tea", "price": "1.00", "itemUrl": "https://shop.example/1", "stock": 100]))
        #expect(try await host.next("onProductResult")["code"] == 0)
        let buyer = try await h.entered("buyer", room: "shop")
        // A job holds the room's lane (at most 10 s): no purchase worker can start meanwhile.
        let hold = DispatchSemaphore(value: 0)
        let holding = Mutex(false)
        let lane = await h.hub.services.seats.lane(of: "shop")
        Task(executorPreference: lane) {
            holding.withLock { $0 = true }
            _ = hold.wait(timeout: .now() + 10)
        }
        let waiting = await h.hub.services.shops.waiting
        let deadline = ContinuousClock.now + .seconds(5)
        while !holding.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        // The purchase queues behind the held lane, and waits there a second, longer than the bound.
        buyer.send(.buyProduct(itemNumber: 1, quantity: 1, requestId: "late"))
        while waiting.count == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(waiting.count == 1, "the purchase is waiting for the store")
        try await Task.sleep(for: .seconds(1))
        hold.signal()
        let busy = try await buyer.next("onBuyResult")
        #expect(busy["code"]?.intValue == ErrorCode.shopBusy && busy["requestId"] == "late", "\(busy.jsonText)")
        #expect(try await store.product(1, room: "shop")?.stock == 100, "nothing was reserved")
        // Retried with the same request id once the queue moves: an order.
        buyer.send(.buyProduct(itemNumber: 1, quantity: 1, requestId: "late"))
        let ordered = try await buyer.next("onBuyResult")
        #expect(ordered["code"] == 0 && ordered["stockLeft"] == 99, "\(ordered.jsonText)")
    }
}

/// A room's queue of purchases by the pace it drains at: a buy that would wait long is busy at
/// once, while a queue of no more than a batch is always let in.
@Suite struct StorePaceTests {
    @Test func theWaitIsThePurchasesAheadAtTheSmoothedPaceSharedByTheWorkers() {
        var pace = StorePace()
        #expect(pace.expectedWait(behind: 1000, workers: 1) == nil, "nothing timed yet")
        pace.drained(64, in: .milliseconds(64))
        #expect(pace.expectedWait(behind: 500, workers: 1) == .milliseconds(500))
        #expect(pace.expectedWait(behind: 500, workers: 4) == .milliseconds(125))
        // A batch answered from memory pulls the pace down, smoothed over the last few.
        pace.drained(64, in: .zero)
        #expect(pace.perPurchase == .microseconds(750))
        pace.drained(0, in: .seconds(10))
        #expect(pace.perPurchase == .microseconds(750), "an empty batch says nothing")
    }

    @Test func aBuyThatWouldWaitPastTheBoundIsBusyAtOnce() {
        var pace = StorePace()
        #expect(RoomShop.refusal(waiting: 3000, workers: 1, pace: pace) == nil, "no pace known: let in (the queue's own bounds hold)")
        pace.drained(64, in: .milliseconds(128))  // 2 ms a purchase
        #expect(RoomShop.refusal(waiting: RoomShop.maxBatch - 1, workers: 1, pace: pace) == nil, "less than a batch waits")
        #expect(RoomShop.refusal(waiting: 100, workers: 1, pace: pace) == nil, "200 ms")
        let busy = RoomShop.refusal(waiting: 200, workers: 1, pace: pace)
        #expect(busy?.code == ErrorCode.shopBusy && busy?.message.contains("about 400 ms") == true, "\(busy?.message ?? "")")
        #expect(RoomShop.refusal(waiting: 200, workers: 2, pace: pace) == nil, "two workers: 200 ms")
    }
}
