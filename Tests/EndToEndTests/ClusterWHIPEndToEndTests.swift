import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import PostgresTestSupport
import TestTools
import Testing

/// WHIP and WHEP in cluster mode: a request reaching a node that is not the room's home is
/// checked by the home, which keeps the seat (never a second copy of the room); a WHEP
/// viewer's media is made on the node it reached, from that node's mirror of the publisher;
/// the resource it returns works through any node.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(3)))
struct ClusterWHIPEndToEndTests {
    static func request(
        _ method: String, _ url: String, token: String?, contentType: String = "application/sdp", body: String = ""
    ) async throws -> (status: Int, location: String?, body: String) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if !body.isEmpty { request.httpBody = Data(body.utf8) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http.value(forHTTPHeaderField: "Location"), String(decoding: data, as: UTF8.self))
    }

    static func waitForMembers(_ node: TestServer, room: String, _ expected: Set<String>, in scope: ProcessScope) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        var last: Set<String> = []
        while ContinuousClock.now < deadline {
            last = try await members(node, room: room, in: scope)
            if last == expected { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TimedOut(description: "room \(room)'s members \(expected) within 5 s; last \(last)")
    }

    static func members(_ node: TestServer, room: String, in scope: ProcessScope) async throws -> Set<String> {
        let (answer, _) = try await node.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": .string(room)], in: scope)
        return Set(answer["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue } ?? [])
    }

    @Test func whepThroughAnotherNodeSeatsTheViewerOnTheHomeAndPlaysWhereItArrived() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        try await cluster.ready()
        let anchor = try await ClusterFaultsEndToEndTests.join(
            "anchor", room: "live", role: "anchor", servers: [n1], in: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        try await anchor.waitForEvent("onPublishAnswer")

        // A WHEP session asked of node 2: the seat is in the room on node 1, the media on node 2.
        let offer = try GhostSessionTests.ghostOffer(direction: .recvonly)
        let played = try await Self.request("POST", n2.url + "/whep/live/watcher", token: n1.userSig("watcher"), body: offer)
        #expect(played.status == 201, "\(played)")
        let location = try #require(played.location)
        #expect(location.hasPrefix("/whep/live/watcher/n2~"), "\(location)")
        #expect(played.body.contains("a=candidate:") && played.body.contains(" \(n2.mediaPort) "), "the answer names node 2's media port: \(played.body)")
        #expect(try await Self.members(n1, room: "live", in: scope) == ["anchor", "watcher"])
        let home = ClusterEndToEndTests.home(try await ClusterEndToEndTests.clusterNodes(n2), room: "live")
        #expect(home == "n1")
        let second = try await ClusterMediaEndToEndTests.metrics(n2)
        #expect(second["liveroom_cluster_relay_mirrors"] == 1 && second["liveroom_media_peer_connections"] == 1, "\(second.filter { $0.key.contains("relay") || $0.key.contains("peer") })")

        // Hostile: a wrong UserSig is refused by node 2 itself; a resource naming a node that
        // does not exist, or garbage, is not found; the nodes' own messages need the relay token.
        #expect(try await Self.request("POST", n2.url + "/whep/live/watcher", token: n1.userSig("someone-else"), body: offer).status == 401)
        #expect(try await Self.request("DELETE", n3.url + "/whep/live/watcher/ghost~1", token: n1.userSig("watcher")).status == 404)
        #expect(try await Self.request("DELETE", n3.url + "/whep/live/watcher/n1~x1", token: n1.userSig("watcher")).status == 404)
        #expect(try await Self.request("DELETE", n3.url + location, token: n1.userSig("intruder")).status == 401)
        let forged = try await Self.request("POST", n1.url + "/v1/cluster/message", token: nil, contentType: "application/json", body: #"{"liveroomNode":"playback","body":{"Kind":"ended","Session":"1","Node":"n2"}}"#)
        #expect(forged.status == 403)

        // Its DELETE through node 3 reaches node 2, which ends the media and tells node 1.
        let deleted = try await Self.request("DELETE", n3.url + location, token: n1.userSig("watcher"))
        #expect(deleted.status == 200, "\(deleted)")
        try await Self.waitForMembers(n1, room: "live", ["anchor"], in: scope)
        _ = try await ClusterMediaEndToEndTests.waitForMetrics(n2, timeout: .seconds(5), "no peer connection on node 2") { $0["liveroom_media_peer_connections"] == 0 }

        // The home removes a viewer (RemoveUser through node 3): node 2 ends its media.
        let again = try await Self.request("POST", n2.url + "/whep/live/watcher", token: n1.userSig("watcher"), body: offer)
        #expect(again.status == 201, "\(again)")
        _ = try await ClusterMediaEndToEndTests.waitForMetrics(n2, timeout: .seconds(5), "the viewer's peer connection") { $0["liveroom_media_peer_connections"] == 1 }
        let (removed, _) = try await n3.admin(
            "RemoveUserByStrRoomId", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "live", "UserIds": ["watcher"]], in: scope)
        #expect(removed["Response"]?["Error"] == nil, "\(removed.jsonText)")
        _ = try await ClusterMediaEndToEndTests.waitForMetrics(n2, timeout: .seconds(5), "node 2 closed the removed viewer's media") { $0["liveroom_media_peer_connections"] == 0 }
        #expect(try await Self.request("DELETE", n2.url + (again.location ?? ""), token: n1.userSig("watcher")).status == 404)

        // WHIP through node 3 publishes in the room on node 1.
        let publishOffer = try GhostSessionTests.ghostOffer(direction: .sendonly)
        let published = try await Self.request("POST", n3.url + "/whip/live/guest", token: n1.userSig("guest"), body: publishOffer)
        #expect(published.status == 201, "\(published)")
        #expect(published.location?.hasPrefix("/whip/live/guest/n1~") == true, "\(published)")
        #expect(try await Self.members(n1, room: "live", in: scope) == ["anchor", "guest"])
    }

    @Test(.requires(.gstreamerWebRTC)) func webrtcbinPlaysThroughANodeThatIsNotTheHome() async throws {
        let cluster = try await TestCluster(nodes: 2)
        defer { cluster.stop() }
        let (scope, n1, n2) = (cluster.scope, cluster.nodes[0], cluster.nodes[1])
        try await cluster.ready()
        let anchor = try await ClusterFaultsEndToEndTests.join(
            "anchor", room: "live", role: "anchor", servers: [n1], in: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        try await anchor.waitForEvent("onPublishAnswer")
        let gst = try scope.startPython("whep_play.py", [n2.url + "/whep/live/gstviewer", n2.userSig("gstviewer"), "5"], name: "webrtcbin WHEP")
        #expect(try await gst.waitForExit(timeout: .seconds(20)) == 0, "webrtcbin: \(gst.output) \(gst.standardError.suffix(2000))")
        let result = try JSONValue.parse(try #require(gst.output.last))
        #expect((result["videoFrames"]?.intValue ?? 0) >= 20, "\(result.jsonText)")
        #expect(result["width"] == 320 && result["height"] == 240)
        // Node 2 forwarded it, from its mirror of node 1's anchor.
        let second = try await ClusterMediaEndToEndTests.metrics(n2)
        #expect((second["liveroom_rtp_forwarded_total"] ?? 0) > 100, "\(second.filter { $0.key.contains("rtp") || $0.key.contains("relay") })")
    }
}
