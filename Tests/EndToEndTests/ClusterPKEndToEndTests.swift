import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import PostgresTestSupport
import RTMPTestSupport
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

    /// A PK message with `body` (`POST /v1/cluster/message`) to `server` (with the token, when given): status and answer.
    static func postPK(_ server: TestServer, _ body: String, token: String?) async throws -> (Int, JSONValue?) {
        try await postNodeMessage(server, #"{"liveroomNode":"pk","body":"# + body + "}", token: token)
    }

    /// `POST /v1/cluster/message` to `server` with `text` (and the token, when given): status and answer.
    static func postNodeMessage(_ server: TestServer, _ text: String, token: String?) async throws -> (Int, JSONValue?) {
        var request = URLRequest(url: try #require(URL(string: server.url + "/v1/cluster/message")))
        request.httpMethod = "POST"
        request.httpBody = Data(text.utf8)
        if let token { request.setValue(token, forHTTPHeaderField: "x-liveroom-relay-token") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, try? JSONValue.parse(String(decoding: data, as: UTF8.self)))
    }

    @Test(.requires(.ffprobe)) func anchorsOfRoomsOnTwoNodesBattleAndBothAudiencesSeeBoth() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        try await cluster.ready()

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
        for text in [link, #"{"liveroomNode": "pk","body":"# + link + "}", #"{"liveroomNode":"vote","body":{}}"#, String(repeating: " ", count: 300 << 10)] {
            let (status, answer) = try await Self.postNodeMessage(n2, text, token: Self.relayToken)
            #expect((status == 400 && answer?["ErrorCode"]?.intValue == ErrorCode.invalidParameter) || status == 413, "not a node message: \(status) \(answer?.jsonText ?? "")")
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(fanB.events(named: "onRemoteUserEnterRoom").allSatisfy { $0["userId"] == "hostB" })

        // hostA (node 1) links with hostB (node 2): refused on node 2 until hostB allows room pkA.
        hostA.send("connect-room pkB hostB")
        let stranger = try await hostA.waitForEvent("onConnectOtherRoom", timeout: .seconds(10))
        #expect(stranger["errCode"]?.intValue == ErrorCode.pkConsentRequired, "\(stranger.jsonText)")
        try await hostB.allowPK("pkA")
        hostA.send("connect-room pkB hostB")
        let linked = try await hostA.waitForEvent("onConnectOtherRoom", count: 2, timeout: .seconds(10))
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

        // A sales battle run by node 1 (hostA's room) is heard in room B on node 2, and scored
        // from both rooms' orders in the shared database.
        hostA.send(#"product add {"itemNumber":1,"title":"Tea","price":"10.00","stock":50}"#)
        hostB.send(#"product add {"itemNumber":1,"title":"Pot","price":"50.00","stock":50}"#)
        #expect(try await hostA.waitForEvent("onProductResult")["code"] == 0)
        #expect(try await hostB.waitForEvent("onProductResult")["code"] == 0)
        // A pop-up sent as SEI only rides hostA's video: to its own viewer through node 3's
        // mirror, and to room B's viewer through node 2's.
        hostA.send("pop 1 sei")
        let popped = try #require(try await hostA.waitForEvent("onPopProduct")["data"]?.stringValue)
        #expect(popped.contains("item_popup_msg"))
        for fan in [fanA, fanB] {
            try await fan.waitForEvent("onRecvSEIMsg", timeout: .seconds(10)) { $0["userId"] == "hostA" && $0["message"] == .string(popped) }
        }
        hostA.send("pk-battle 5")
        let started = try await fanB.waitForEvent("onPKBattleStarted", timeout: .seconds(5))
        #expect(started["battle"]?["battleId"]?.stringValue != nil, "\(started.jsonText)")
        fanA.send("buy 1 2")
        fanB.send("buy 1 1")
        #expect(try await fanA.waitForEvent("onBuyResult")["code"] == 0)
        #expect(try await fanB.waitForEvent("onBuyResult")["code"] == 0)
        try await fanB.waitForEvent("onPKBattleScore", timeout: .seconds(6)) { ($0["scores"]?.arrayValue ?? []).contains { $0["units"] == 2 } }
        for fan in [fanA, fanB] {
            let ended = try await fan.waitForEvent("onPKBattleEnded", timeout: .seconds(10))
            #expect(ended["battle"]?["winnerRoomId"] == "pkB", "the larger amount wins: \(ended.jsonText)")
        }

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

        // The handshake across nodes: hostB (node 2) asks hostA (node 1), who rejects, then
        // accepts; both hear the outcome and the rooms see each other's anchor again.
        hostB.send("pk-request pkA hostA")
        let asked = try await hostA.waitForEvent("onPKRequest", timeout: .seconds(10))
        #expect(asked["userId"] == "hostB" && asked["strRoomId"] == "pkB", "\(asked.jsonText)")
        hostA.send("pk-reject pkB hostB")
        #expect(try await hostB.waitForEvent("onConnectOtherRoom", timeout: .seconds(10))["errCode"]?.intValue == ErrorCode.pkRejected)
        hostB.send("pk-request pkA hostA")
        try await hostA.waitForEvent("onPKRequest", count: 2, timeout: .seconds(10))
        hostA.send("pk-accept pkB hostB")
        let accepted = try await hostB.waitForEvent("onConnectOtherRoom", count: 2, timeout: .seconds(10))
        #expect(accepted["errCode"] == 0 && accepted["userId"] == "hostA", "\(accepted.jsonText)")
        let linkedAgain = try await hostA.waitForEvent("onConnectOtherRoom", count: 3, timeout: .seconds(10))
        #expect(linkedAgain["errCode"] == 0 && linkedAgain["userId"] == "hostB", "\(linkedAgain.jsonText)")
        try await hostA.waitForEvent("onRemoteUserEnterRoom", count: 2) { $0["userId"] == "hostB" }

        // Then node 2 dies: room A's link ends within a few seconds (its heartbeats stop; node 1
        // sees it dead and ends the links with it).
        #expect(hostA.events(named: "onRemoteUserLeaveRoom").count == 1)
        n2.process.crash()
        let killed = ContinuousClock.now
        try await hostA.waitForEvent("onRemoteUserLeaveRoom", count: 2, timeout: .seconds(15)) { $0["userId"] == "hostB" }
        let ended = ContinuousClock.now - killed
        #expect(ended < .seconds(12), "the link ended \(ended) after the kill")
        print("cluster PK: the link with a killed node ended \(ended) after the kill")
        // A room that no live node holds cannot be linked with.
        hostA.send("connect-room pkB hostB")
        let refused = try await hostA.waitForEvent("onConnectOtherRoom", count: 4, timeout: .seconds(10))
        #expect(refused["errCode"]?.intValue == ErrorCode.pkRoomNotFound, "\(refused.jsonText)")
    }

    /// A mix on node 3 of anchors on nodes 1 and 2: room C (node 3) is linked with room A
    /// (node 1, red) and room B (node 2, blue); its anchor mixes red on the left and blue on the
    /// right to nginx-rtmp. Node 3 mirrors each once and its task taps the mirrors.
    @Test(.requires(.nginxRTMP, .ffmpeg, .ffprobe)) func aMixOnNodeThreeTakesTheAnchorsOfNodesOneAndTwo() async throws {
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let cluster = try await TestCluster(nodes: 3, extra: ["--egress-allow", "127.0.0.1"])
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        try await cluster.ready()

        let red = try await PKEndToEndTests.anchor("red", room: "mixA", color: "FF0000", n1, in: scope)
        let blue = try await PKEndToEndTests.anchor("blue", room: "mixB", color: "0000FF", n2, in: scope)
        let host = try await n3.entered("host", room: "mixC", role: "anchor", in: scope)
        let homes = try await ClusterEndToEndTests.clusterNodes(n1)
        #expect(["mixA", "mixB", "mixC"].map { ClusterEndToEndTests.home(homes, room: $0) } == ["n1", "n2", "n3"], "\(homes.jsonText)")
        try await red.allowPK("mixC")
        try await blue.allowPK("mixC")
        for (room, user) in [("mixA", "red"), ("mixB", "blue")] {
            host.send("connect-room \(room) \(user)")
            let linked = try await host.waitForEvent("onConnectOtherRoom", timeout: .seconds(10)) { $0["userId"] == .string(user) }
            #expect(linked["errCode"] == 0, "\(linked.jsonText)")
            try await host.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == .string(user) && $0["available"] == true }
        }

        let url = nginx.url(stream: "mixC")
        host.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(url)"}]},"#
                + #""encoderParam":{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":800},"#
                + #""mixingConfig":{"backgroundColor":65280,"videoLayoutList":["#
                + #"{"fixedVideoUser":{"userId":"red","strRoomId":"mixA"},"rect":{"left":0,"top":0,"right":320,"bottom":360},"zOrder":0},"#
                + #"{"fixedVideoUser":{"userId":"blue","strRoomId":"mixB"},"rect":{"left":320,"top":0,"right":640,"bottom":360},"zOrder":1}]}}"#)
        let started = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(started["code"] == 0, "\(started.jsonText)")
        try await host.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        try await Task.sleep(for: .seconds(2))

        let frame = try decodeFrame(url, width: 640, height: 360)
        let left = PKMixEndToEndTests.share(of: PKMixEndToEndTests.red, in: frame, columns: 0..<320)
        let right = PKMixEndToEndTests.share(of: PKMixEndToEndTests.blue, in: frame, columns: 320..<640)
        print("cluster mix on node 3: left red \(Int(left * 100))%, right blue \(Int(right * 100))%; (160,180) \(frame.color(x: 160, y: 180)) (480,180) \(frame.color(x: 480, y: 180))")
        #expect(left > 0.95 && right > 0.95, "left red \(Int(left * 100))%, right blue \(Int(right * 100))%: (160,180) \(frame.color(x: 160, y: 180)) (480,180) \(frame.color(x: 480, y: 180))")

        // The task runs on node 3, which mirrors each anchor once (the host's own viewing shares them).
        let third = try await ClusterMediaEndToEndTests.metrics(n3)
        #expect(third["liveroom_publish_tasks"] == 1 && third["liveroom_cluster_relay_mirrors"] == 2, "\(third.filter { $0.key.contains("relay") || $0.key.contains("task") })")
        for node in [n1, n2] {
            let metrics = try await ClusterMediaEndToEndTests.metrics(node)
            #expect(metrics["liveroom_publish_tasks"] == 0 && metrics["liveroom_cluster_relay_exports"] == 1, "\(metrics.filter { $0.key.contains("relay") || $0.key.contains("task") })")
        }

        // The host ends the link with room B: blue leaves the mix's right half.
        host.send("disconnect-room")
        _ = try await host.waitForEvent("onDisconnectOtherRoom")
        try await Task.sleep(for: .seconds(2))
        let after = try decodeFrame(url, width: 640, height: 360)
        let blueAfter = PKMixEndToEndTests.share(of: PKMixEndToEndTests.blue, in: after, columns: 320..<640)
        #expect(blueAfter == 0, "blue still mixed after the links ended: (480,180) \(after.color(x: 480, y: 180))")

        // The task id names its node, so StopPublishCdnStream through node 1 reaches node 3.
        let taskId = try #require(started["taskId"]?.stringValue)
        #expect(taskId.hasPrefix("n3~"), "\(taskId)")
        let (stopped, _) = try await n1.admin("StopPublishCdnStream", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "TaskId": .string(taskId)], in: scope)
        #expect(stopped["Response"]?["Error"] == nil, "\(stopped.jsonText)")
        _ = try await ClusterMediaEndToEndTests.waitForMetrics(n3, timeout: .seconds(5), "the task stopped") { $0["liveroom_publish_tasks"] == 0 }
        let (again, _) = try await n2.admin("StopPublishCdnStream", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "TaskId": .string(taskId)], in: scope)
        #expect(again["Response"]?["Error"]?["Code"] == "FailedOperation.TaskNotExist", "\(again.jsonText)")
    }

    /// A task over its room's home's encoding budget runs on another node: node 1 may encode
    /// 1 million pixels a second, a 640x360 mix at 15 fps needs 3.5; node 2 (fewest tasks) runs
    /// it from its mirror of the anchor, node 1 keeps the task (its state, its owner's answers).
    @Test(.requires(.nginxRTMP, .ffmpeg, .ffprobe)) func aTaskOverItsHomesEncodingBudgetRunsOnAnotherNode() async throws {
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let cluster = try await TestCluster(nodes: 3, extra: ["--egress-allow", "127.0.0.1"], extraFor: [1: ["--encoding-budget", "1000000"]])
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        try await cluster.ready()
        let red = try await PKEndToEndTests.anchor("red", room: "hosted", color: "FF0000", n1, in: scope)

        // Node-to-node task messages from outside are refused.
        var request = URLRequest(url: try #require(URL(string: n2.url + "/v1/cluster/message")))
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"liveroomNode":"task","body":{"kind":"start","node":"n1","taskId":"n1~x-1"}}"#.utf8)
        let (_, forbidden) = try await URLSession.shared.data(for: request)
        #expect((forbidden as? HTTPURLResponse)?.statusCode == 403)
        request.setValue(Self.relayToken, forHTTPHeaderField: "x-liveroom-relay-token")
        request.httpBody = Data("{".utf8)
        let (_, garbage) = try await URLSession.shared.data(for: request)
        #expect((garbage as? HTTPURLResponse)?.statusCode == 400)
        request.httpBody = Data(#"{"liveroomNode":"task","body":{"kind":"stop","node":"n1","taskId":"n1~nothing-1"}}"#.utf8)
        let (unknown, _) = try await URLSession.shared.data(for: request)
        #expect(try JSONValue.parse(String(decoding: unknown, as: UTF8.self))["ErrorCode"]?.intValue == ErrorCode.invalidParameter)

        let url = nginx.url(stream: "hosted")
        red.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(url)"}]},"#
                + #""encoderParam":{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":800},"#
                + #""mixingConfig":{"backgroundColor":65280,"videoLayoutList":["#
                + #"{"fixedVideoUser":{"userId":"red","strRoomId":"hosted"},"rect":{"left":0,"top":0,"right":320,"bottom":360},"zOrder":0}]}}"#)
        let started = try await red.waitForEvent("onStartPublishMediaStream", timeout: .seconds(10))
        #expect(started["code"] == 0, "\(started.jsonText)")
        let taskId = try #require(started["taskId"]?.stringValue)
        #expect(taskId.hasPrefix("n1~"), "the room's home keeps the task: \(taskId)")
        try await red.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        try await Task.sleep(for: .seconds(2))
        let frame = try decodeFrame(url, width: 640, height: 360)
        let left = PKMixEndToEndTests.share(of: PKMixEndToEndTests.red, in: frame, columns: 0..<320)
        let right = PKMixEndToEndTests.share(of: 0x00FF00, in: frame, columns: 320..<640)
        print("cluster task hosted on node 2: left red \(Int(left * 100))%, right green \(Int(right * 100))%")
        #expect(left > 0.95 && right > 0.95, "(160,180) \(frame.color(x: 160, y: 180)) (480,180) \(frame.color(x: 480, y: 180))")
        let first = try await ClusterMediaEndToEndTests.metrics(n1), second = try await ClusterMediaEndToEndTests.metrics(n2)
        #expect(first["liveroom_publish_tasks"] == 0 && second["liveroom_publish_tasks"] == 1, "runners: node 1 \(first["liveroom_publish_tasks"] ?? -1), node 2 \(second["liveroom_publish_tasks"] ?? -1)")
        #expect(second["liveroom_cluster_relay_mirrors"] == 1 && first["liveroom_cluster_relay_exports"] == 1)

        // Stopped through node 3 (forwarded to node 1, the task's home): node 2's runner stops.
        let (stopped, _) = try await n3.admin("StopPublishCdnStream", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "TaskId": .string(taskId)], in: scope)
        #expect(stopped["Response"]?["Error"] == nil, "\(stopped.jsonText)")
        _ = try await ClusterMediaEndToEndTests.waitForMetrics(n2, timeout: .seconds(5), "node 2's runner stopped") { $0["liveroom_publish_tasks"] == 0 }
        #expect(n1.process.isRunning && n2.process.isRunning)
    }
}
