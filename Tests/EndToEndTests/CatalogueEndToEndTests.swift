import Foundation
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
            host.send("product add \(json)")
            let refused = try await host.waitForEvent("onProductResult", count: host.events(named: "onProductResult").count + 1)
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
        host.send("product add \(Self.tea)")
        #expect(try await host.waitForEvent("onProductResult")["code"] == 0)
        host.send("pop 1")
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
        let next = try await server.entered("next", in: scope)
        #expect(try await next.waitForEvent("onPopUpChanged")["itemNumber"] == 1)
        anchor.send("unpop")
        let ended = try await next.waitForEvent("onPopUpChanged", count: 2)
        #expect(ended["itemNumber"] == .null && ended["data"] == .null, "\(ended.jsonText)")
    }
}
