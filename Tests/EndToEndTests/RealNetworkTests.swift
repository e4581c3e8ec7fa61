import Foundation
import LiveRoomAuth
import LiveRoomProtocol
import TestTools
import Testing

/// The server and its clients on different machines, as far as the network goes: the server in
/// one network namespace bound to every interface, the clients in another, joined by a veth pair.
@Suite(.serialized, .timeLimit(.minutes(3)), .requires(.networkNamespaces, .ffprobe))
struct RealNetworkTests {
    /// Starts the server in the server namespace, bound to 0.0.0.0; returns it and its URL on the veth address.
    static func startServer(_ net: VethPair, scope: ProcessScope, extra: [String] = []) async throws -> (ChildProcess, String) {
        let server = try net.start(
            in: .server, "liveroom-server",
            ["--host", "0.0.0.0", "--port", "0", "--media-port", "0", "--ice-tcp-port", "0", "--data-dir", scope.dataDirectory.path,
             "--sdk-app-id", String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--log-level", "notice"] + extra,
            scope: scope, name: "server")
        let line = try await server.waitForLine { $0.contains("listening on http://") }
        let port = try #require(line.split(separator: ":").last.map(String.init))
        return (server, "http://\(net.serverAddress):\(port)")
    }

    static func join(
        _ user: String, role: String = "audience", url: String, net: VethPair, scope: ProcessScope, extra: [String]
    ) async throws -> ChildProcess {
        let client = try net.start(
            in: .client, "liveroom",
            ["join", "--server", url, "--room", "room1", "--user-id", user, "--role", role, "--sdk-app-id", String(TestServer.sdkAppId),
             "--secret-key", TestServer.secretKey, "--json", "--verbose"] + extra,
            scope: scope, name: user)
        let enter = try await client.waitForEvent("onEnterRoom", timeout: .seconds(15))
        #expect((enter["result"]?.intValue ?? -1) >= 0, "\(user) could not enter: \(enter.jsonText)")
        return client
    }

    /// The server in one namespace, CLI anchor and audience in a second, GStreamer's webrtcbin
    /// playing over WHEP from a third (on another link of the server's).
    @Test(.requires(.gstreamerWebRTC))
    func mediaCrossesARealInterfaceFromAServerBoundToEveryInterface() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let net = try VethPair(withViewer: true)
        defer { net.remove() }
        let (server, url) = try await Self.startServer(net, scope: scope)
        // It advertises its veth addresses, not loopback.
        let deadline = ContinuousClock.now + .seconds(5)
        while !server.standardError.contains("Media candidates"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let advertised = try #require(server.standardError.split(separator: "\n").first { $0.contains("Media candidates") })
        #expect(advertised.contains(net.serverAddress) && !advertised.contains("127.0.0.1"), "\(advertised)")

        let recordings = scope.dataDirectory.appendingPathComponent("rec-veth")
        let host = try await Self.join("host", role: "anchor", url: url, net: net, scope: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        try await host.waitForEvent("onPublishAnswer", timeout: .seconds(10))
        let fan = try await Self.join("fan", url: url, net: net, scope: scope, extra: ["--record", recordings.path])
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }

        let port = try #require(URL(string: url)?.port)
        let gst = try net.start(
            in: .viewer, RequiredTool.gstreamerWebRTC.path,
            [RequiredTool.interopDirectory.appendingPathComponent("whep_play.py").path, "http://\(net.serverViewerAddress):\(port)/whep/room1/gstviewer",
             UserSig.make(
                sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "gstviewer", time: Int64(Date().timeIntervalSince1970), expire: 600
             ).encoded(), "4"],
            scope: scope, name: "webrtcbin WHEP")
        let status = try await gst.waitForExit(timeout: .seconds(30))
        let report = try JSONValue.parse(try #require(gst.output.last, "webrtcbin printed nothing: \(gst.standardError)"))
        #expect(status == 0, "webrtcbin from a third namespace: \(report.jsonText) \(gst.standardError.suffix(2000))")
        #expect((report["videoFrames"]?.intValue ?? 0) >= 20 && report["width"]?.intValue == 320, "\(report.jsonText)")

        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let streams = try probe(recordings.appendingPathComponent("host.mkv").path)
        let video = try #require(streams.first { $0.width != nil })
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frames >= 40, "about 3 s of 15 fps video crossed the veth pair: \(video)")
    }

    /// A server on two links, each client reaching only one: each must find, among the two
    /// candidates the server advertises, the one it can reach (a send toward the other has no
    /// route and would close its socket).
    @Test func clientsOnTwoLinksEachPickTheCandidateTheyCanReach() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let net = try VethPair(withViewer: true)
        defer { net.remove() }
        let (server, url) = try await Self.startServer(net, scope: scope)
        let deadline = ContinuousClock.now + .seconds(5)
        while !server.standardError.contains("Media candidates"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let advertised = try #require(server.standardError.split(separator: "\n").first { $0.contains("Media candidates") })
        #expect(advertised.contains(net.serverAddress) && advertised.contains(net.serverViewerAddress), "\(advertised)")

        let host = try await Self.join("host", role: "anchor", url: url, net: net, scope: scope, extra: ["--publish", "testsrc"] + MediaEndToEndTests.small)
        try await host.waitForEvent("onPublishAnswer", timeout: .seconds(10))
        let port = try #require(URL(string: url)?.port)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-viewer")
        let fan = try net.start(
            in: .viewer, "liveroom",
            ["join", "--server", "http://\(net.serverViewerAddress):\(port)", "--room", "room1", "--user-id", "fan", "--sdk-app-id",
             String(TestServer.sdkAppId), "--secret-key", TestServer.secretKey, "--json", "--record", recordings.path],
            scope: scope, name: "fan")
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        try await Task.sleep(for: .seconds(3))
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let video = try #require(try probe(recordings.appendingPathComponent("host.mkv").path).first { $0.width != nil })
        #expect(video.frames >= 40, "\(video)")
    }
}
