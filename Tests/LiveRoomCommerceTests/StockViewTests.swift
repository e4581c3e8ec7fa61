import LiveRoomCommerce
import LiveRoomProtocol
import Testing

@Suite struct StockViewTests {
    /// Of a burst for 100 units, 100 purchases go to the store and the rest are sold out at once;
    /// units of a purchase the store refused come back.
    @Test func aBurstBeyondTheStockIsSoldOutAtOnceAndRefusedUnitsComeBack() {
        var view = StockView()
        view.known(1, stock: 100)
        var admitted = 0
        var refused: [LiveRoomError] = []
        for n in 0..<1_000 {
            if let error = view.admit(1, quantity: 1, userId: "u\(n)", requestId: "r\(n)") { refused.append(error) } else { admitted += 1 }
        }
        #expect(admitted == 100 && refused.count == 900)
        #expect(refused.allSatisfy { $0.code == ErrorCode.soldOut })
        #expect(view.pending(1) == 100)
        // One admitted purchase is refused by the store (over its buyer's limit): its unit is free again.
        view.answered(1, quantity: 1, stockLeft: nil)
        #expect(view.admit(1, quantity: 1, userId: "late", requestId: nil) == nil)
        #expect(view.admit(1, quantity: 1, userId: "later", requestId: nil)?.code == ErrorCode.soldOut)
        // As the store answers, the stock it reports and the purchases left agree again.
        for left in stride(from: 99, through: 0, by: -1) { view.answered(1, quantity: 1, stockLeft: left) }
        #expect(view.pending(1) == 0)
        #expect(view.admit(1, quantity: 1, userId: "after", requestId: nil)?.code == ErrorCode.soldOut)
        // Stock back (an order expired): admitted again.
        view.known(1, stock: 2)
        #expect(view.admit(1, quantity: 2, userId: "back", requestId: nil) == nil)
    }

    /// A retry of an admitted request is admitted again (the store answers it with its order),
    /// even once everything is taken; a new request of the same user is not.
    @Test func aRetriedRequestGoesToTheStoreAgain() {
        var view = StockView()
        view.known(1, stock: 1)
        #expect(view.admit(1, quantity: 1, userId: "fan", requestId: "r1") == nil)
        view.answered(1, quantity: 1, stockLeft: 0)
        #expect(view.admit(1, quantity: 1, userId: "fan", requestId: "r1") == nil, "the retry finds its order")
        #expect(view.admit(1, quantity: 1, userId: "fan", requestId: "r2")?.code == ErrorCode.soldOut)
        #expect(view.admit(1, quantity: 1, userId: "other", requestId: "r1")?.code == ErrorCode.soldOut, "a request id is the buyer's own")
    }

    /// Items of unknown stock are admitted; item numbers of a hostile client do not grow the view
    /// past its bound (they are admitted uncounted) and are forgotten once answered.
    @Test func unknownItemsAreAdmittedAndTheViewIsBounded() {
        var view = StockView()
        for n in 0..<5_000 { #expect(view.admit(n, quantity: 1, userId: "x", requestId: nil) == nil) }
        #expect(view.pending(4_999) == 0, "beyond the bound, not counted")
        for n in 0..<5_000 { view.answered(n, quantity: 1, stockLeft: nil) }
        #expect(view.pending(0) == 0)
        view.known(7, stock: 0)
        #expect(view.admit(7, quantity: 1, userId: "x", requestId: nil)?.code == ErrorCode.soldOut)
        view.removed(7)
        #expect(view.admit(7, quantity: 1, userId: "x", requestId: nil) == nil, "a removed item is unknown again")
    }
}
