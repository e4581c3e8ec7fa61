import LiveRoomProtocol
import Testing

@testable import LiveRoomCommerce

@Suite struct ProductTests {
    func fields(_ text: String) throws -> JSONFields {
        try JSONFields(try JSONValue.parse(text), path: "product")
    }

    @Test func aNewProductReadsEveryFieldWithDefaults() throws {
        let product = try Product.parseNew(fields(#"{"itemNumber":7,"title":" Green tea ","price":"199.00","itemUrl":"https://shop.example/7","stock":100}"#))
        #expect(product == Product(
            itemNumber: 7, title: "Green tea", price: Money(minorUnits: 19_900, currency: "CNY"), itemUrl: "https://shop.example/7", stock: 100))
        let popUp = try JSONValue.parse(product.popUpMessage)
        #expect(popUp == ["cmd": "item_popup_msg", "msg": ["itemNumber": 7, "itemPrice": 199.0, "itemTitle": "Green tea", "itemUrl": "https://shop.example/7"]])
        let full = try Product.parseNew(fields(
            #"{"itemNumber":8,"title":"Cup","price":"59.5","currency":"USD","itemUrl":"https://s/8","imageUrl":"https://s/8.png","stock":0,"limitPerUser":2,"onShelf":false}"#))
        #expect(full.price == Money(minorUnits: 5950, currency: "USD") && full.limitPerUser == 2 && !full.onShelf && full.stock == 0)
        #expect(full.json["price"] == "59.50" && full.json["limitPerUser"] == 2 && full.json["version"] == 1)
    }

    @Test(arguments: [
        (#"{"title":"T","price":"1","stock":1}"#, "product.itemNumber"),
        (#"{"itemNumber":1,"price":"1","stock":1}"#, "product.title"),
        (#"{"itemNumber":1,"title":"   ","price":"1","stock":1}"#, "product.title"),
        (#"{"itemNumber":1,"title":"T","stock":1}"#, "product.price"),
        (#"{"itemNumber":1,"title":"T","price":"-1","stock":1}"#, "product.price"),
        (#"{"itemNumber":1,"title":"T","price":199,"stock":1}"#, "product.price"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":-1}"#, "product.stock"),
        (#"{"itemNumber":1,"title":"T","price":"1"}"#, "product.stock"),
        (#"{"itemNumber":0,"title":"T","price":"1","stock":1}"#, "product.itemNumber"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"itemUrl":"javascript:alert(1)"}"#, "product.itemUrl"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"limitPerUser":0}"#, "product.limitPerUser"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"currency":"yuan"}"#, "product.currency"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"colour":"red"}"#, "product.colour"),
        (#"{"itemNumber":1,"title":"line\nbreak","price":"1","stock":1}"#, "product.title"),
        // Control and bidirectional characters: NUL, a right-to-left override, a line separator.
        (#"{"itemNumber":1,"title":"a\u0000b","price":"1","stock":1}"#, "product.title"),
        (#"{"itemNumber":1,"title":"FREE \u202Eevil","price":"1","stock":1}"#, "product.title"),
        (#"{"itemNumber":1,"title":"a\u2028b","price":"1","stock":1}"#, "product.title"),
        // URLs without a host, with user info, a quote, angle brackets or a space.
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"itemUrl":"http://"}"#, "product.itemUrl"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"itemUrl":"https://:443/x"}"#, "product.itemUrl"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"itemUrl":"https://shop.example@evil.example/"}"#, "product.itemUrl"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"itemUrl":"https://s/\"><script>alert(1)</script>"}"#, "product.itemUrl"),
        (#"{"itemNumber":1,"title":"T","price":"1","stock":1,"imageUrl":"https://s/a b.png"}"#, "product.imageUrl"),
    ])
    func invalidProductsNameTheField(json: String, field: String) throws {
        #expect(throws: LiveRoomError.self) { try Product.parseNew(fields(json)) }
        do {
            _ = try Product.parseNew(fields(json))
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.invalidProduct && error.field == field, "\(error.message)")
        }
    }

    @Test func overLongFieldsAreRefused() throws {
        let title = String(repeating: "x", count: Product.maxTitleLength + 1)
        #expect(throws: LiveRoomError.self) { try Product.parseNew(fields(#"{"itemNumber":1,"title":"\#(title)","price":"1","stock":1}"#)) }
        // One "character" of a base letter and 10,000 combining marks: 1 character, 20,001 bytes.
        let grapheme = "e" + String(repeating: "\u{301}", count: 10_000)
        #expect(grapheme.count == 1)
        let heavy = JSONValue.object(["itemNumber": 1, "title": .string(grapheme), "price": "1", "stock": 1])
        #expect(throws: LiveRoomError.self) { try Product.parseNew(JSONFields(heavy, path: "product", code: ErrorCode.invalidProduct)) }
        // Titles of other scripts within the bounds are kept.
        let fine = JSONValue.object(["itemNumber": 1, "title": "绿茶 🍵 Thé vert", "price": "1", "stock": 1, "itemUrl": "https://[::1]:8443/p?i=1#x"])
        #expect(try Product.parseNew(JSONFields(fine, path: "product", code: ErrorCode.invalidProduct)).title == "绿茶 🍵 Thé vert")
        let url = "https://s/" + String(repeating: "a", count: Product.maxURLLength)
        #expect(throws: LiveRoomError.self) { try Product.parseNew(fields(#"{"itemNumber":1,"title":"T","price":"1","stock":1,"itemUrl":"\#(url)"}"#)) }
    }

    @Test func anEditChangesOnlyWhatItNames() throws {
        var product = Product(itemNumber: 3, title: "Tea", price: Money(minorUnits: 100, currency: "CNY"), itemUrl: "https://s/3", stock: 5, limitPerUser: 2)
        try product.apply(fields(#"{"stock":4,"limitPerUser":null,"version":1}"#))
        #expect(product.stock == 4 && product.limitPerUser == nil && product.title == "Tea" && product.price.minorUnits == 100)
        #expect(throws: LiveRoomError.self) { try product.apply(fields(#"{"itemNumber":4,"version":1}"#)) }
        #expect(throws: LiveRoomError.self) { try product.apply(fields(#"{"currency":"USD","version":1}"#)) }
        try product.apply(fields(#"{"currency":"USD","price":"2.50","version":1}"#))
        #expect(product.price == Money(minorUnits: 250, currency: "USD"))
    }
}

@Suite struct ReplayTests {
    @Test func fileNamesComeFromTheIdAndOnlyWellFormedNamesAreAsked() {
        let replay = Replay(
            replayId: "0123456789abcdef0123456789abcdef", roomId: "*7", itemNumber: 1, userId: "host", codec: "h264", durationMs: 6000, bytes: 10,
            createdAt: 1)
        #expect(replay.fileName == "0123456789abcdef0123456789abcdef.mkv" && replay.url == "/replays/\(replay.fileName)")
        #expect(Replay.fileExtension(codec: "vp8") == "webm" && Replay.fileExtension(codec: "opus") == "webm")
        #expect(Replay.replayId(fromFileName: replay.fileName) == replay.replayId)
        for name in [
            "../liveroom.sqlite", "0123456789abcdef0123456789abcdef.mp4", "0123456789ABCDEF0123456789abcdef.mkv", "0123456789abcdef.mkv",
            "0123456789abcdef0123456789abcdef.mkv.webm", "0123456789abcdef0123456789abcdef", "/etc/passwd", "",
        ] {
            #expect(Replay.replayId(fromFileName: name) == nil, "\(name)")
        }
        #expect(replay.json["durationMs"] == 6000 && replay.json["codec"] == "h264")
    }
}
