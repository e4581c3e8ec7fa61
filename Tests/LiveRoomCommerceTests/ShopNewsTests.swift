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
        #expect(room == .onProductChanged(products: [product(1, stock: 0).json, product(2, stock: 7).json], removed: []))
        #expect(news.isEmpty, "taking leaves nothing to tell")
        #expect(news.take() == (nil, nil))
    }

    @Test func aRemovalWinsOverAnEarlierChangeAndAChangeOverAnEarlierRemoval() {
        var news = ShopNews()
        news.changed(product(3, stock: 1))
        news.removed(3)
        news.removed(4)
        news.changed(product(4, stock: 2))
        #expect(news.take() == (.onProductChanged(products: [product(4, stock: 2).json], removed: [3]), nil))
    }
}
