import Foundation
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomSFU
import PostgresTestSupport
import TestTools
import Testing

/// The node relay with a real PostgreSQL server and three nodes: an anchor publishing on node
/// 1, viewers entering through nodes 2 and 3 get their media from the node they connected to,
/// which mirrors the anchor once however many viewers it serves.
@Suite(.serialized, .requires(.postgreSQL), .timeLimit(.minutes(3)))
struct ClusterMediaEndToEndTests {
    /// `GET /metrics` of `server`, by series.
    static func metrics(_ server: TestServer) async throws -> [String: Double] {
        let (data, _) = try await URLSession.shared.data(from: try #require(URL(string: server.url + "/metrics")))
        var values: [String: Double] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }

    /// Polls `server`'s metrics until `condition` holds; the last values.
    static func waitForMetrics(_ server: TestServer, timeout: Duration, _ what: String, _ condition: ([String: Double]) -> Bool) async throws -> [String: Double] {
        let deadline = ContinuousClock.now + timeout
        var last: [String: Double] = [:]
        while ContinuousClock.now < deadline {
            last = try await metrics(server)
            if condition(last) { return last }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TimedOut(description: "metrics: \(what) within \(timeout); last: \(last.filter { $0.key.contains("relay") || $0.key.contains("peer") })")
    }

    /// The UDP ports of the host candidates in an SDP.
    static func candidatePorts(_ sdp: String) -> Set<UInt16> {
        Set(sdp.split(whereSeparator: \.isNewline).compactMap { line -> UInt16? in
            let fields = line.split(separator: " ")
            guard line.hasPrefix("a=candidate:"), fields.count > 7, fields[2].lowercased() == "udp" else { return nil }
            return UInt16(fields[5])
        })
    }

    /// Sends `datagrams` from a loopback UDP socket of the test's own (no node's) to `port`.
    static func sendUDP(_ datagrams: [[UInt8]], to port: UInt16) throws {
        let (fd, _) = try bindLoopback(type: Int32(SOCK_DGRAM.rawValue))
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        for var datagram in datagrams {
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, &datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(sent == datagram.count)
        }
    }

    /// With one media loop per node, and with two (the node relay's messages then reach every loop).
    @Test(.requires(.ffprobe), arguments: [1, 2]) func viewersOnOtherNodesGetTheirMediaThereFromOneCopyPerNode(loops: Int) async throws {
        let database = try PostgresTestServer()
        try database.start()
        defer { database.stop() }
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let extra = ["--media-loops", String(loops)]
        let n1 = try await ClusterEndToEndTests.startNode("n1", database: database.url, in: scope, extra: extra)
        let n2 = try await ClusterEndToEndTests.startNode("n2", database: database.url, in: scope, extra: extra)
        let n3 = try await ClusterEndToEndTests.startNode("n3", database: database.url, in: scope, extra: extra)
        _ = try await ClusterEndToEndTests.waitForCluster(n1, timeout: .seconds(5), "three live nodes") { answer in
            ["n1", "n2", "n3"].allSatisfy { ClusterEndToEndTests.node(answer, $0)?["Alive"] == true }
        }
        // Every node has seen the others alive (the node relay takes requests only from live nodes).
        try await Task.sleep(for: .seconds(1.5))

        let anchor = try await n1.enteredWithMedia("anchor", room: "R", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        try await anchor.waitForEvent("onPublishAnswer")
        #expect(ClusterEndToEndTests.home(try await ClusterEndToEndTests.clusterNodes(n1), room: "R") == "n1")

        // Node relay datagrams from the test, not a node: a forged one is refused, an authentic
        // mirror request from an address no live node has is dropped, a replay refused; all counted.
        var sealer = NodeRelaySealer(secret: NodeRelayDatagram.secret(fromSecretKey: TestServer.secretKey))
        let request = try sealer.seal(.mirror(.init(roomId: "R", userId: "anchor")))
        var forged = request
        forged[forged.count - 1] ^= 1
        try Self.sendUDP([forged, request, request, [NodeRelayDatagram.marker]], to: n1.mediaPort)
        let hostile = try await Self.waitForMetrics(n1, timeout: .seconds(5), "hostile datagrams counted") {
            $0["liveroom_cluster_relay_datagrams_refused_total"] == 3 && $0["liveroom_cluster_relay_unknown_source_total"] == 1
        }
        #expect(hostile["liveroom_cluster_relay_exports"] == 0)

        // Two viewers through node 2, one through node 3, each recording.
        var viewers: [(name: String, client: ChildProcess, node: TestServer)] = []
        for (name, node) in [("v2a", n2), ("v2b", n2), ("v3", n3)] {
            let recordings = scope.dataDirectory.appendingPathComponent(name).path
            viewers.append((name, try await node.enteredWithMedia(name, room: "R", media: ["--record", recordings], in: scope), node))
        }
        for viewer in viewers {
            let answer = try await viewer.client.waitForEvent("onSubscribeAnswer", timeout: .seconds(15))
            let ports = Self.candidatePorts(answer["sdp"]?.stringValue ?? "")
            // The answer names the media port of the node the viewer connected to, not the anchor's.
            #expect(ports == [viewer.node.mediaPort], "\(viewer.name): candidates \(ports), node \(viewer.node.mediaPort), anchor's node \(n1.mediaPort)")
            try await viewer.client.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "anchor" }
        }

        // Node 1 sends one copy to each of the two other nodes, not one per viewer, and serves
        // only the anchor's own peer connection.
        let home = try await Self.waitForMetrics(n1, timeout: .seconds(5), "two copies") { $0["liveroom_cluster_relay_exports"] == 2 }
        #expect(home["liveroom_media_peer_connections"] == 1, "\(home)")
        #expect((home["liveroom_cluster_relay_packets_sent_total"] ?? 0) > 0)
        let second = try await Self.metrics(n2)
        #expect(second["liveroom_cluster_relay_mirrors"] == 1 && second["liveroom_cluster_relay_mirror_viewers"] == 2, "\(second)")
        #expect(second["liveroom_media_peer_connections"] == 2)
        #expect((second["liveroom_rtp_forwarded_total"] ?? 0) > 0)
        let third = try await Self.metrics(n3)
        #expect(third["liveroom_cluster_relay_mirrors"] == 1 && third["liveroom_cluster_relay_mirror_viewers"] == 1, "\(third)")
        #expect((third["liveroom_cluster_relay_datagrams_refused_total"] ?? 0) == 0)

        try await Task.sleep(for: .seconds(2))
        for viewer in viewers {
            viewer.client.send("leave")
            #expect(try await viewer.client.waitForExit(timeout: .seconds(10)) == 0)
            let streams = try probe(scope.dataDirectory.appendingPathComponent("\(viewer.name)/anchor.mkv").path)
            let video = try #require(streams.first { $0.width != nil })
            #expect(video.frames >= 30, "\(viewer.name) recorded at least 2 s of 15 fps video: \(video)")
            let audio = try #require(streams.first { $0.codec == "opus" })
            #expect(audio.frames >= 100, "\(viewer.name) recorded at least 2 s of Opus: \(audio)")
        }

        // With its viewers gone, each node stops its mirror after the grace, and node 1 its copies.
        _ = try await Self.waitForMetrics(n2, timeout: .seconds(10), "node 2's mirror stopped") { $0["liveroom_cluster_relay_mirrors"] == 0 }
        _ = try await Self.waitForMetrics(n1, timeout: .seconds(10), "node 1 sends no copy") { $0["liveroom_cluster_relay_exports"] == 0 }

        // A viewer node killed while it mirrors: node 1 stops sending it within a few seconds.
        let late = try await n3.enteredWithMedia("late", room: "R", media: [], in: scope)
        try await late.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "anchor" }
        _ = try await Self.waitForMetrics(n1, timeout: .seconds(5), "a copy to node 3") { $0["liveroom_cluster_relay_exports"] == 1 }
        n3.process.crash()
        let killed = ContinuousClock.now
        _ = try await Self.waitForMetrics(n1, timeout: .seconds(10), "no copy to the dead node") { $0["liveroom_cluster_relay_exports"] == 0 }
        #expect(ContinuousClock.now - killed < .seconds(7))
        // The anchor publishes on undisturbed.
        #expect((try await Self.metrics(n1))["liveroom_publishers"] == 1)
    }
}
