import LiveRoomProtocol
import Testing

@testable import LiveRoomCommerce

@Suite struct ShopNewsTests {
    func product(_ itemNumber: Int, stock: Int) -> Product {
        Product(itemNumber: itemNumber, title: "T\(itemNumber)", price: Money(minorUnits: 100, currency: "CNY"), itemUrl: "https://s/\(itemNumber)", stock: stock)
    }

    @Test func aBurstIsToldAsOneEventOfEachKindInItemOrder() {
        var news = ShopNews()
        #expect(news.isEmpty)
        news.sold(2, quantity: 1, stockLeft: 9)
        news.changed(product(2, stock: 9))
        // Purchases finish out of order: the lowest stock is the one told.
        news.sold(2, quantity: 2, stockLeft: 7)
        news.sold(2, quantity: 1, stockLeft: 8)
        news.changed(product(2, stock: 7))
        news.sold(1, quantity: 1, stockLeft: 0)
        news.changed(product(1, stock: 0))
        let (room, anchors) = news.take()
        #expect(anchors == .onProductSold(sales: [ProductSale(itemNumber: 1, quantity: 1, stockLeft: 0), ProductSale(itemNumber: 2, quantity: 4, stockLeft: 7)]))
        #expect(room == [.onProductChanged(products: [product(1, stock: 0).json, product(2, stock: 7).json], removed: [])])
        #expect(news.isEmpty, "taking leaves nothing to tell")
        #expect(news.take() == ([], nil))
    }

    @Test func aRemovalWinsOverAnEarlierChangeAndAChangeOverAnEarlierRemoval() {
        var news = ShopNews()
        news.changed(product(3, stock: 1))
        news.removed(3)
        news.removed(4)
        news.changed(product(4, stock: 2))
        #expect(news.take() == ([.onProductChanged(products: [product(4, stock: 2).json], removed: [3])], nil))
        news.removed(5)
        #expect(news.take() == ([.onProductChanged(products: [], removed: [5])], nil))
    }

    /// 500 products of the largest fields change at once: the room hears them in events of at
    /// most 48 KiB each (the CLI reads frames of 64 KiB), all of them, in item order.
    @Test func manyLargeChangesAreToldInEventsOfBoundedSize() {
        var news = ShopNews()
        for itemNumber in 1...500 {
            var large = product(itemNumber, stock: 1)
            large.title = String(repeating: "\u{1F600}", count: 128)
            large.itemUrl = "https://shop.example/" + String(repeating: "a", count: 1000)
            large.imageUrl = large.itemUrl
            news.changed(large)
        }
        news.removed(501)
        let (room, _) = news.take()
        var told: [Int] = []
        for (index, event) in room.enumerated() {
            #expect(event.json.jsonText.utf8.count <= 64 << 10)
            guard case .onProductChanged(let products, let removed) = event else { continue }
            #expect(removed == (index == 0 ? [501] : []))
            told += products.compactMap { $0["itemNumber"]?.intValue }
        }
        #expect(told == Array(1...500) && room.count > 10, "\(room.count) events")
    }
}
