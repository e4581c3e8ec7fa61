import Foundation
import LiveRoomProtocol
import PostgresTestSupport
import TestTools
import Testing

/// The faults of issue 16 with a real PostgreSQL and three nodes on loopback ports: a killed
/// viewer node, a killed home node with a publishing anchor, and PostgreSQL restarting.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(3)))
struct ClusterFaultsEndToEndTests {
    /// `liveroom join` through `servers` (comma-separated failover list).
    static func join(
        _ user: String, room: String, role: String = "audience", servers: [TestServer], in scope: ProcessScope, extra: [String] = []
    ) async throws -> ChildProcess {
        let client = try scope.start(
            "liveroom",
            ["join", "--server", servers.map(\.url).joined(separator: ","), "--room", room, "--user-id", user, "--role", role,
             "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--json", "--verbose"] + extra,
            name: user)
        let enter = try await client.waitForEvent("onEnterRoom", timeout: .seconds(15))
        #expect((enter["result"]?.intValue ?? -1) >= 0, "\(user) could not enter: \(enter.jsonText)")
        return client
    }

    static let tea = #"{"itemNumber":1,"title":"Green tea","price":"199.00","stock":100}"#

    /// The viewer's node is killed: the viewer reconnects through another node within 5 s and
    /// learns of the pop-up the anchor made while it was away.
    @Test func aKilledViewerNodeLosesNoPopUp() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])

        let anchor = try await Self.join("anchor", room: "shop", role: "anchor", servers: [n1], in: scope)
        anchor.send("product add \(Self.tea)")
        #expect(try await anchor.waitForEvent("onProductResult")["code"] == 0)
        let viewer = try await Self.join("viewer", room: "shop", servers: [n2, n3], in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" }

        let killed = ContinuousClock.now
        n2.process.crash()
        try await viewer.waitForEvent("onConnectionLost", timeout: .seconds(5))
        // The pop-up happens while the viewer is between connections.
        anchor.send("pop 1 custom")
        try await anchor.waitForEvent("onPopUpChanged") { $0["itemNumber"] == 1 }
        try await viewer.waitForEvent("onConnectionRecovery", timeout: .seconds(5))
        #expect(ContinuousClock.now - killed < .seconds(5), "the viewer took \(ContinuousClock.now - killed) to come back")
        try await viewer.waitForEvent("onPopUpChanged", timeout: .seconds(3)) { $0["itemNumber"] == 1 }
        // It came back through node 3, into the same room on node 1.
        let nodes = try await ClusterEndToEndTests.clusterNodes(n3)
        #expect(ClusterEndToEndTests.home(nodes, room: "shop") == "n1")
        anchor.send("custom 1 still here")
        try await viewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "still here" }
    }

    /// The home node of a room with a publishing anchor is killed: the anchor and the viewer
    /// reconnect through the other nodes, the room is claimed by a live node, the anchor
    /// publishes again there and the viewer gets its video again.
    @Test func aKilledHomeNodeMovesItsRoomAndThePublisherComesBack() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])

        let anchor = try await Self.join(
            "anchor", room: "live", role: "anchor", servers: [n1, n2], in: scope,
            extra: ["--publish", "testsrc", "--resolution", "320x240", "--fps", "15", "--bitrate", "300"])
        try await anchor.waitForEvent("onPublishAnswer")
        let viewer = try await Self.join("viewer", room: "live", servers: [n3, n2], in: scope)
        try await viewer.waitForEvent("onStatistics", timeout: .seconds(10)) { Self.frameRate($0, of: "anchor") > 0 }

        let killed = ContinuousClock.now
        n1.process.crash()
        try await anchor.waitForEvent("onConnectionLost", timeout: .seconds(5))
        // The anchor reconnects through node 2 once node 1 is dead (3 s) and publishes again.
        try await anchor.waitForEvent("onConnectionRecovery", timeout: .seconds(12))
        try await anchor.waitForEvent("onPublishAnswer", count: 2, timeout: .seconds(5))
        let moved = try await ClusterEndToEndTests.clusterNodes(n2)
        let home = try #require(ClusterEndToEndTests.home(moved, room: "live"))
        #expect(["n2", "n3"].contains(home))
        // The viewer lost its relay with node 1, came back, and decodes the anchor's video again.
        try await viewer.waitForEvent("onConnectionRecovery", timeout: .seconds(12))
        let seen = viewer.events(named: "onStatistics").count
        try await viewer.waitForEvent("onStatistics", count: seen + 1, timeout: .seconds(15)) { Self.frameRate($0, of: "anchor") > 0 }
        let recovered = ContinuousClock.now - killed
        #expect(recovered < .seconds(20), "video came back \(recovered) after the kill")
    }

    /// PostgreSQL stops for a few seconds and starts again: the room goes on (messages both
    /// ways, a new viewer through another node still reaches the room's home, not a copy of the
    /// room), and afterwards every node is alive and the room has the home it had. A room first
    /// entered during the outage through two nodes becomes one room once the database is back.
    @Test func postgreSQLRestartingLeavesRoomsWhereTheyAre() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (database, scope, n1, n2, n3) = (cluster.database, cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])

        let anchor = try await Self.join("anchor", room: "R", role: "anchor", servers: [n1], in: scope)
        let viewer = try await Self.join("viewer", room: "R", servers: [n2], in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" }
        // Node 3 learns R's home from its periodic read of the homes (every 5 s).
        try await Task.sleep(for: .seconds(6))

        database.stop()
        anchor.send("custom 1 during the outage")
        try await viewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "during the outage" }
        // A viewer through node 3, which cannot ask the database, goes to R's last known home.
        let late = try await Self.join("late", room: "R", servers: [n3], in: scope)
        try await late.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" }
        viewer.send("custom 2 hello from node 2")
        try await late.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "hello from node 2" }
        // A room nobody knew of yet, entered through two nodes: each serves its own copy for now.
        let q2 = try await Self.join("q2", room: "Q", role: "anchor", servers: [n2], in: scope)
        let q3 = try await Self.join("q3", room: "Q", role: "anchor", servers: [n3], in: scope)

        try database.start()
        let after = try await ClusterEndToEndTests.waitForCluster(n2, timeout: .seconds(15), "three live nodes after the restart") { answer in
            ["n1", "n2", "n3"].allSatisfy { ClusterEndToEndTests.node(answer, $0)?["Alive"] == true }
        }
        #expect(ClusterEndToEndTests.home(after, room: "R") == "n1")
        // The room never split: everyone is in the one room on node 1.
        let (onHome, _) = try await n1.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "R"], in: scope)
        let members = onHome["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue } ?? []
        #expect(Set(members) == ["anchor", "viewer", "late"], "\(onHome.jsonText)")
        // After the restart the two copies of Q become one: one node claims it, the other closes
        // its copy (-7024), and that copy's anchor reconnects into the one room.
        try await q2.waitForEvent("onRemoteUserEnterRoom", timeout: .seconds(20)) { $0["userId"] == "q3" }
        try await q3.waitForEvent("onRemoteUserEnterRoom", timeout: .seconds(5)) { $0["userId"] == "q2" }
        let moved = (q2.events(named: "onError") + q3.events(named: "onError")).filter { $0["errCode"]?.intValue == ErrorCode.roomMovedToAnotherNode }
        #expect(moved.count == 1, "one copy of Q moves: \(moved)")
        let homeOfQ = try #require(ClusterEndToEndTests.home(try await ClusterEndToEndTests.clusterNodes(n1), room: "Q"))
        #expect(["n2", "n3"].contains(homeOfQ))
        // No node but the home holds a copy of R or of Q.
        for (node, id) in [(n2, "n2"), (n3, "n3")] {
            #expect(try await ClusterMediaEndToEndTests.metrics(node)["liveroom_rooms"] == (homeOfQ == id ? 1 : 0), "rooms open on \(id)")
        }
        // And a new room still gets placed.
        _ = try await Self.join("fresh", room: "new", role: "anchor", servers: [n2], in: scope)
        #expect(ClusterEndToEndTests.home(try await ClusterEndToEndTests.clusterNodes(n1), room: "new") != nil)
    }

    /// The frame rate an `onStatistics` event reports for `user`'s video, 0 when none.
    static func frameRate(_ event: JSONValue, of user: String) -> Double {
        event["remoteStatistics"]?.arrayValue?.first { $0["userId"] == .string(user) }?["frameRate"]?.doubleValue ?? 0
    }
}
