import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import PostgresTestSupport
import TestTools
import Testing

/// WHIP and WHEP in cluster mode: a request reaching a node that is not the room's home is
/// carried out by the home (never a second copy of the room), and the resource it returns
/// works through any node.
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

    static func members(_ node: TestServer, room: String, in scope: ProcessScope) async throws -> Set<String> {
        let (answer, _) = try await node.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": .string(room)], in: scope)
        return Set(answer["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue } ?? [])
    }

    @Test func whepThroughAnotherNodeIsServedByTheHomeAndItsResourceWorksEverywhere() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        let anchor = try await ClusterFaultsEndToEndTests.join(
            "anchor", room: "live", role: "anchor", servers: [n1], in: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        try await anchor.waitForEvent("onPublishAnswer")

        // A WHEP session asked of node 2 is made on node 1, the room's home.
        let offer = try GhostSessionTests.ghostOffer(direction: .recvonly)
        let played = try await Self.request("POST", n2.url + "/whep/live/watcher", token: n1.userSig("watcher"), body: offer)
        #expect(played.status == 201, "\(played)")
        let location = try #require(played.location)
        #expect(location.hasPrefix("/whep/live/watcher/n1~"), "\(location)")
        #expect(played.body.contains("a=candidate:") && played.body.contains(" \(n1.mediaPort) "), "the answer names node 1's media port: \(played.body)")
        #expect(try await Self.members(n1, room: "live", in: scope) == ["anchor", "watcher"])
        let home = ClusterEndToEndTests.home(try await ClusterEndToEndTests.clusterNodes(n2), room: "live")
        #expect(home == "n1")

        // Hostile: a wrong UserSig is refused by node 2 itself; a resource naming a node that
        // does not exist, or garbage, is not found.
        #expect(try await Self.request("POST", n2.url + "/whep/live/watcher", token: n1.userSig("someone-else"), body: offer).status == 401)
        #expect(try await Self.request("DELETE", n3.url + "/whep/live/watcher/ghost~1", token: n1.userSig("watcher")).status == 404)
        #expect(try await Self.request("DELETE", n3.url + "/whep/live/watcher/n1~x1", token: n1.userSig("watcher")).status == 404)
        #expect(try await Self.request("DELETE", n3.url + location, token: n1.userSig("intruder")).status == 401)

        // Its DELETE through node 3 ends it on node 1.
        let deleted = try await Self.request("DELETE", n3.url + location, token: n1.userSig("watcher"))
        #expect(deleted.status == 200, "\(deleted)")
        #expect(try await Self.members(n1, room: "live", in: scope) == ["anchor"])

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
        let anchor = try await ClusterFaultsEndToEndTests.join(
            "anchor", room: "live", role: "anchor", servers: [n1], in: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        try await anchor.waitForEvent("onPublishAnswer")
        let gst = try scope.startPython("whep_play.py", [n2.url + "/whep/live/gstviewer", n2.userSig("gstviewer"), "5"], name: "webrtcbin WHEP")
        #expect(try await gst.waitForExit(timeout: .seconds(20)) == 0, "webrtcbin: \(gst.output) \(gst.standardError.suffix(2000))")
        let result = try JSONValue.parse(try #require(gst.output.last))
        #expect((result["videoFrames"]?.intValue ?? 0) >= 20, "\(result.jsonText)")
        #expect(result["width"] == 320 && result["height"] == 240)
    }
}
