import LiveRoomProtocol

/// What one room's shop has yet to tell: the latest of each changed product and the removed
/// item numbers (for everyone, `onProductChanged`), and the sales (for the anchors,
/// `onProductSold`). A burst of purchases is told as one event of each kind per interval,
/// however fast the stock moves.
public struct ShopNews: Sendable, Hashable {
    private var products: [Int: Product] = [:]
    private var removed: Set<Int> = []
    private var sales: [Int: ProductSale] = [:]

    public init() {}

    public var isEmpty: Bool { products.isEmpty && removed.isEmpty && sales.isEmpty }

    public mutating func changed(_ product: Product) {
        products[product.itemNumber] = product
        removed.remove(product.itemNumber)
    }

    public mutating func removed(_ itemNumber: Int) {
        products[itemNumber] = nil
        removed.insert(itemNumber)
    }

    /// A purchase of `quantity` that left `stockLeft`: sales of one item add up, and the lowest
    /// stock seen is the one told (purchases may finish out of order).
    public mutating func sold(_ itemNumber: Int, quantity: Int, stockLeft: Int) {
        var sale = sales[itemNumber] ?? ProductSale(itemNumber: itemNumber, quantity: 0, stockLeft: stockLeft)
        sale.quantity += quantity
        sale.stockLeft = min(sale.stockLeft, stockLeft)
        sales[itemNumber] = sale
    }

    /// The events to send now, in item-number order, leaving nothing to tell: `room` for
    /// everyone (the changed products in runs of at most ``Product/maxEventBytes``, the
    /// removed items with the first; none when nothing changed), `anchors` for the anchors
    /// (nil when nothing sold).
    public mutating func take() -> (room: [ServerEvent], anchors: ServerEvent?) {
        defer { self = ShopNews() }
        var runs = Product.runs(of: products.keys.sorted().compactMap { products[$0]?.json })
        if runs.isEmpty, !removed.isEmpty { runs = [[]] }
        let room = runs.enumerated().map { index, run in ServerEvent.onProductChanged(products: run, removed: index == 0 ? removed.sorted() : []) }
        let anchors: ServerEvent? = sales.isEmpty ? nil : .onProductSold(sales: sales.keys.sorted().compactMap { sales[$0] })
        return (room, anchors)
    }
}
