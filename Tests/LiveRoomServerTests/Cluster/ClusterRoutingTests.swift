import Foundation
import LiveRoomCluster
import LiveRoomProtocol
import Testing

@testable import LiveRoomServer

@Suite struct ClusterRoutingTests {
    @Test func theRoomOfAnEnterRoomFrame() {
        let enterString = RoomRequest.enterRoom(
            EnterRoomParams(sdkAppId: 1, userId: "u", userSig: "s", room: .string("shop1"), role: .audience)).json.jsonText
        let enterNumber = RoomRequest.enterRoom(
            EnterRoomParams(sdkAppId: 1, userId: "u", userSig: "s", room: .number(123), role: .anchor)).json.jsonText
        #expect(ClusterRouting.enteredRoomKey(enterString) == "shop1")
        #expect(ClusterRouting.enteredRoomKey(enterNumber) == "*123")
        // Anything else is answered where it arrived.
        #expect(ClusterRouting.enteredRoomKey(RoomRequest.exitRoom.json.jsonText) == nil)
        #expect(ClusterRouting.enteredRoomKey(#"{"type":"enterRoom"}"#) == nil)
        #expect(ClusterRouting.enteredRoomKey("not json") == nil)
        #expect(ClusterRouting.enteredRoomKey(String(repeating: "[", count: 10_000)) == nil)
    }

    @Test func theRelayTokenNeedsTheSecretKey() {
        let token = ClusterRouting.relayToken(secretKey: "secret-a")
        #expect(token.count == 64)
        #expect(token == ClusterRouting.relayToken(secretKey: "secret-a"))
        #expect(token != ClusterRouting.relayToken(secretKey: "secret-b"))
        #expect(ClusterRouting.isRelayToken(token, expected: token))
        #expect(!ClusterRouting.isRelayToken(ClusterRouting.relayToken(secretKey: "secret-b"), expected: token))
        #expect(!ClusterRouting.isRelayToken(String(token.dropLast()), expected: token))
        #expect(!ClusterRouting.isRelayToken(nil, expected: token))
        #expect(!ClusterRouting.isRelayToken("", expected: token))
    }

    @Test func forwardedAddressesAreShortAndPlain() {
        #expect(ClusterRouting.forwardedAddress("203.0.113.7") == "203.0.113.7")
        #expect(ClusterRouting.forwardedAddress("2001:db8:1:2::/64") == "2001:db8:1:2::/64")
        #expect(ClusterRouting.forwardedAddress(nil) == nil)
        #expect(ClusterRouting.forwardedAddress("") == nil)
        #expect(ClusterRouting.forwardedAddress("evil\nline") == nil)
        #expect(ClusterRouting.forwardedAddress(String(repeating: "1", count: 65)) == nil)
    }

    @Test func aNodesSignalingWebSocketURL() {
        #expect(ClusterRouting.signalingWebSocketURL("http://10.0.0.2:7880") == "ws://10.0.0.2:7880/ws")
        #expect(ClusterRouting.signalingWebSocketURL("https://node2.example/") == "wss://node2.example/ws")
        #expect(ClusterRouting.signalingWebSocketURL("ftp://x") == nil)
    }

    @Test func clusterSettings() {
        #expect(ServerConfiguration.clusterProblem(database: nil, nodeId: nil, nodeURL: nil) == nil)
        #expect(ServerConfiguration.clusterProblem(database: nil, nodeId: "n1", nodeURL: nil) != nil)
        #expect(ServerConfiguration.clusterProblem(database: "postgres://u@h/d", nodeId: "n1", nodeURL: "http://10.0.0.1:7880") == nil)
        #expect(ServerConfiguration.clusterProblem(database: "postgres://u@h/d", nodeId: "n 1", nodeURL: nil) != nil)
        #expect(ServerConfiguration.clusterProblem(database: "postgres://u@h/d", nodeId: nil, nodeURL: "10.0.0.1:7880") != nil)
        #expect(ServerConfiguration.clusterProblem(database: "mysql://u@h/d", nodeId: nil, nodeURL: nil) != nil)
    }

    @Test func theNodeIdIsKeptInTheDataDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-node-id-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try LiveRoomServer.keptNodeId(dataDirectory: directory)
        #expect(ClusterRules.isValidNodeId(first))
        #expect(try LiveRoomServer.keptNodeId(dataDirectory: directory) == first)
        // A damaged file is replaced by a new id.
        try "bad id\n".write(toFile: directory + "/node-id", atomically: true, encoding: .utf8)
        let replaced = try LiveRoomServer.keptNodeId(dataDirectory: directory)
        #expect(ClusterRules.isValidNodeId(replaced))
    }

    @Test func theNodesAnswerListsNodesAliveOrDeadAndRoomHomes() {
        let view = ClusterView(
            nodes: [
                ClusterNode(
                    registration: NodeRegistration(nodeId: "n1", signalingURL: "http://a:1", mediaAddresses: ["10.0.0.1:7882"]),
                    load: NodeLoad(rooms: 2, peers: 5, tasks: 1, cpuPercent: 12.345), homedRooms: 2, lastHeartbeatMs: 9_500),
                ClusterNode(
                    registration: NodeRegistration(nodeId: "n2", signalingURL: "http://b:1", mediaAddresses: []),
                    load: NodeLoad(), homedRooms: 0, lastHeartbeatMs: 1_000),
            ], nowMs: 10_000)
        let body = ClusterAdmin.body(view: view, homes: [RoomHome(roomKey: "*7", nodeId: "n1"), RoomHome(roomKey: "shop", nodeId: "n1")], nodeId: "n1")
        let nodes = body["Nodes"]?.arrayValue ?? []
        #expect(nodes.count == 2)
        #expect(nodes[0]["Alive"] == true)
        #expect(nodes[0]["Load"]?["CpuPercent"] == .number(12.3))
        #expect(nodes[0]["MillisecondsSinceHeartbeat"] == 500)
        #expect(nodes[1]["Alive"] == false)
        #expect(body["Rooms"]?.arrayValue?[0]["RoomId"] == 7)
        #expect(body["Rooms"]?.arrayValue?[1]["RoomId"] == "shop")
        #expect(body["NodeId"] == "n1")
    }
}
