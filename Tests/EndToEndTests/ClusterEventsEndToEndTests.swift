import Foundation
import LiveRoomProtocol
import PostgresTestSupport
import TestTools
import Testing

/// Room-wide events across nodes (issue 16): a room lives on its home node, and the viewers
/// connected to the other nodes hear its custom messages, pop-ups and stock changes through the
/// node channel (their relayed signaling), all of them, in the room's order.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(3)))
struct ClusterEventsEndToEndTests {
    @Test func viewersOnEveryNodeGetTheRoomsEventsInOrder() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])

        let anchor = try await ClusterFaultsEndToEndTests.join("anchor", room: "live", role: "anchor", servers: [n1], in: scope)
        let viewers = [
            try await ClusterFaultsEndToEndTests.join("v1", room: "live", servers: [n1], in: scope),
            try await ClusterFaultsEndToEndTests.join("v2", room: "live", servers: [n2], in: scope),
            try await ClusterFaultsEndToEndTests.join("v3", room: "live", servers: [n3], in: scope),
        ]
        for viewer in viewers { try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" } }

        // Messages, a product, a pop-up and a sale interleaved, at about 25 a second.
        anchor.send(#"product add {"itemNumber":7,"title":"Tea","price":"9.90","stock":5}"#)
        #expect(try await anchor.waitForEvent("onProductResult")["code"] == 0)
        let count = 60
        for index in 1...count {
            anchor.send("custom 1 m\(index)")
            if index == 20 { anchor.send("pop 7") }
            if index == 40 { viewers[1].send("buy 7 2 order-from-n2") }
            try await Task.sleep(for: .milliseconds(40))
        }
        let expected = (1...count).map { "m\($0)" }
        for (viewer, node) in zip(viewers, ["n1", "n2", "n3"]) {
            // (The pop-up also comes as a cmdID 1 custom message of its own: only the m… ones count here.)
            try await viewer.waitForEvent("onRecvCustomCmdMsg", count: count, timeout: .seconds(10)) { Self.isNumbered($0) }
            let received = viewer.events(named: "onRecvCustomCmdMsg").filter(Self.isNumbered).compactMap { $0["data"]?.stringValue }
            #expect(received == expected, "viewer on \(node): \(received)")
            let pop = try await viewer.waitForEvent("onPopUpChanged") { $0["itemNumber"] == 7 }
            #expect(pop["userId"] == "anchor")
            // The sale made through node 2 reaches every node as a stock change: 5 - 2 = 3.
            try await viewer.waitForEvent("onProductChanged") { event in
                (event["products"]?.arrayValue ?? []).contains { $0["itemNumber"] == 7 && $0["stock"] == 3 }
            }
            // In the room's order: the pop-up after m20 and before m21 for everyone.
            let names = viewer.events.compactMap { event -> String? in
                switch event["event"]?.stringValue {
                case "onRecvCustomCmdMsg": Self.isNumbered(event) ? event["data"]?.stringValue : nil
                case "onPopUpChanged": "pop"
                default: nil
                }
            }
            let at = try #require(names.firstIndex(of: "pop"), "viewer on \(node)")
            #expect(names[at - 1] == "m20" && names[at + 1] == "m21", "viewer on \(node): \(names[max(0, at - 2)...min(names.count - 1, at + 2)])")
        }
        let bought = try await viewers[1].waitForEvent("onBuyResult")
        #expect(bought["code"] == 0 && bought["stockLeft"] == 3, "\(bought.jsonText)")
    }

    /// One of the test's numbered messages (`m1`, `m2`, …).
    static func isNumbered(_ event: JSONValue) -> Bool {
        guard let data = event["data"]?.stringValue, data.hasPrefix("m") else { return false }
        return Int(data.dropFirst()) != nil
    }

    /// Admin calls reach any node (a load balancer picks one): those about a room's live state
    /// are carried out by its home, so the room's clients on every node hear of them.
    @Test func adminCallsThroughAnyNodeActOnTheRoomsHome() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        let anchor = try await ClusterFaultsEndToEndTests.join("anchor", room: "shop", role: "anchor", servers: [n1], in: scope)
        let viewer = try await ClusterFaultsEndToEndTests.join("viewer", room: "shop", servers: [n3], in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" }

        // Through node 2, which holds no room: the home's view of the room.
        let (described, _) = try await n2.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "shop"], in: scope)
        let members = described["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue } ?? []
        #expect(Set(members) == ["anchor", "viewer"], "\(described.jsonText)")

        // A product added through node 2 reaches the viewer connected to node 3.
        let (added, _) = try await n2.admin(
            "AddProduct",
            ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "shop", "Product": ["itemNumber": 4, "title": "Cup", "price": "5.00", "stock": 3]],
            in: scope)
        #expect(added["Response"]?["Error"] == nil, "\(added.jsonText)")
        try await viewer.waitForEvent("onProductChanged") { ($0["products"]?.arrayValue ?? []).contains { $0["itemNumber"] == 4 } }

        // A group message through node 2 reaches both.
        let (sent, _) = try await n2.admin(
            "v4/group_open_http_svc/send_group_msg",
            ["GroupId": "shop", "Random": 7, "MsgBody": [["MsgType": "TIMCustomElem", "MsgContent": ["Data": "from the backend"]]]], in: scope)
        #expect(sent["ActionStatus"] == "OK", "\(sent.jsonText)")
        for client in [anchor, viewer] { try await client.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "from the backend" } }

        // An order cancelled through node 2 puts its stock back, and the viewer hears it.
        viewer.send("buy 4 2 cup-order")
        let bought = try await viewer.waitForEvent("onBuyResult")
        let orderId = try #require(bought["orderId"]?.stringValue, "\(bought.jsonText)")
        let (cancelled, _) = try await n2.admin("CancelOrder", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "OrderId": .string(orderId)], in: scope)
        #expect(cancelled["Response"]?["Error"] == nil, "\(cancelled.jsonText)")
        try await viewer.waitForEvent("onProductChanged") { ($0["products"]?.arrayValue ?? []).contains { $0["itemNumber"] == 4 && $0["stock"] == 3 } }

        // Bad credentials are refused by the node asked, before anything is forwarded.
        let forged = try scope.start(
            "liveroom",
            ["admin", "--server", n2.url, "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", "wrong", "DismissRoomByStrRoomId", #"{"RoomId":"shop"}"#],
            name: "forged admin")
        _ = try await forged.waitForExit()
        #expect(forged.output.joined().contains("AuthFailure"), "\(forged.output)")
        // The home node gone, a call about its room says so.
        n1.process.crash()
        let (orphan, _) = try await n2.admin("DismissRoomByStrRoomId", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "shop"], in: scope)
        let code = orphan["Response"]?["Error"]?["Code"]?.stringValue
        #expect(code == "FailedOperation.HomeNodeUnreachable" || code == "FailedOperation.RoomNotExist", "\(orphan.jsonText)")
    }
}
