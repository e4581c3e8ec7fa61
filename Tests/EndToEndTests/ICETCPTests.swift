import Foundation
import LiveRoomAuth
import LiveRoomProtocol
import TestTools
import Testing

/// Media over ICE-TCP (RFC 6544, RFC 4571 framing) for networks that drop UDP, and ICE restarts
/// that move a running session onto TCP when UDP stops getting through.
@Suite(.serialized, .timeLimit(.minutes(3)), .requires(.ffprobe))
struct ICETCPTests {
    /// The `transport` of a client's `onMediaConnected` for `connection` (publish or subscribe).
    static func connectedTransport(_ client: ChildProcess, _ connection: String, timeout: Duration = .seconds(15)) async throws -> String? {
        try await client.waitForEvent("onMediaConnected", timeout: timeout) { $0["connection"] == .string(connection) }["transport"]?.stringValue
    }

    static func videoFrames(_ path: String) throws -> Int {
        try #require(try probe(path).first { $0.width != nil }).frames
    }

    @Test func clientsForcedOntoICETCPPublishAndRecord() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-tcp")
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "testsrc", "--ice-transport", "tcp"] + MediaEndToEndTests.small, in: scope)
        #expect(try await Self.connectedTransport(host, "publish") == "tcp")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path, "--ice-transport", "tcp"], in: scope)
        #expect(try await Self.connectedTransport(fan, "subscribe") == "tcp")
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        try await Task.sleep(for: .seconds(3))
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let frames = try Self.videoFrames(recordings.appendingPathComponent("host.mkv").path)
        #expect(frames >= 40, "about 3 s of 15 fps video over ICE-TCP: \(frames) frames")
    }

    @Test func anyPrefersUDPWhenItWorks() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        #expect(try await Self.connectedTransport(host, "publish") == "udp")
    }

    /// A firewall in the clients' namespace drops all UDP: the CLIs (`--ice-transport any`, the
    /// default) and GStreamer's webrtcbin over WHEP all connect over ICE-TCP, and media flows.
    @Test(.requires(.networkNamespaces, .nftables, .gstreamerWebRTC))
    func withUDPDroppedEveryoneConnectsOverICETCP() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let net = try VethPair()
        defer { net.remove() }
        try net.dropUDP(in: .client)
        let (_, url) = try await RealNetworkTests.startServer(net, scope: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-udp-dropped")
        let host = try await RealNetworkTests.join(
            "host", role: "anchor", url: url, net: net, scope: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        #expect(try await Self.connectedTransport(host, "publish") == "tcp")
        let fan = try await RealNetworkTests.join("fan", url: url, net: net, scope: scope, extra: ["--record", recordings.path])
        #expect(try await Self.connectedTransport(fan, "subscribe") == "tcp")
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }

        let gst = try net.start(
            in: .client, RequiredTool.gstreamerWebRTC.path,
            [RequiredTool.interopDirectory.appendingPathComponent("whep_play.py").path, url + "/whep/room1/gstviewer",
             UserSig.make(
                sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "gstviewer", time: Int64(Date().timeIntervalSince1970),
                expire: 600
             ).encoded(), "6"],
            scope: scope, name: "webrtcbin WHEP")
        let status = try await gst.waitForExit(timeout: .seconds(30))
        let report = try JSONValue.parse(try #require(gst.output.last, "webrtcbin printed nothing: \(gst.standardError)"))
        #expect(status == 0, "webrtcbin over ICE-TCP: \(report.jsonText) \(gst.standardError.suffix(2000))")
        #expect((report["videoFrames"]?.intValue ?? 0) >= 30, "\(report.jsonText)")

        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let frames = try Self.videoFrames(recordings.appendingPathComponent("host.mkv").path)
        #expect(frames >= 60, "about 6 s of 15 fps video over ICE-TCP: \(frames) frames")
    }

    /// UDP stops getting through in the middle of a session (a firewall rule appears, as on a
    /// network change): each CLI's consent checks go unanswered, it restarts ICE, finds the
    /// ICE-TCP candidate, and media resumes on the same peer connections; nobody leaves.
    @Test(.requires(.networkNamespaces, .nftables))
    func udpBlockedMidSessionRestartsICEOntoTCP() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let net = try VethPair()
        defer { net.remove() }
        let (_, url) = try await RealNetworkTests.startServer(net, scope: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-restart")
        let host = try await RealNetworkTests.join(
            "host", role: "anchor", url: url, net: net, scope: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        #expect(try await Self.connectedTransport(host, "publish") == "udp")
        let fan = try await RealNetworkTests.join("fan", url: url, net: net, scope: scope, extra: ["--record", recordings.path])
        #expect(try await Self.connectedTransport(fan, "subscribe") == "udp")
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        try await Task.sleep(for: .seconds(2))

        try net.dropUDP(in: .client)
        let blocked = ContinuousClock.now
        try await host.waitForEvent("onIceRestart", timeout: .seconds(15)) { $0["connection"] == "publish" }
        try await fan.waitForEvent("onIceRestart", timeout: .seconds(15)) { $0["connection"] == "subscribe" }
        try await host.waitForEvent("onMediaConnected", timeout: .seconds(15)) { $0["connection"] == "publish" && $0["transport"] == "tcp" }
        try await fan.waitForEvent("onMediaConnected", timeout: .seconds(15)) { $0["connection"] == "subscribe" && $0["transport"] == "tcp" }
        let recovered = ContinuousClock.now - blocked
        // Media flows again: the recording grows by at least 3 s of frames after the switch.
        try await Task.sleep(for: .seconds(4))
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        #expect(fan.events(named: "onRemoteUserLeaveRoom").isEmpty, "the anchor kept its seat")
        #expect(recovered < .seconds(20), "both connections were on ICE-TCP \(recovered) after UDP was blocked")
        let frames = try Self.videoFrames(recordings.appendingPathComponent("host.mkv").path)
        // About 2 s before the block, 4 s after the switch at 15 fps (the gap is not counted).
        #expect(frames >= 80, "frames before and after the ICE restart: \(frames)")
    }

    /// Connections that never carry a valid check: over the per-address cap they are closed at
    /// once, an oversized frame closes its connection at once, and the rest are closed when the
    /// 10 s to bind runs out. Media over ICE-TCP still works for everyone else.
    @Test func hostileICETCPConnectionsAreBoundedAndClosed() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--max-connections-per-address", "20"])
        let flood = try scope.start(
            "/usr/bin/python3",
            [URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Hostile/ice_tcp_flood.py").path,
             "127.0.0.1", String(server.iceTCPPort), "60", "16"],
            name: "ICE-TCP flood")
        #expect(try await flood.waitForExit(timeout: .seconds(30)) == 0)
        let report = try JSONValue.parse(try #require(flood.output.last))
        let closedAt = report["closedAt"]?.arrayValue?.map(\.doubleValue) ?? []
        #expect(report["opened"]?.intValue == 60, "\(report.jsonText)")
        #expect(closedAt.allSatisfy { $0 != nil }, "every connection was closed: \(report.jsonText)")
        let times = closedAt.compactMap { $0 }
        #expect(times.filter { $0 < 2 }.count >= 40, "40 over the cap of 20, and the oversized frame, go at once: \(times)")
        #expect((times.max() ?? 99) < 14, "the rest go when their 10 s to bind run out: \(times)")
        #expect(server.residentMiB < 150, "RSS \(server.residentMiB) MiB")

        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "testsrc", "--ice-transport", "tcp"] + MediaEndToEndTests.small, in: scope)
        #expect(try await Self.connectedTransport(host, "publish") == "tcp")
    }
}
