import Foundation
import LiveRoomProtocol
import RTMPTestSupport
import TestTools
import Testing

/// Publish tasks cannot reach loopback or private addresses unless the operator allows them,
/// and `rtmps://` checks certificates.
@Suite(.serialized, .timeLimit(.minutes(2)), .requires(.nginxRTMP))
struct EgressTests {
    static let refusal = "destination not allowed by the server's egress policy"

    @Test func cdnURLsAtInternalAddressesGetOneRefusalWhetherOrNotAPortListensWithRSSUnder200MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope, allowLoopbackEgress: false)
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")

        // Literal addresses are refused at start, with one message, listening or not.
        let closed = try NginxRTMPServer.freeLoopbackPort()
        let urls = [nginx.url(stream: "open"), "rtmp://127.0.0.1:\(closed)/live/closed", "rtmp://10.0.0.1/live/x", "rtmp://[::1]:1935/live/x",
                    "rtmp://169.254.169.254/live/x"]
        for (index, url) in urls.enumerated() {
            host.send("start-publish \(PublishTaskEndToEndTests.startRequest(url: url))")
            let answer = try await host.waitForEvent("onStartPublishMediaStream", count: index + 1)
            #expect(answer["code"] == .number(Double(ErrorCode.egressRefused)), "\(url): \(answer.jsonText)")
            #expect(answer["message"]?.stringValue?.hasSuffix(Self.refusal) == true, "\(answer.jsonText)")
        }
        // A host name is checked when the task connects: refused at once, no retries.
        let named = "rtmp://localhost:\(nginx.port)/live/named"
        host.send("start-publish \(PublishTaskEndToEndTests.startRequest(url: named))")
        let started = try await host.waitForEvent("onStartPublishMediaStream", count: urls.count + 1)
        #expect(started["code"] == 0, "\(started.jsonText)")
        let failed = try await host.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 4 }
        #expect(failed["code"] == .number(Double(ErrorCode.egressRefused)) && failed["message"] == .string(Self.refusal), "\(failed.jsonText)")
        let states = host.events(named: "onCdnStreamStateChanged").compactMap { $0["status"]?.intValue }
        #expect(states == [1, 4], "connecting, then refused without retries: \(states)")
        #expect(server.residentMiB < 200, "\(server.residentMiB) MiB")
        try await server.checkServesANormalRoom(in: scope)
    }

    /// A TLS endpoint with a self-signed certificate (`openssl s_server`) prints what it
    /// receives after the handshake. Without verification the client goes on to send RTMP's
    /// handshake (1537 bytes); with it, the client checks the certificate and hangs up first.
    @Test func rtmpsVerifiesCertificatesUnlessTheOperatorTurnsItOff() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rtmps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (key, certificate) = (directory.appendingPathComponent("key.pem").path, directory.appendingPathComponent("cert.pem").path)
        let make = try Process.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            arguments: ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate,
                        "-days", "1", "-subj", "/CN=localhost"])
        make.waitUntilExit()
        try #require(make.terminationStatus == 0)

        for insecure in [false, true] {
            let scope = try ProcessScope()
            defer { scope.stopAll() }
            let port = try NginxRTMPServer.freeLoopbackPort()
            // s_server stops at the end of its standard input: the test keeps it open.
            let tls = try scope.start("/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key], name: "s_server")
            _ = try await tls.waitForLine { $0.contains("ACCEPT") }
            let server = try await TestServer.start(in: scope, extra: insecure ? ["--rtmps-insecure"] : [])
            let host = try await server.enteredWithMedia(
                "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
            try await host.waitForEvent("onPublishAnswer")
            host.send("start-publish \(PublishTaskEndToEndTests.startRequest(url: "rtmps://127.0.0.1:\(port)/live/x"))")
            #expect(try await host.waitForEvent("onStartPublishMediaStream")["code"] == 0)
            // Either way the RTMP handshake fails (s_server is no RTMP server); the TLS one only without verification.
            try await host.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 3 }
            try await Task.sleep(for: .milliseconds(300))
            let lines = tls.output
            let afterHandshake = lines.firstIndex { $0.contains("Secure Renegotiation") }.map { lines[($0 + 1)...].reduce(0) { $0 + $1.utf8.count + 1 } } ?? 0
            #expect((afterHandshake > 1000) == insecure,
                    insecure ? "--rtmps-insecure goes on to RTMP" : "the self-signed certificate is refused before any RTMP byte: \(afterHandshake) bytes")
        }
    }
}
