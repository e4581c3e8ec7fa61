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

    @Test func aSoldOutItemIsRefusedToNewBuyersOnlyAndForAtMostMaxAge() {
        var items = SoldOutItems()
        #expect(items.refusal(1, quantity: 1, userId: "new", now: t0) == nil, "nothing known: the store answers")
        items.soldOut(product(1), buyers: ["had"], seenIn: items.generation, now: t0)
        #expect(items.refusal(1, quantity: 1, userId: "new", now: t0)?.code == ErrorCode.soldOut)
        #expect(items.refusal(1, quantity: 1, userId: "new", now: t0)?.message == "item 1 is sold out")
        #expect(items.refusal(1, quantity: 1, userId: "had", now: t0) == nil, "a buyer with an order asks the store (a retry gets its order back)")
        #expect(items.refusal(2, quantity: 1, userId: "new", now: t0) == nil, "other items are not known")
        let late = t0 + SoldOutItems.maxAge
        #expect(items.refusal(1, quantity: 1, userId: "new", now: late) == nil, "after maxAge the store is asked again")
        #expect(!items.knows(1, now: late), "and the item is forgotten")
    }

    @Test func theAnswerIsTheStoresAnswerInItsOrderOfRules() {
        var items = SoldOutItems()
        items.soldOut(product(1, limit: 2), buyers: [], seenIn: items.generation, now: t0)
        #expect(items.refusal(1, quantity: 3, userId: "new", now: t0)?.code == ErrorCode.purchaseLimitExceeded, "the limit comes before the stock")
        #expect(items.refusal(1, quantity: 2, userId: "new", now: t0)?.code == ErrorCode.soldOut)
    }

    @Test func aChangeForgetsTheItemAndDisbelievesPurchasesThatStartedBeforeIt() {
        var items = SoldOutItems()
        let started = items.generation
        items.changed(1)  // a restock committed while the purchase read the empty stock
        items.soldOut(product(1), buyers: [], seenIn: started, now: t0)
        #expect(!items.knows(1, now: t0), "a purchase from before the change is not believed")
        items.soldOut(product(1), buyers: [], seenIn: items.generation, now: t0)
        #expect(items.knows(1, now: t0))
        items.changed(1)
        #expect(items.refusal(1, quantity: 1, userId: "new", now: t0) == nil)
    }

    @Test func onlyAnEmptyProductOnTheShelfWithFewBuyersIsKept() {
        var items = SoldOutItems()
        items.soldOut(product(1, stock: 3), buyers: [], seenIn: items.generation, now: t0)
        items.soldOut(product(2, onShelf: false), buyers: [], seenIn: items.generation, now: t0)
        let many = Set((0...SoldOutItems.maxBuyers).map { "u\($0)" })
        items.soldOut(product(3), buyers: many, seenIn: items.generation, now: t0)
        #expect(!items.knows(1, now: t0) && !items.knows(2, now: t0) && !items.knows(3, now: t0))
    }

    @Test func atMostMaxItemsAreKeptTheOldestGoingFirst() {
        var items = SoldOutItems()
        for n in 1...(SoldOutItems.maxItems + 1) {
            items.soldOut(product(n), buyers: [], seenIn: items.generation, now: t0 + .milliseconds(n))
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
