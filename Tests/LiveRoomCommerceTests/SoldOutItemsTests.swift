import LiveRoomProtocol
import Testing

@testable import LiveRoomCommerce

@Suite struct SoldOutItemsTests {
    let t0 = ContinuousClock.now

    func product(_ itemNumber: Int, stock: Int = 0, limit: Int? = nil, onShelf: Bool = true) -> Product {
        Product(
            itemNumber: itemNumber, title: "T\(itemNumber)", price: Money(minorUnits: 100, currency: "CNY"), itemUrl: "https://s/\(itemNumber)", stock: stock,
            limitPerUser: limit, onShelf: onShelf)
    }

    func order(_ user: String, _ quantity: Int = 1, _ state: Order.State = .reserved, requestId: String?, number: Int = 0) -> Order {
        Order(
            orderId: "\(user)-\(quantity)-\(state)-\(number)", roomId: "shop", itemNumber: 1, userId: user, quantity: quantity,
            amount: Money(minorUnits: 100, currency: "CNY"), state: state, requestId: requestId, createdAt: 0, expiresAt: 1, updatedAt: 0)
    }

    func refusal(_ items: inout SoldOutItems, _ itemNumber: Int = 1, quantity: Int = 1, user: String = "new", requestId: String? = "r9", at now: ContinuousClock.Instant? = nil) -> LiveRoomError? {
        items.refusal(itemNumber, quantity: quantity, userId: user, requestId: requestId, now: now ?? t0)
    }

    @Test func aSoldOutItemIsRefusedWithoutTheStoreForAtMostMaxAge() {
        var items = SoldOutItems()
        #expect(refusal(&items) == nil, "nothing known: the store answers")
        items.soldOut(product(1), orders: [order("had", requestId: "r1")], seenIn: items.generation, now: t0)
        #expect(refusal(&items)?.code == ErrorCode.soldOut)
        #expect(refusal(&items)?.message == "item 1 is sold out")
        #expect(refusal(&items, user: "had")?.code == ErrorCode.soldOut, "a buyer with an order, asking anew")
        #expect(refusal(&items, user: "had", requestId: nil)?.code == ErrorCode.soldOut)
        #expect(refusal(&items, user: "had", requestId: "r1") == nil, "a retry asks the store, which gives its order back")
        #expect(refusal(&items, user: "new", requestId: "r1")?.code == ErrorCode.soldOut, "another buyer's request id is not theirs")
        #expect(refusal(&items, 2) == nil, "other items are not known")
        let late = t0 + SoldOutItems.maxAge
        #expect(refusal(&items, at: late) == nil, "after maxAge the store is asked again")
        #expect(!items.knows(1, now: late), "and the item is forgotten")
    }

    @Test func theAnswerIsTheStoresAnswerInItsOrderOfRules() {
        var items = SoldOutItems()
        items.soldOut(product(1, limit: 2), orders: [order("had", 2, requestId: "r1")], seenIn: items.generation, now: t0)
        #expect(refusal(&items, quantity: 3)?.code == ErrorCode.purchaseLimitExceeded, "the limit comes before the stock")
        #expect(refusal(&items, quantity: 2)?.code == ErrorCode.soldOut)
        #expect(refusal(&items, user: "had")?.code == ErrorCode.purchaseLimitExceeded, "what a buyer holds counts against the limit")
        #expect(refusal(&items, user: "had")?.message == "item 1 is limited to 2 per buyer; you hold 2")
    }

    @Test func holdingsCountReservedAndPaidUnitsAndEveryRequestId() {
        let holdings = Holding.of([
            order("a", 2, .reserved, requestId: "r1"), order("a", 3, .paid, requestId: nil), order("a", 4, .cancelled, requestId: "r2"), order("b", 1, .expired, requestId: "r3"),
        ])
        #expect(holdings == ["a": Holding(quantity: 5, requestIds: ["r1", "r2"]), "b": Holding(quantity: 0, requestIds: ["r3"])])
    }

    @Test func aChangeForgetsTheItemAndDisbelievesPurchasesThatStartedBeforeIt() {
        var items = SoldOutItems()
        let started = items.generation
        items.changed(1)  // a restock committed while the purchase read the empty stock
        items.soldOut(product(1), orders: [], seenIn: started, now: t0)
        #expect(!items.knows(1, now: t0), "a purchase from before the change is not believed")
        items.soldOut(product(1), orders: [], seenIn: items.generation, now: t0)
        #expect(items.knows(1, now: t0))
        items.changed(1)
        #expect(refusal(&items) == nil)
    }

    @Test func onlyAnEmptyProductOnTheShelfWithFewOrdersIsKept() {
        var items = SoldOutItems()
        items.soldOut(product(1, stock: 3), orders: [], seenIn: items.generation, now: t0)
        items.soldOut(product(2, onShelf: false), orders: [], seenIn: items.generation, now: t0)
        let many = (0...SoldOutItems.maxOrders).map { order("u\($0)", requestId: "r\($0)", number: $0) }
        items.soldOut(product(3), orders: many, seenIn: items.generation, now: t0)
        #expect(!items.knows(1, now: t0) && !items.knows(2, now: t0) && !items.knows(3, now: t0))
        items.soldOut(product(3), orders: Array(many.dropLast()), seenIn: items.generation, now: t0)
        #expect(items.knows(3, now: t0), "maxOrders orders are kept")
    }

    @Test func atMostMaxItemsAreKeptTheOldestGoingFirst() {
        var items = SoldOutItems()
        for n in 1...(SoldOutItems.maxItems + 1) {
            items.soldOut(product(n), orders: [], seenIn: items.generation, now: t0 + .milliseconds(n))
        }
        #expect(!items.knows(1, now: t0 + .milliseconds(10)))
        #expect((2...(SoldOutItems.maxItems + 1)).allSatisfy { items.knows($0, now: t0 + .milliseconds(10)) })
    }
}

@Suite struct PurchaseTests {
    @Test func requestsAreCheckedBeforeAnyStore() {
        #expect(throws: LiveRoomError.self) { try Purchase.check(quantity: 0, requestId: nil) }
        #expect(throws: LiveRoomError.self) { try Purchase.check(quantity: 101, requestId: nil) }
        #expect(throws: LiveRoomError.self) { try Purchase.check(quantity: 1, requestId: "") }
        #expect(throws: LiveRoomError.self) { try Purchase.check(quantity: 1, requestId: String(repeating: "r", count: 65)) }
        #expect(throws: Never.self) { try Purchase.check(quantity: 100, requestId: String(repeating: "r", count: 64)) }
    }

    @Test func stockAnswersSayWhatIsLeft() {
        #expect(throws: Never.self) { try Purchase.checkStock(2, quantity: 2, itemNumber: 7) }
        do {
            try Purchase.checkStock(1, quantity: 2, itemNumber: 7)
            Issue.record("not enough stock must be refused")
        } catch {
            #expect(error.code == ErrorCode.soldOut && error.message == "only 1 of item 7 left")
        }
    }
}
