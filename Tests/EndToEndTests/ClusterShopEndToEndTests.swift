import Foundation
import LiveRoomProtocol
import LiveRoomAuth
import PostgresTestSupport
import TestTools
import Testing

/// The shop shared in PostgreSQL by three nodes: a flash sale with buyers entering through
/// every node sells exactly the stock, every node sees the same orders, and when the room's
/// home node is killed the room, entered again through another node, still has its catalogue
/// and its orders.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(4)))
struct ClusterShopEndToEndTests {
    static func orders(_ server: TestServer, in scope: ProcessScope) async throws -> JSONValue {
        try await CatalogueEndToEndTests.admin(server, "DescribeOrders", ["RoomId": "room1", "Limit": 100], in: scope)
    }

    static func products(_ server: TestServer, in scope: ProcessScope) async throws -> [JSONValue] {
        try await CatalogueEndToEndTests.admin(server, "DescribeProducts", ["RoomId": "room1"], in: scope)["Products"]?.arrayValue ?? []
    }

    @Test func aFlashSaleOnThreeNodesSellsExactlyTheStockAndOutlivesTheHomeNode() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        _ = try await ClusterEndToEndTests.waitForCluster(n1, timeout: .seconds(5), "three live nodes") { answer in
            ["n1", "n2", "n3"].allSatisfy { ClusterEndToEndTests.node(answer, $0)?["Alive"] == true }
        }

        // The anchor's room is homed on node 1; the catalogue is stocked there: 5 in stock.
        _ = try await n1.entered("host", role: "anchor", in: scope)
        let stocked = #"{"itemNumber":1,"title":"Flash tea","price":"9.90","itemUrl":"https://shop.example/1","stock":5}"#
        let (added, status) = try await CatalogueEndToEndTests.product(n1, ["add", stocked], in: scope)
        #expect(status == 0 && added["Response"]?["Product"]?["stock"] == 5, "\(added.jsonText)")

        // Two buyers through each node, each asking for one unit twice: 12 requests for 5 units.
        var buyers: [ChildProcess] = []
        for (index, node) in [n1, n2, n3, n1, n2, n3].enumerated() {
            buyers.append(try await node.entered("buyer\(index)", in: scope))
        }
        for (index, buyer) in buyers.enumerated() {
            buyer.send("buy 1 1 a\(index)")
            buyer.send("buy 1 1 b\(index)")
        }
        var codes: [Int: Int] = [:]
        for buyer in buyers {
            _ = try await buyer.waitForEvent("onBuyResult", count: 2, timeout: .seconds(20))
            for result in buyer.events(named: "onBuyResult") { codes[result["code"]?.intValue ?? -1, default: 0] += 1 }
        }
        #expect(codes == [0: 5, ErrorCode.soldOut: 7], "\(codes)")

        // Every node answers the same orders and stock: they are in PostgreSQL.
        for node in [n1, n2, n3] {
            let orders = try await Self.orders(node, in: scope)
            #expect(orders["Total"] == 5, "\(orders.jsonText)")
            #expect(try await Self.products(node, in: scope).first?["stock"] == 0)
        }
        let sold = Set(try await Self.orders(n2, in: scope)["Orders"]?.arrayValue?.compactMap { $0["orderId"]?.stringValue } ?? [])
        #expect(sold.count == 5)

        // The home node is killed; once it is dead, the room entered through node 3 is claimed
        // by a live node and still has its catalogue and its orders.
        n1.process.crash()
        _ = try await ClusterEndToEndTests.waitForCluster(n2, timeout: .seconds(6), "n1 reported dead") { answer in
            ClusterEndToEndTests.node(answer, "n1")?["Alive"] == false
        }
        let newcomer = try await n3.entered("host2", role: "anchor", in: scope)
        newcomer.send("product list")
        let list = try await newcomer.waitForEvent("onProductList", timeout: .seconds(10))
        let listed = list["products"]?.arrayValue ?? []
        #expect(listed.count == 1 && listed.first?["stock"] == 0 && listed.first?["title"] == "Flash tea", "\(list.jsonText)")
        let home = try #require(ClusterEndToEndTests.home(try await ClusterEndToEndTests.clusterNodes(n3), room: "room1"))
        #expect(["n2", "n3"].contains(home))
        let newHome = home == "n2" ? n2 : n3
        let kept = try await Self.orders(newHome, in: scope)
        #expect(Set(kept["Orders"]?.arrayValue?.compactMap { $0["orderId"]?.stringValue } ?? []) == sold, "\(kept.jsonText)")

        // The shop goes on from the new home: restocked, a buyer there gets the next unit.
        let (edited, editStatus) = try await CatalogueEndToEndTests.product(newHome, ["edit", "1", #"{"stock":1,"version":\#(listed.first?["version"]?.intValue ?? 0)}"#], in: scope)
        #expect(editStatus == 0, "\(edited.jsonText)")
        let late = try await newHome.entered("late", in: scope)
        late.send("buy 1 1 late")
        #expect(try await late.waitForEvent("onBuyResult", timeout: .seconds(10))["code"] == 0)
        #expect(try await Self.orders(n2, in: scope)["Total"] == 6)
    }

    /// Webhooks a node stored and could not deliver before it was killed are delivered by a
    /// live node, which adopts them once the killed node is dead.
    @Test func aKilledNodesStoredWebhooksAreDeliveredByALiveNode() async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // The receiver refuses everything until the node that stored the events is killed.
        let receiver = try WebhookReceiver(key: WebhookEndToEndTests.key, sdkAppId: TestServer.sdkAppId, mode: .fail(count: 1_000_000))
        defer { receiver.stop() }
        let hooks = ["--webhook-url", "http://127.0.0.1:\(receiver.port)/hooks", "--webhook-key", WebhookEndToEndTests.key]
        let n1 = try await ClusterEndToEndTests.startNode("n1", database: database.url, in: scope, extra: hooks)
        _ = try await ClusterEndToEndTests.startNode("n2", database: database.url, in: scope, extra: hooks)
        _ = try await n1.entered("anchor", room: "W", role: "anchor", in: scope)
        try await receiver.waitUntil(timeout: .seconds(10), "a refused attempt") { $0.snapshot.refusedWith500 >= 1 }
        #expect(receiver.eventsByRoom().rooms["W"] == nil)

        n1.process.crash()
        receiver.setMode(.ok)
        // Dead after 3 s, adopted within 2 s more, then delivered.
        try await receiver.waitUntil(timeout: .seconds(12), "room W's events from the killed node") {
            $0.eventsByRoom().rooms["W"]?.starts(with: [101, 103]) == true
        }
        #expect(receiver.snapshot.badSignatures.isEmpty)
    }

    /// PostgreSQL stopping under a running node: a purchase is answered with a code within the
    /// store's 5 s, the room keeps serving, and once the database is back the shop goes on with
    /// every order it had.
    @Test func aShopCallWhileTheDatabaseIsDownIsAnsweredWithACodeAndTheRoomGoesOn() async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let node = try await ClusterEndToEndTests.startNode("n1", database: database.url, in: scope)
        let host = try await node.entered("host", role: "anchor", in: scope)
        let stocked = #"{"itemNumber":1,"title":"Tea","price":"1.00","itemUrl":"https://shop.example/1","stock":5}"#
        let (added, status) = try await CatalogueEndToEndTests.product(node, ["add", stocked], in: scope)
        #expect(status == 0, "\(added.jsonText)")
        let fan = try await node.entered("fan", in: scope)
        fan.send("buy 1 1 first")
        #expect(try await fan.waitForEvent("onBuyResult")["code"] == 0)

        database.stop()
        let asked = ContinuousClock.now
        fan.send("buy 1 1 second")
        let refused = try await fan.waitForEvent("onBuyResult", count: 2, timeout: .seconds(10))
        let code = refused["code"]?.intValue
        #expect(code == ErrorCode.shopStoreNoAnswer || code == ErrorCode.catalogueUnavailable, "\(refused.jsonText)")
        #expect(ContinuousClock.now - asked < .seconds(7))
        // The room is served meanwhile.
        host.send("custom 1 still here")
        try await fan.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "still here" }

        try database.start()
        // The pool reconnects; the same request is carried out once.
        var sold: JSONValue = .null
        for attempt in 3...12 {
            fan.send("buy 1 1 second")
            sold = try await fan.waitForEvent("onBuyResult", count: attempt, timeout: .seconds(10))
            if sold["code"] == 0 { break }
            try await Task.sleep(for: .seconds(1))
        }
        #expect(sold["code"] == 0, "\(sold.jsonText)")
        let orders = try await Self.orders(node, in: scope)
        #expect(orders["Total"] == 2, "\(orders.jsonText)")
    }

    /// A replay's file stays on the node that recorded it: another node redirects there while it
    /// is alive, and answers 503 once it is dead.
    @Test func aReplayRecordedOnOneNodeIsServedThroughAnotherByRedirect() async throws {
        let cluster = try await TestCluster(nodes: 2)
        defer { cluster.stop() }
        let (scope, n1, n2) = (cluster.scope, cluster.nodes[0], cluster.nodes[1])
        let host = try await n1.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        host.send("product add \(ReplayEndToEndTests.tea)")
        #expect(try await host.waitForEvent("onProductResult")["code"] == 0)
        host.send("pop 1 custom")
        try await Task.sleep(for: .seconds(3))
        host.send("unpop")
        let replay = try #require(try await ReplayEndToEndTests.replays(host, count: 1).first)
        let path = try #require(replay["url"]?.stringValue)
        let sig = UserSig.make(
            sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "viewer", time: Int64(Date().timeIntervalSince1970), expire: 600
        ).encoded()

        // Through node 2 (which has no file): redirected to node 1, which serves it.
        let (status, data, response) = try await ReplayEndToEndTests.get(n2, path, userSig: sig)
        #expect(status == 200 && data.count == replay["bytes"]?.intValue, "\(status), \(data.count) bytes")
        #expect(response?.url?.absoluteString.hasPrefix(n1.url + path) == true, "\(String(describing: response?.url))")
        #expect(try await ReplayEndToEndTests.get(n2, path, userSig: nil).0 == 401, "no UserSig, no redirect")

        // Node 1 killed: node 2 says where the file is and that it is down.
        n1.process.crash()
        _ = try await ClusterEndToEndTests.waitForCluster(n2, timeout: .seconds(6), "n1 reported dead") { answer in
            ClusterEndToEndTests.node(answer, "n1")?["Alive"] == false
        }
        let (downStatus, body, _) = try await ReplayEndToEndTests.get(n2, path, userSig: sig)
        #expect(downStatus == 503 && String(decoding: body, as: UTF8.self).contains("n1"), "\(downStatus)")
    }
}
