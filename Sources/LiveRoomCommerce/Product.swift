import Foundation
import LiveRoomProtocol

/// One product of a room's catalogue.
public struct Product: Sendable, Hashable {
    /// The product's number, unique in its room (TRTC's pop-up message's `itemNumber`).
    public var itemNumber: Int
    public var title: String
    public var price: Money
    /// The product page.
    public var itemUrl: String
    /// A picture of the product; empty for none.
    public var imageUrl: String
    /// Units left to sell.
    public var stock: Int
    /// The most units one user may buy; nil for no limit.
    public var limitPerUser: Int?
    /// Whether it is on sale now.
    public var onShelf: Bool
    /// Counts the product's changes from 1: an edit names the version it was based on.
    public var version: Int
    /// Recordings of anchors presenting it, oldest first (kept by the store, not edited).
    public var replays: [Replay] = []

    public init(
        itemNumber: Int, title: String, price: Money, itemUrl: String, imageUrl: String = "", stock: Int, limitPerUser: Int? = nil,
        onShelf: Bool = true, version: Int = 1
    ) {
        self.itemNumber = itemNumber
        self.title = title
        self.price = price
        self.itemUrl = itemUrl
        self.imageUrl = imageUrl
        self.stock = stock
        self.limitPerUser = limitPerUser
        self.onShelf = onShelf
        self.version = version
    }

    // MARK: Rules

    /// Whether `text` holds a control character (C0, DEL, C1, line and paragraph separators) or
    /// a bidirectional formatting character (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069),
    /// which could make a title show as something else.
    public static func hasControlOrBidi(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
            default: false
            }
        }
    }

    /// Whether `url` is an absolute http(s) URL with a host, in printable ASCII without spaces,
    /// quotes, backslashes or angle brackets (a page shows it as a link).
    public static func isWebURL(_ url: String) -> Bool {
        guard url.utf8.allSatisfy({ (0x21...0x7E).contains($0) && !"\"'<>\\`".utf8.contains($0) }) else { return false }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://") else { return false }
        // The authority: no user info, a host before any port.
        let authority = url.drop(while: { $0 != "/" }).dropFirst(2).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !authority.contains("@") && !(authority.split(separator: ":", omittingEmptySubsequences: false).first ?? "").isEmpty
    }

    public static let itemNumberRange = 1...2_147_483_647
    public static let maxTitleLength = 128
    /// A title's most UTF-8 bytes: 128 characters of up to 4 bytes each, so that one
    /// "character" of many combining marks cannot make a catalogue message huge.
    public static let maxTitleBytes = 512
    public static let maxURLLength = 1024
    public static let stockRange = 0...1_000_000_000
    public static let limitPerUserRange = 1...1_000_000
    /// The most products one room's catalogue holds.
    public static let maxPerRoom = 500
    /// The currency a product has when it names none (TRTC's examples are in yuan).
    public static let defaultCurrency = "CNY"

    /// The most bytes of product JSON one event carries (a page of onProductList, one
    /// onProductChanged), whatever the products hold: well within the 64 KiB WebSocket frames
    /// the CLI reads, and small enough that a viewer's outbox never fills with one catalogue.
    public static let maxEventBytes = 48 << 10

    /// `products` (their JSON) cut, in order, into runs of at most `count` that take at most
    /// ``maxEventBytes`` each; every run holds at least one product.
    public static func runs(of products: [JSONValue], count: Int = .max) -> [[JSONValue]] {
        var runs: [[JSONValue]] = []
        var run: [JSONValue] = []
        var bytes = 0
        for product in products {
            let size = product.jsonText.utf8.count + 1
            if !run.isEmpty, run.count >= count || bytes + size > maxEventBytes {
                runs.append(run)
                (run, bytes) = ([], 0)
            }
            run.append(product)
            bytes += size
        }
        if !run.isEmpty { runs.append(run) }
        return runs
    }

    /// The product as signaling and the admin API show it: the price as a decimal string.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "itemNumber": .number(Double(itemNumber)), "title": .string(title), "price": .string(price.decimal),
            "currency": .string(price.currency), "itemUrl": .string(itemUrl), "imageUrl": .string(imageUrl),
            "stock": .number(Double(stock)), "onShelf": .bool(onShelf), "version": .number(Double(version)),
        ]
        object["limitPerUser"] = limitPerUser.map { .number(Double($0)) } ?? .null
        object["replays"] = .array(replays.map(\.json))
        return .object(object)
    }

    /// A new product from its fields (`itemNumber`, `title`, `price` as a decimal string,
    /// `currency`, `itemUrl`, `imageUrl`, `stock`, `limitPerUser`, `onShelf`), checked.
    public static func parseNew(_ fields: JSONFields) throws(LiveRoomError) -> Product {
        guard let itemNumber = try fields.int("itemNumber", in: itemNumberRange, code: ErrorCode.invalidProduct) else {
            throw fields.invalid("itemNumber", "is required", code: ErrorCode.invalidProduct)
        }
        guard fields.has("title") else { throw fields.invalid("title", "is required", code: ErrorCode.invalidProduct) }
        guard fields.has("price") else { throw fields.invalid("price", "is required, as a decimal string such as \"199.00\"", code: ErrorCode.invalidProduct) }
        guard fields.has("stock") else { throw fields.invalid("stock", "is required", code: ErrorCode.invalidProduct) }
        var product = Product(
            itemNumber: itemNumber, title: "", price: Money(minorUnits: 0, currency: defaultCurrency), itemUrl: "", stock: 0)
        try product.apply(fields, isNew: true)
        return product
    }

    /// Applies the fields an edit changes (any of those of ``parseNew(_:)`` but `itemNumber`), checked.
    public mutating func apply(_ fields: JSONFields, isNew: Bool = false) throws(LiveRoomError) {
        let code = ErrorCode.invalidProduct
        let known: Set = isNew
            ? ["itemNumber", "title", "price", "currency", "itemUrl", "imageUrl", "stock", "limitPerUser", "onShelf"]
            : ["title", "price", "currency", "itemUrl", "imageUrl", "stock", "limitPerUser", "onShelf", "version"]
        if let unknown = fields.object.keys.sorted().first(where: { !known.contains($0) }) {
            throw fields.invalid(unknown, "is not a product field\(isNew ? "" : " an edit may change")", code: code)
        }
        if let title = try fields.string("title", code: code) {
            let trimmed = title.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, trimmed.count <= Self.maxTitleLength, trimmed.utf8.count <= Self.maxTitleBytes else {
                throw fields.invalid("title", "must be 1-\(Self.maxTitleLength) characters and at most \(Self.maxTitleBytes) UTF-8 bytes", code: code)
            }
            guard !Self.hasControlOrBidi(trimmed) else {
                throw fields.invalid("title", "must be one line of text without control characters or bidirectional overrides", code: code)
            }
            self.title = trimmed
        }
        let currency = try fields.string("currency", code: code) ?? price.currency
        guard Money.isCurrencyCode(currency) else { throw fields.invalid("currency", "must be an ISO 4217 code such as \"CNY\", not \(currency.quoted)", code: code) }
        if let text = try fields.string("price", code: code) {
            guard let money = Money(decimal: text, currency: currency) else {
                throw fields.invalid(
                    "price", "must be a decimal string of at most \(Money.exponent(of: currency)) decimals such as \"199.00\", not negative, not \(text.quoted)",
                    code: code)
            }
            price = money
        } else if currency != price.currency {
            throw fields.invalid("currency", "changes only with a price", code: code)
        }
        for key in ["itemUrl", "imageUrl"] {
            guard let url = try fields.string(key, code: code) else { continue }
            guard url.utf8.count <= Self.maxURLLength, url.isEmpty || Self.isWebURL(url) else {
                throw fields.invalid(key, "must be an http(s) URL with a host, of at most \(Self.maxURLLength) bytes, without spaces, quotes or angle brackets", code: code)
            }
            if key == "itemUrl" { itemUrl = url } else { imageUrl = url }
        }
        if let stock = try fields.int("stock", in: Self.stockRange, code: code) { self.stock = stock }
        if fields.object["limitPerUser"] == .null {
            limitPerUser = nil
        } else if let limit = try fields.int("limitPerUser", in: Self.limitPerUserRange, code: code) {
            limitPerUser = limit
        }
        if let onShelf = try fields.bool("onShelf", code: code) { self.onShelf = onShelf }
    }

    /// TRTC's pop-up message for this product: `{"cmd":"item_popup_msg","msg":{"itemNumber",
    /// "itemPrice","itemTitle","itemUrl"}}`.
    public var popUpMessage: String {
        let message: JSONValue = [
            "cmd": "item_popup_msg",
            "msg": [
                "itemNumber": .number(Double(itemNumber)), "itemPrice": .number(price.number), "itemTitle": .string(title),
                "itemUrl": .string(itemUrl),
            ],
        ]
        return message.jsonText
    }
}
