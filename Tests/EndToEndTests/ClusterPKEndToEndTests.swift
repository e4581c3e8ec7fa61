import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import PostgresTestSupport
import TestTools
import Testing

/// Cross-room PK between rooms homed on different nodes, with a real PostgreSQL server and
/// three nodes: room A lives on node 1, room B on node 2; a viewer of A enters through node 3.
/// Both audiences see and record the other room's anchor, mutes and the end of the link cross
/// over, a dead node's links end, and node-to-node PK messages from outside are refused.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(4)))
struct ClusterPKEndToEndTests {
    /// The relay token the nodes of the tests' application carry (HMAC-SHA256 of a fixed label).
    static var relayToken: String {
        HMAC<SHA256>.authenticationCode(for: Data("liveroom-node-relay-v1".utf8), using: SymmetricKey(data: Data(TestServer.secretKey.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    /// `POST /v1/cluster/pk` to `server` with `body` (and the token, when given): status and answer.
    static func postPK(_ server: TestServer, _ body: String, token: String?) async throws -> (Int, JSONValue?) {
        var request = URLRequest(url: try #require(URL(string: server.url + "/v1/cluster/pk")))
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        if let token { request.setValue(token, forHTTPHeaderField: "x-liveroom-relay-token") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, try? JSONValue.parse(String(decoding: data, as: UTF8.self)))
    }

    @Test(.requires(.ffprobe)) func anchorsOfRoomsOnTwoNodesBattleAndBothAudiencesSeeBoth() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        _ = try await ClusterEndToEndTests.waitForCluster(n1, timeout: .seconds(5), "three live nodes") { answer in
            ["n1", "n2", "n3"].allSatisfy { ClusterEndToEndTests.node(answer, $0)?["Alive"] == true }
        }
        // Every node has seen the others alive (the node relay takes mirror requests only from live nodes).
        try await Task.sleep(for: .seconds(1.5))

        let hostA = try await PKEndToEndTests.anchor("hostA", room: "pkA", color: "FF0000", n1, in: scope)
        let hostB = try await PKEndToEndTests.anchor("hostB", room: "pkB", color: "0000FF", n2, in: scope)
        let homes = try await ClusterEndToEndTests.clusterNodes(n3)
        #expect(ClusterEndToEndTests.home(homes, room: "pkA") == "n1" && ClusterEndToEndTests.home(homes, room: "pkB") == "n2", "\(homes.jsonText)")
        let recordings = scope.dataDirectory.appendingPathComponent("rec-cluster-pk")
        // fanA watches room A through node 3 (relayed to node 1, media from node 3); fanB is on node 2.
        let fanA = try n3.join("fanA", room: "pkA", in: scope, extra: ["--record", recordings.appendingPathComponent("fanA").path])
        let fanB = try n2.join("fanB", room: "pkB", in: scope, extra: ["--record", recordings.appendingPathComponent("fanB").path])
        try await fanA.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostA" }
        try await fanB.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostB" }

        // Node-to-node PK messages: without the token refused, malformed refused with a code,
        // from a node that is not alive refused, and none of them touches the rooms.
        let link = #"{"Kind":"link","Node":"n9","Caller":{"RoomKey":"evil","UserId":"mallory"},"Callee":{"RoomKey":"pkB","UserId":"hostB"},"State":{"Publishing":null,"AudioMuted":false,"VideoMuted":false}}"#
        let (forbidden, _) = try await Self.postPK(n2, link, token: nil)
        #expect(forbidden == 403)
        let (wrongToken, _) = try await Self.postPK(n2, link, token: String(repeating: "0", count: 64))
        #expect(wrongToken == 403)
        for bad in ["{", #"{"Kind":"link"}"#, #"{"Kind":"state","Node":"n1","Caller":{"RoomKey":"pkA","UserId":"hostA"}}"#,
                    #"{"Kind":"unlink","Node":"n1","Caller":{"RoomKey":"pkA","UserId":"\u0000"},"Callee":{"RoomKey":"pkB","UserId":"hostB"}}"#]
        {
            let (status, answer) = try await Self.postPK(n2, bad, token: Self.relayToken)
            #expect(status == 400 && answer?["ErrorCode"]?.intValue == ErrorCode.pkInvalidParameter, "\(bad): \(status) \(answer?.jsonText ?? "")")
        }
        let (status, answer) = try await Self.postPK(n2, link, token: Self.relayToken)
        #expect(status == 200 && answer?["ErrorCode"]?.intValue == ErrorCode.pkInvalidParameter, "a dead node's link: \(answer?.jsonText ?? "")")
        let (oversized, _) = try await Self.postPK(n2, String(repeating: " ", count: 20 << 10) + link, token: Self.relayToken)
        #expect(oversized == 413 || oversized == 400, "an oversized body: \(oversized)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(fanB.events(named: "onRemoteUserEnterRoom").allSatisfy { $0["userId"] == "hostB" })

        // hostA (node 1) links with hostB (node 2).
        hostA.send("connect-room pkB hostB")
        let linked = try await hostA.waitForEvent("onConnectOtherRoom", timeout: .seconds(10))
        #expect(linked["errCode"] == 0 && linked["userId"] == "hostB", "\(linked.jsonText)")
        try await hostB.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "hostA" }
        // Both audiences see and receive the other room's anchor: fanB from node 2's mirror of
        // node 1's hostA, fanA from node 3's mirror of node 2's hostB.
        try await fanB.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostA" }
        try await fanA.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "hostB" }
        let third = try await ClusterMediaEndToEndTests.waitForMetrics(n3, timeout: .seconds(5), "node 3 mirrors hostA and hostB") {
            $0["liveroom_cluster_relay_mirrors"] == 2
        }
        #expect(third["liveroom_media_peer_connections"] == 2, "fanA's two subscriptions: \(third)")
        // A newcomer to room B through node 1 (relayed to node 2) sees the PK anchor too.
        let late = try await n1.entered("late", room: "pkB", in: scope)
        try await late.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "hostA" }
        late.send("leave")
        #expect(try await late.waitForExit(timeout: .seconds(10)) == 0)

        // DescribeRoom through any node lists the link.
        let (described, _) = try await n3.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "pkB"], in: scope)
        let links = described["Response"]?["PKLinks"]?.arrayValue ?? []
        #expect(links.count == 1 && links.first?["UserId"] == "hostB" && links.first?["RemoteRoomId"] == "pkA", "\(described.jsonText)")

        // hostA's video mute reaches room B on node 2, and its unmute.
        hostA.send("mute-video on")
        try await fanB.waitForEvent("onUserVideoAvailable", timeout: .seconds(5)) { $0["userId"] == "hostA" && $0["available"] == false }
        hostA.send("mute-video off")
        try await fanB.waitForEvent("onUserVideoAvailable", count: 2, timeout: .seconds(5)) { $0["userId"] == "hostA" && $0["available"] == true }

        // Let both record a while, then hostB ends the link from node 2: room A hears hostB go.
        try await Task.sleep(for: .seconds(2))
        hostB.send("disconnect-room")
        #expect(try await hostB.waitForEvent("onDisconnectOtherRoom")["errCode"] == 0)
        try await fanA.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(5)) { $0["userId"] == "hostB" }
        try await hostA.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(5)) { $0["userId"] == "hostB" }
        try await fanB.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(5)) { $0["userId"] == "hostA" }
        for fan in [fanA, fanB] {
            fan.send("leave")
            #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        }
        for (fan, remote) in [("fanA", "hostB"), ("fanB", "hostA")] {
            let streams = try probe(recordings.appendingPathComponent("\(fan)/\(remote).mkv").path)
            let video = try #require(streams.first { $0.width != nil }, "\(fan) recorded \(remote)'s video")
            #expect(video.frames >= 30, "\(fan) recorded at least 2 s of \(remote)'s 15 fps video across nodes: \(video)")
        }

        // Linked again, then node 2 dies: room A's link ends within a few seconds (its
        // heartbeats stop; node 1 sees it dead and ends the links with it).
        hostA.send("connect-room pkB hostB")
        #expect(try await hostA.waitForEvent("onConnectOtherRoom", count: 2, timeout: .seconds(10))["errCode"] == 0)
        try await hostA.waitForEvent("onRemoteUserEnterRoom", count: 2) { $0["userId"] == "hostB" }
        #expect(hostA.events(named: "onRemoteUserLeaveRoom").count == 1)
        n2.process.crash()
        let killed = ContinuousClock.now
        try await hostA.waitForEvent("onRemoteUserLeaveRoom", count: 2, timeout: .seconds(15)) { $0["userId"] == "hostB" }
        let ended = ContinuousClock.now - killed
        #expect(ended < .seconds(12), "the link ended \(ended) after the kill")
        print("cluster PK: the link with a killed node ended \(ended) after the kill")
        // A room that no live node holds cannot be linked with.
        hostA.send("connect-room pkB hostB")
        let refused = try await hostA.waitForEvent("onConnectOtherRoom", count: 3, timeout: .seconds(10))
        #expect(refused["errCode"]?.intValue == ErrorCode.pkRoomNotFound, "\(refused.jsonText)")
    }
}
