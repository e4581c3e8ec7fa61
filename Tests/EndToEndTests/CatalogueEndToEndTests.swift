import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomAuth
import LiveRoomProtocol
import Testing

/// A room's catalogue with real processes: an anchor builds it, the audience lists it and hears
/// of changes, and it is still there after a restart and after `kill -9`.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CatalogueEndToEndTests {
    static let tea = #"{"itemNumber":1,"title":"Green tea","price":"199.00","itemUrl":"https://shop.example/1","stock":100,"limitPerUser":2}"#
    static let cup = #"{"itemNumber":2,"title":"Cup","price":"59.50","currency":"CNY","itemUrl":"https://shop.example/2","imageUrl":"https://shop.example/2.png","stock":10}"#

    /// The product `itemNumber` of the latest onProductList.
    static func listed(_ client: ChildProcess, _ itemNumber: Int, count: Int = 1) async throws -> JSONValue? {
        client.send("product list")
        let list = try await client.waitForEvent("onProductList", count: count)
        return list["products"]?.arrayValue?.first { $0["itemNumber"]?.intValue == itemNumber }
    }

    /// Only the shop's owners change it: the first anchor to enter owns it; a co-host brought on
    /// mic and a stranger who enters the emptied room first as an anchor do not, until an owner
    /// grants it or the admin API names them.
    @Test func onlyTheShopsOwnersChangeItNotCoHostsOrWhoeverEntersAnEmptyRoomFirst() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        host.send("product add \(Self.tea)")
        #expect(try await host.waitForEvent("onProductResult")["code"] == 0)
        host.send("product list")
        #expect(try await host.waitForEvent("onShopOwners")["owners"] == ["host"])

        // A fan brought on mic is an anchor, not an owner: every change of the shop is refused.
        let fan = try await server.entered("fan", in: scope)
        fan.send("request-mic")
        try await host.waitForEvent("onMicRequest") { $0["userId"] == "fan" }
        host.send("accept-mic fan")
        try await fan.waitForEvent("onSwitchRole") { $0["errCode"] == 0 }
        fan.send(#"product edit 1 {"price":"0.01","version":1}"#)
        fan.send(#"product add {"itemNumber":9,"title":"Free","price":"0.01","itemUrl":"https://evil.example/","stock":5}"#)
        fan.send("product remove 1")
        let refused = try await fan.waitForEvent("onProductResult", count: 3)
        #expect(fan.events(named: "onProductResult").allSatisfy { $0["code"]?.intValue == ErrorCode.notShopOwner }, "\(refused.jsonText)")
        fan.send("pop 1 custom")
        #expect(try await fan.waitForEvent("onPopProduct")["code"]?.intValue == ErrorCode.notShopOwner)
        fan.send("unpop")
        fan.send("grant-shop fan")
        try await fan.waitForEvent("onError", count: 2)
        #expect(fan.events(named: "onError").map { $0["errCode"]?.intValue } == [ErrorCode.notShopOwner, ErrorCode.notShopOwner])
        fan.send("pk-battle 30")
        #expect(try await fan.waitForEvent("onError", count: 3)["errCode"] != nil)
        host.send("product list")
        let tea = try #require(try await Self.listed(host, 1, count: 2))
        #expect(tea["price"] == "199.00" && tea["version"] == 1, "the shop is as the owner left it: \(tea.jsonText)")

        // The owner grants it: the room hears the owners and the co-host may change the shop.
        host.send("grant-shop fan")
        #expect(try await fan.waitForEvent("onShopOwners")["owners"] == ["fan", "host"])
        fan.send(#"product edit 1 {"stock":50,"version":1}"#)
        #expect(try await fan.waitForEvent("onProductResult", count: 4)["code"] == 0)
        // Revoked again; the last owner cannot be revoked.
        host.send("revoke-shop fan")
        try await host.waitForEvent("onShopOwners", count: 3) { $0["owners"] == ["host"] }
        host.send("revoke-shop host")
        #expect(try await host.waitForEvent("onError")["errCode"]?.intValue == ErrorCode.invalidParameter)

        // Everyone leaves; a stranger who enters the empty room first as an anchor owns nothing.
        host.stop()
        fan.stop()
        try await Task.sleep(for: .milliseconds(500))
        let stranger = try await server.entered("stranger", role: "anchor", in: scope)
        stranger.send(#"product edit 1 {"price":"0.01","version":2}"#)
        #expect(try await stranger.waitForEvent("onProductResult")["code"]?.intValue == ErrorCode.notShopOwner)
        // The admin API names the owners, and can always change the shop itself.
        let (named, status) = try await server.admin("SetShopOwners", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1", "UserIds": ["stranger"]], in: scope)
        #expect(status == 0 && named["Response"]?["UserIds"] == ["stranger"], "\(named.jsonText)")
        #expect(try await stranger.waitForEvent("onShopOwners")["owners"] == ["stranger"])
        stranger.send(#"product edit 1 {"price":"9.90","version":2}"#)
        #expect(try await stranger.waitForEvent("onProductResult", count: 2)["code"] == 0)
        let (described, _) = try await server.admin("DescribeShopOwners", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1"], in: scope)
        #expect(described["Response"]?["UserIds"] == ["stranger"], "\(described.jsonText)")
        let (tooMany, _) = try await server.admin(
            "SetShopOwners", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1", "UserIds": .array((0...20).map { .string("u\($0)") })], in: scope)
        #expect(tooMany["Response"]?["Error"]?["Code"] == "InvalidParameter.UserIds", "\(tooMany.jsonText)")
    }

    @Test func anAnchorBuildsACatalogueTheAudienceSeesItAndItSurvivesRestartsAndKillNine() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        var server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let fan = try await server.entered("fan", in: scope)

        host.send("product add \(Self.tea)")
        host.send("product add \(Self.cup)")
        let added = try await host.waitForEvent("onProductResult", count: 2)
        #expect(added["code"] == 0, "\(added.jsonText)")
        // The audience hears of the new products (in one event or two) and lists them.
        try await fan.waitForEvent("onProductChanged") { ($0["products"]?.arrayValue ?? []).contains { $0["itemNumber"] == 2 } }
        let tea = try #require(try await Self.listed(fan, 1))
        #expect(tea["price"] == "199.00" && tea["currency"] == "CNY" && tea["stock"] == 100 && tea["limitPerUser"] == 2 && tea["version"] == 1)

        // Only anchors edit; a stale version and invalid products get their codes.
        fan.send("product add {\"itemNumber\":3,\"title\":\"x\",\"price\":\"1\",\"stock\":1}")
        #expect(try await fan.waitForEvent("onError")["errCode"]?.intValue == ErrorCode.anchorOnly)
        host.send(#"product edit 1 {"stock":90,"version":1}"#)
        host.send(#"product edit 1 {"title":"Black tea","version":1}"#)
        let edits = try await host.waitForEvent("onProductResult", count: 4)
        let results = host.events(named: "onProductResult").suffix(2)
        #expect(results.first?["code"] == 0 && results.first?["product"]?["version"] == 2, "\(results)")
        #expect(edits["code"]?.intValue == ErrorCode.productVersionConflict, "\(edits.jsonText)")
        for (json, field) in [
            (#"{"itemNumber":4,"price":"1","stock":1}"#, "product.title"), (#"{"itemNumber":4,"title":"T","price":"-5","stock":1}"#, "product.price"),
            (#"{"itemNumber":4,"title":"T","price":"5","stock":-1}"#, "product.stock"),
        ] {
            let answered = host.events(named: "onProductResult").count
            host.send("product add \(json)")
            let refused = try await host.waitForEvent("onProductResult", count: answered + 1)
            #expect(refused["code"]?.intValue == ErrorCode.invalidProduct && refused["message"]?.stringValue?.hasPrefix(field) == true, "\(refused.jsonText)")
        }
        host.send("product remove 9")
        #expect(try await host.waitForEvent("onProductResult") { $0["itemNumber"] == 9 }["code"]?.intValue == ErrorCode.productNotFound)

        // A graceful restart keeps the catalogue.
        host.stop()
        fan.stop()
        server.process.stop()
        server = try await TestServer.start(in: scope)
        let viewer = try await server.entered("viewer", in: scope)
        #expect(try await Self.listed(viewer, 1)?["stock"] == 90)

        // So does kill -9 right after an edit was answered.
        let anchor = try await server.entered("host", role: "anchor", in: scope)
        anchor.send(#"product edit 2 {"stock":7,"onShelf":false,"version":1}"#)
        #expect(try await anchor.waitForEvent("onProductResult")["code"] == 0)
        server.process.crash()
        viewer.stop()
        anchor.stop()
        server = try await TestServer.start(in: scope)
        let late = try await server.entered("late", in: scope)
        let cup = try #require(try await Self.listed(late, 2))
        #expect(cup["stock"] == 7 && cup["onShelf"] == false && cup["version"] == 2 && cup["price"] == "59.50", "\(cup.jsonText)")
    }

    /// `pop` reaches a present viewer as a custom message and as SEI; a viewer who enters later
    /// gets it on entry, and so does DescribeRoom, also after a kill -9.
    @Test(.requires(.ffprobe)) func aPopUpReachesPresentViewersAsMessageAndSEIAndLateComersOnEntry() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        var server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(20))
        // A room's catalogue commands run in order: the pop finds the product added just before.
        host.send("product add \(Self.tea)")
        host.send("pop 1")
        #expect(try await host.waitForEvent("onProductResult")["code"] == 0)
        let popped = try await host.waitForEvent("onPopProduct")
        let data = try #require(popped["data"]?.stringValue, "\(popped.jsonText)")
        let message = try JSONValue.parse(data)
        #expect(message["cmd"] == "item_popup_msg" && message["msg"]?["itemNumber"] == 1 && message["msg"]?["itemTitle"] == "Green tea")
        #expect(message["msg"]?["itemPrice"]?.doubleValue == 199 && message["msg"]?["itemUrl"] == "https://shop.example/1")
        #expect(try await fan.waitForEvent("onRecvCustomCmdMsg")["data"] == .string(data))
        #expect(try await fan.waitForEvent("onRecvSEIMsg", timeout: .seconds(10))["message"] == .string(data))
        #expect(try await fan.waitForEvent("onPopUpChanged")["itemNumber"] == 1)
        // Unknown items and the audience are refused.
        host.send("pop 9")
        #expect(try await host.waitForEvent("onPopProduct") { $0["itemNumber"] == 9 }["code"]?.intValue == ErrorCode.productNotFound)
        fan.send("pop 1")
        #expect(try await fan.waitForEvent("onError")["errCode"]?.intValue == ErrorCode.anchorOnly)

        let late = try await server.entered("late", in: scope)
        let onEntry = try await late.waitForEvent("onPopUpChanged")
        #expect(onEntry["data"] == .string(data) && onEntry["userId"] == "host", "\(onEntry.jsonText)")

        // The pop-up outlives a crash: DescribeRoom and the next comer see it.
        server.process.crash()
        for client in [host, fan, late] { client.stop() }
        server = try await TestServer.start(in: scope)
        let anchor = try await server.entered("host", role: "anchor", in: scope)
        let (described, _) = try await server.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1"], in: scope)
        #expect(described["Response"]?["PopUp"]?["ItemNumber"] == 1 && described["Response"]?["PopUp"]?["Data"] == .string(data), "\(described.jsonText)")
        var next = try await server.entered("next", in: scope)
        #expect(try await next.waitForEvent("onPopUpChanged")["itemNumber"] == 1)

        // And a graceful restart (the rooms are dismissed, the pop-up stays).
        for client in [anchor, next] { client.stop() }
        server.process.stop()
        server = try await TestServer.start(in: scope)
        let host2 = try await server.entered("host", role: "anchor", in: scope)
        next = try await server.entered("next", in: scope)
        #expect(try await next.waitForEvent("onPopUpChanged")["itemNumber"] == 1)
        host2.send("unpop")
        let ended = try await next.waitForEvent("onPopUpChanged", count: 2)
        #expect(ended["itemNumber"] == .null && ended["data"] == .null, "\(ended.jsonText)")
    }

    /// Runs the one-shot `liveroom product` and returns its answer and exit status.
    static func product(_ server: TestServer, _ words: [String], in scope: ProcessScope) async throws -> (JSONValue, Int32?) {
        let process = try scope.start(
            "liveroom",
            ["product", "--server", server.url, "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--room", "room1"]
                + words,
            name: "product")
        let status = try await process.waitForExit()
        return (try JSONValue.parse(process.output.joined()), status)
    }

    static func admin(_ server: TestServer, _ action: String, _ fields: [String: JSONValue], in scope: ProcessScope) async throws -> JSONValue {
        var body = fields
        body["SdkAppId"] = .number(Double(TestServer.sdkAppId))
        let (answer, _) = try await server.admin(action, .object(body), in: scope)
        return answer["Response"] ?? .null
    }

    /// A full catalogue (500 products, every field at its largest: a 512-byte title, two 1 KB
    /// URLs, 1.3 MB in all) reaches ten viewers a page at a time: no answer outgrows the CLI's
    /// 64 KiB frames, each viewer gets every product once, and nobody's connection is lost.
    @Test func aLargeCatalogueComesInPagesAndNoViewerIsClosed() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        _ = try await server.entered("host", role: "anchor", in: scope)
        let sig = UserSig.make(
            sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: UserSig.administrator, time: Int64(Date().timeIntervalSince1970),
            expire: 600).encoded()
        let title = String(repeating: "\u{1F600}", count: 128)
        let url = "https://shop.example/" + String(repeating: "a", count: 1000)
        for itemNumber in 1...500 {
            var request = URLRequest(url: URL(string: "\(server.url)/v1/AddProduct?sdkappid=\(TestServer.sdkAppId)&identifier=administrator&usersig=\(sig)")!)
            request.httpMethod = "POST"
            let product: JSONValue = [
                "itemNumber": .number(Double(itemNumber)), "title": .string(title), "price": "1.00", "itemUrl": .string(url), "imageUrl": .string(url),
                "stock": 100,
            ]
            request.httpBody = Data(JSONValue.object(["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1", "Product": product]).jsonText.utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            let answer = try JSONValue.parse(String(decoding: data, as: UTF8.self))
            try #require(answer["Response"]?["Error"] == nil, "product \(itemNumber): \(answer.jsonText)")
        }
        let viewers = try await Array(0..<10).asyncMap { try await server.entered("viewer\($0)", in: scope) }
        for viewer in viewers { viewer.send("product list") }
        for (index, viewer) in viewers.enumerated() {
            var items: [Int] = []
            var pages = 0
            while items.count < 500, pages < 100 {
                pages += 1
                if pages > 1 { viewer.send("product list \(items.count)") }
                let list = try await viewer.waitForEvent("onProductList", count: pages, timeout: .seconds(15))
                let products = list["products"]?.arrayValue ?? []
                #expect(list["total"] == 500 && list["offset"]?.intValue == items.count && !products.isEmpty, "viewer\(index) page \(pages)")
                #expect(list.jsonText.utf8.count < 64 << 10, "a page is \(list.jsonText.utf8.count) bytes")
                items += products.compactMap { $0["itemNumber"]?.intValue }
            }
            #expect(items == Array(1...500), "viewer\(index) got every product once, in order, in \(pages) pages")
            #expect(viewer.isRunning && viewer.events(named: "onConnectionLost").isEmpty, "viewer\(index) stayed connected")
        }
    }

    /// Buying through `join`: a reservation, a retry with the same request id, the limit,
    /// unknown items and bad quantities; the shop backend confirms one order and cancels
    /// another; an unpaid one expires and its stock comes back; all of it survives kill -9.
    @Test func buyersReserveStockTheShopSettlesOrdersAndUnpaidOnesExpire() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let reservation = ["--order-reservation-timeout", "3"]
        var server = try await TestServer.start(in: scope, extra: reservation)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let fan = try await server.entered("fan", in: scope)
        let other = try await server.entered("other", in: scope)

        // The catalogue from a script, through the one-shot command.
        let (added, status) = try await Self.product(server, ["add", Self.tea.replacingOccurrences(of: "100", with: "10").replacingOccurrences(of: "\"limitPerUser\":2", with: "\"limitPerUser\":3")], in: scope)
        #expect(status == 0 && added["Response"]?["Product"]?["stock"] == 10, "\(added.jsonText)")
        let (duplicate, refused) = try await Self.product(server, ["add", Self.tea], in: scope)
        #expect(refused == 1 && duplicate["Response"]?["Error"]?["Code"] == "FailedOperation.ProductExists", "\(duplicate.jsonText)")
        try await fan.waitForEvent("onProductChanged") { ($0["products"]?.arrayValue ?? []).contains { $0["itemNumber"] == 1 } }

        fan.send("buy 1 2 first")
        let bought = try await fan.waitForEvent("onBuyResult")
        let paidId = try #require(bought["orderId"]?.stringValue, "\(bought.jsonText)")
        #expect(bought["code"] == 0 && bought["stockLeft"] == 8 && bought["quantity"] == 2 && bought["requestId"] == "first")
        fan.send("buy 1 2 first")
        #expect(try await fan.waitForEvent("onBuyResult", count: 2)["orderId"] == .string(paidId), "a retry returns the same order")
        for (line, code) in [("buy 1 2", ErrorCode.purchaseLimitExceeded), ("buy 9", ErrorCode.productNotFound)] {
            let count = fan.events(named: "onBuyResult").count + 1
            fan.send(line)
            #expect(try await fan.waitForEvent("onBuyResult", count: count)["code"]?.intValue == code, "\(line)")
        }
        // A quantity out of range is refused where the request is read, as any bad field is.
        for line in ["buy 1 0", "buy 1 500"] {
            let count = fan.events(named: "onError").count + 1
            fan.send(line)
            let error = try await fan.waitForEvent("onError", count: count)
            #expect(error["errCode"]?.intValue == ErrorCode.invalidPurchase && error["errMsg"]?.stringValue?.contains("quantity") == true, "\(line): \(error.jsonText)")
        }
        let sold = try await host.waitForEvent("onProductSold")
        #expect(sold["sales"] == [["itemNumber": 1, "quantity": 2, "stockLeft": 8]], "\(sold.jsonText)")
        try await other.waitForEvent("onProductChanged") { $0["products"]?.arrayValue?.first?["stock"] == 8 }

        // The shop's backend confirms the first order and cancels the second; the stock comes back.
        other.send("buy 1 3")
        let cancelledId = try #require(try await other.waitForEvent("onBuyResult")["orderId"]?.stringValue)
        let confirmed = try await Self.admin(server, "ConfirmOrder", ["OrderId": .string(paidId)], in: scope)
        #expect(confirmed["Order"]?["state"] == "paid" && confirmed["Order"]?["amount"] == "398.00", "\(confirmed.jsonText)")
        #expect(try await Self.admin(server, "ConfirmOrder", ["OrderId": .string(paidId)], in: scope)["Error"]?["Code"] == "FailedOperation.OrderNotReserved")
        #expect(try await Self.admin(server, "CancelOrder", ["OrderId": "nope"], in: scope)["Error"]?["Code"] == "FailedOperation.OrderNotExist")
        #expect(try await Self.admin(server, "CancelOrder", ["OrderId": .string(cancelledId)], in: scope)["Order"]?["state"] == "cancelled")
        try await other.waitForEvent("onProductChanged") { $0["products"]?.arrayValue?.first?["stock"] == 8 && $0["products"]?.arrayValue?.first?["version"]?.intValue ?? 0 >= 4 }

        // Unpaid, a reservation expires after 3 s and its stock goes back.
        fan.send("buy 1 1 second")
        let expiringId = try #require(try await fan.waitForEvent("onBuyResult") { $0["requestId"] == "second" }["orderId"]?.stringValue)
        try await other.waitForEvent("onProductChanged", timeout: .seconds(8)) { $0["products"]?.arrayValue?.first?["stock"] == 8 && $0["products"]?.arrayValue?.first?["version"]?.intValue ?? 0 >= 6 }
        let expired = try await Self.admin(server, "DescribeOrders", ["RoomId": "room1", "State": "expired"], in: scope)
        #expect(expired["Orders"]?.arrayValue?.map { $0["orderId"] } == [.string(expiringId)] && expired["Total"] == 1, "\(expired.jsonText)")

        // Off the shelf, nothing sells.
        let (edited, _) = try await Self.product(server, ["edit", "1", #"{"onShelf":false,"version":6}"#], in: scope)
        #expect(edited["Response"]?["Product"]?["onShelf"] == false, "\(edited.jsonText)")
        let count = fan.events(named: "onBuyResult").count + 1
        fan.send("buy 1")
        #expect(try await fan.waitForEvent("onBuyResult", count: count)["code"]?.intValue == ErrorCode.productOffShelf)

        // kill -9 keeps every order as it was.
        server.process.crash()
        for client in [host, fan, other] { client.stop() }
        server = try await TestServer.start(in: scope, extra: reservation)
        let orders = try await Self.admin(server, "DescribeOrders", ["RoomId": "room1"], in: scope)
        let states = Dictionary(uniqueKeysWithValues: (orders["Orders"]?.arrayValue ?? []).compactMap { order in
            order["orderId"]?.stringValue.map { ($0, order["state"]?.stringValue ?? "") }
        })
        #expect(states == [paidId: "paid", cancelledId: "cancelled", expiringId: "expired"], "\(orders.jsonText)")
        let (list, _) = try await Self.product(server, ["list"], in: scope)
        #expect(list["Response"]?["Products"]?.arrayValue?.first?["stock"] == 8)

        // So does a graceful restart.
        server.process.stop()
        server = try await TestServer.start(in: scope, extra: reservation)
        let again = try await Self.admin(server, "DescribeOrders", ["RoomId": "room1"], in: scope)
        #expect(again["Orders"] == orders["Orders"] && again["Total"] == 3, "\(again.jsonText)")
    }
}
