import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HummingbirdWSClient
import LiveRoomAuth
import LiveRoomProtocol
import PostgresTestSupport
import Logging
import TestTools
import Testing

/// A real PostgreSQL server and nodes `n1`…`nK` on loopback ports in one process scope, as the
/// cluster tests start them; ``stop()`` (in a `defer`) stops the nodes, then the database.
final class TestCluster {
    let database: PostgresTestServer
    let scope: ProcessScope
    private(set) var nodes: [TestServer] = []

    /// `extra` goes to every node, `extraFor[i]` to node `n<i>` alone.
    init(nodes count: Int, extra: [String] = [], extraFor: [Int: [String]] = [:]) async throws {
        database = try PostgresTestServer()
        try database.start()
        scope = try ProcessScope()
        do {
            for index in 1...count {
                nodes.append(try await ClusterEndToEndTests.startNode("n\(index)", database: database.url, in: scope, extra: extra + (extraFor[index] ?? [])))
            }
        } catch {
            stop()
            throw error
        }
    }

    func stop() {
        scope.stopAll()
        database.stop()
    }

    /// Waits until every node reports every node alive, and a little more: each node learns the
    /// others' media addresses (the only ones its node relay takes mirror requests from) after
    /// its next heartbeat.
    func ready() async throws {
        let ids = nodes.indices.map { "n\($0 + 1)" }
        _ = try await ClusterEndToEndTests.waitForCluster(nodes[0], timeout: .seconds(5), "\(ids.count) live nodes") { answer in
            ids.allSatisfy { ClusterEndToEndTests.node(answer, $0)?["Alive"] == true }
        }
        try await Task.sleep(for: .seconds(1.5))
    }
}

/// Cluster mode with a real PostgreSQL server and three `liveroom-server` nodes on loopback
/// ports: registration and liveness, room placement, the signaling relay between nodes, a
/// killed node, and the CLI's failover between `--server` URLs.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(3)))
struct ClusterEndToEndTests {
    /// Starts node `id` on the cluster database, with its own data directory.
    static func startNode(_ id: String, database: String, in scope: ProcessScope, extra: [String] = []) async throws -> TestServer {
        let dataDirectory = scope.dataDirectory.appendingPathComponent(id).path
        let process = try scope.start(
            "liveroom-server",
            ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", dataDirectory,
             "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--log-level", "warning",
             "--cluster-db", database, "--node-id", id] + extra,
            name: id)
        let line = try await process.waitForLine(timeout: .seconds(20)) { $0.contains("LiveRoom server listening on ") }
        let url = String(line[line.range(of: "listening on ")!.upperBound...]).trimmingCharacters(in: .whitespaces)
        let mediaLine = try await process.waitForLine { $0.hasPrefix("Media UDP port: ") }
        return TestServer(process: process, url: url, mediaPort: UInt16(mediaLine.dropFirst("Media UDP port: ".count))!, iceTCPPort: 0)
    }

    /// `GET /v1/cluster/nodes` on `server` with the administrator's UserSig: the `Response`.
    static func clusterNodes(_ server: TestServer) async throws -> JSONValue {
        let sig = UserSig.make(
            sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "administrator", time: Int64(Date().timeIntervalSince1970),
            expire: 600
        ).encoded()
        let escaped = sig.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? sig
        let url = try #require(URL(string: "\(server.url)/v1/cluster/nodes?sdkappid=\(TestServer.sdkAppId)&identifier=administrator&usersig=\(escaped)"))
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return try #require(JSONValue.parse(String(decoding: data, as: UTF8.self), message: "answer")["Response"])
    }

    /// Polls `GET /v1/cluster/nodes` until `condition` holds; the last answer.
    static func waitForCluster(
        _ server: TestServer, timeout: Duration, _ what: String, _ condition: (JSONValue) -> Bool
    ) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        var last: JSONValue = .null
        while ContinuousClock.now < deadline {
            last = try await clusterNodes(server)
            if condition(last) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TimedOut(description: "cluster: \(what) within \(timeout); last answer: \(last.jsonText)")
    }

    static func node(_ answer: JSONValue, _ id: String) -> JSONValue? {
        answer["Nodes"]?.arrayValue?.first { $0["NodeId"] == .string(id) }
    }

    static func home(_ answer: JSONValue, room: String) -> String? {
        answer["Rooms"]?.arrayValue?.first { $0["RoomId"] == .string(room) }?["HomeNode"]?.stringValue
    }

    @Test func threeNodesPlaceRoomsRelaySignalingAndSurviveAKilledNode() async throws {
        let cluster = try await TestCluster(nodes: 3)
        defer { cluster.stop() }
        let (scope, n1, n2, n3) = (cluster.scope, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])

        // Every node registers and is alive, as any node reports.
        let registered = try await Self.waitForCluster(n3, timeout: .seconds(5), "three live nodes") { answer in
            ["n1", "n2", "n3"].allSatisfy { Self.node(answer, $0)?["Alive"] == true }
        }
        #expect(registered["NodeId"] == "n3")
        #expect(Self.node(registered, "n2")?["SignalingUrl"] == .string(n2.url))
        #expect(Self.node(registered, "n1")?["MediaAddresses"]?.arrayValue?.first == .string("127.0.0.1:\(n1.mediaPort)"))

        // The anchor enters R through node 1: R's home is node 1.
        let anchor = try await n1.entered("anchor", room: "R", role: "anchor", in: scope)
        let placed = try await Self.clusterNodes(n2)
        #expect(Self.home(placed, room: "R") == "n1")

        // A viewer entering R through node 2 is relayed to node 1 and is in the anchor's room.
        let viewer = try await n2.entered("viewer", room: "R", in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" }
        anchor.send("custom 1 hello across nodes")
        try await viewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "hello across nodes" && $0["userId"] == "anchor" }
        viewer.send("custom 2 hello back")
        try await anchor.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "hello back" }
        #expect(Self.home(try await Self.clusterNodes(n1), room: "R") == "n1")
        // The viewer is a member of the room on node 1; node 2 holds no room R of its own.
        let (onHome, _) = try await n1.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "R"], in: scope)
        let members = onHome["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue } ?? []
        #expect(Set(members) == ["anchor", "viewer"], "\(onHome.jsonText)")
        #expect(try await ClusterMediaEndToEndTests.metrics(n2)["liveroom_rooms"] == 0)
        // Asked of node 2, DescribeRoom is answered by the room's home.
        let (onRelay, _) = try await n2.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "R"], in: scope)
        #expect(onRelay["Response"]?["UserList"] == onHome["Response"]?["UserList"], "\(onRelay.jsonText)")

        // The CLI with a dead URL first enters through the second.
        let deadURL = "http://127.0.0.1:\(try PostgresTestServer.freeLoopbackPort())"
        let failover = try scope.start(
            "liveroom",
            ["join", "--server", "\(deadURL),\(n3.url)", "--room", "R", "--user-id", "failover", "--sdk-app-id", String(TestServer.sdkAppId),
             "--secret-key", TestServer.secretKey, "--json", "--verbose"],
            name: "failover")
        #expect((try await failover.waitForEvent("onEnterRoom", timeout: .seconds(15))["result"]?.intValue ?? -1) >= 0)
        try await failover.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "anchor" }

        // A room that empties is released. A new room goes to the least loaded live node: n1
        // homes R, so n2 or n3, whichever reported less CPU (a band of 10 %) in its last heartbeat.
        let lone = try await n2.entered("lone", room: "E", role: "anchor", in: scope)
        let homeOfE = Self.home(try await Self.clusterNodes(n2), room: "E")
        #expect(homeOfE == "n2" || homeOfE == "n3", "room E's home: \(homeOfE ?? "none")")
        lone.send("leave")
        _ = try await Self.waitForCluster(n2, timeout: .seconds(5), "room E released") { Self.home($0, room: "E") == nil }

        // An anchor entering through the busier node (node 1 homes R) opens its room on one of
        // the others, and its signaling is relayed there: a viewer entering through that home
        // hears it.
        let elsewhere = try await n1.entered("elsewhere", room: "F", role: "anchor", in: scope)
        let homeOfF = try #require(Self.home(try await Self.clusterNodes(n1), room: "F"))
        #expect(homeOfF == "n2" || homeOfF == "n3", "room F, entered through n1 which homes R, lives on \(homeOfF)")
        let fViewer = try await (homeOfF == "n2" ? n2 : n3).entered("f-viewer", room: "F", in: scope)
        try await fViewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "elsewhere" }
        elsewhere.send("custom 1 from the busier node")
        try await fViewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "from the busier node" }
        #expect(try await ClusterMediaEndToEndTests.metrics(n1)["liveroom_rooms"] == 1, "node 1 holds R only")
        elsewhere.send("leave")
        fViewer.send("leave")

        // Node 1 is killed: the others report it dead within 5 s.
        let killed = ContinuousClock.now
        n1.process.crash()
        _ = try await Self.waitForCluster(n2, timeout: .seconds(5), "n1 reported dead") { answer in
            Self.node(answer, "n1")?["Alive"] == false && Self.node(answer, "n2")?["Alive"] == true
        }
        #expect(ContinuousClock.now - killed < .seconds(5))

        // The next enter of R (its home was node 1) is served by a live node, which claims it.
        let newcomer = try await n3.entered("newcomer", room: "R", role: "anchor", in: scope)
        let reclaimed = try await Self.clusterNodes(n3)
        let newHome = try #require(Self.home(reclaimed, room: "R"))
        #expect(["n2", "n3"].contains(newHome))
        // The viewer that was relayed to node 1 lost its connection and reconnected through node 2
        // into the room's new home.
        try await viewer.waitForEvent("onConnectionLost", timeout: .seconds(5))
        try await viewer.waitForEvent("onConnectionRecovery", timeout: .seconds(10))
        try await viewer.waitForEvent("onRemoteUserEnterRoom", timeout: .seconds(10)) { $0["userId"] == "newcomer" }
        // A later viewer through the other node reaches the same room.
        let late = try await n2.entered("late", room: "R", in: scope)
        try await late.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "newcomer" }
        newcomer.send("custom 1 after the failover")
        try await late.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "after the failover" }
    }

    /// Sends `frames` on a raw WebSocket with `headers`; what comes back until the server closes
    /// or `settle` passes.
    static func exchange(
        _ url: String, headers: HTTPFields, frames: [String], settle: Duration
    ) async throws -> (events: [JSONValue], close: WebSocketCloseFrame?) {
        let received = Locked<[JSONValue]>([])
        let close = try await WebSocketClient.connect(
            url: url.replacingOccurrences(of: "http://", with: "ws://") + "/ws",
            configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers), logger: Logger(label: "raw-client")
        ) { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message, let value = try? JSONValue.parse(text) { received.withLock { $0.append(value) } }
                    }
                }
                for frame in frames { try await outbound.write(.text(frame)) }
                try await Task.sleep(for: settle)
                group.cancelAll()
            }
        }
        return (received.withLock { $0 }, close)
    }

    /// A cluster node answers hand-made connections as a single node does: forged relay headers
    /// without the token change nothing, a connection that never enters is told -7013 and closed,
    /// a first frame that does not enter a room is answered where it arrived.
    @Test func hostileConnectionsToAClusterNode() async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let node = try await Self.startNode("solo", database: database.url, in: scope, extra: ["--login-timeout", "1"])
        var forged = HTTPFields()
        forged[HTTPField.Name("x-liveroom-relay-token")!] = String(repeating: "0", count: 64)
        forged[HTTPField.Name("x-liveroom-client-address")!] = "203.0.113.9"
        let (silent, silentClose) = try await Self.exchange(node.url, headers: forged, frames: [], settle: .seconds(3))
        #expect(silentClose?.closeCode == .policyViolation, "close frame: \(String(describing: silentClose))")
        #expect(silent.compactMap { $0["errCode"]?.intValue } == [ErrorCode.loginTimeout], "\(silent)")

        let (wrong, wrongClose) = try await Self.exchange(node.url, headers: forged, frames: [#"{"type":"requestMic"}"#], settle: .seconds(3))
        #expect(wrongClose?.closeCode == .policyViolation)
        #expect(wrong.compactMap { $0["errCode"]?.intValue } == [ErrorCode.notInRoom, ErrorCode.loginTimeout], "\(wrong)")

        // A refused enter (a bad UserSig) is answered by the node, and the node still serves rooms.
        let badEnter = RoomRequest.enterRoom(
            EnterRoomParams(sdkAppId: TestServer.sdkAppId, userId: "mallory", userSig: "not-a-usersig", room: .string("X"), role: .anchor))
        let (refused, _) = try await Self.exchange(node.url, headers: HTTPFields(), frames: [badEnter.json.jsonText], settle: .milliseconds(800))
        #expect((refused.first { $0["event"] == "onEnterRoom" }?["result"]?.intValue ?? 0) < 0, "\(refused)")
        try await node.checkServesANormalRoom(in: scope)
    }

    @Test func badOrUnreachableClusterDatabasesStopTheServerWithAClearError() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let port = try PostgresTestServer.freeLoopbackPort()
        let cases: [(String, Int32, String)] = [
            ("mysql://u@h/d", 64, "postgres://"),
            ("postgres://u@127.0.0.1:\(port)/d?sslmode=disable", 3, "cannot use the cluster database postgres://u@127.0.0.1:\(port)/d"),
        ]
        // Without --cluster-db the server runs alone and says so.
        let alone = try await TestServer.start(in: scope)
        #expect(try await Self.clusterNodes(alone)["Error"]?["Code"] == "FailedOperation.ClusterModeOff")
        alone.process.stop()
        for (url, status, message) in cases {
            let server = try scope.start(
                "liveroom-server",
                ["--host", "127.0.0.1", "--port", "0", "--media-port", "0", "--no-ice-tcp", "--data-dir", scope.dataDirectory.path, "--cluster-db", url],
                name: "server \(url)")
            let exit = try await server.waitForExit(timeout: .seconds(30))
            #expect(exit == status, "\(url): exit \(String(describing: exit)); stderr: \(server.standardError)")
            #expect(server.standardError.contains(message), "\(url): \(server.standardError)")
            #expect(!server.output.contains { $0.contains("listening on") })
        }
    }
}
