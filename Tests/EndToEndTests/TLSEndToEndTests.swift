import Foundation
import TestTools
import Testing

/// Signaling, HTTP and WHIP/WHEP over TLS (`--tls-cert`, `--tls-key`), as a browser page on a
/// real domain needs them; media keeps its own DTLS.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TLSEndToEndTests {
    /// A self-signed certificate for localhost (and 127.0.0.1) and its key, made with openssl.
    static func certificate(in directory: URL) throws -> (certificate: String, key: String) {
        let (key, certificate) = (directory.appendingPathComponent("key.pem").path, directory.appendingPathComponent("cert.pem").path)
        let make = try Process.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            arguments: ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate,
                        "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        make.waitUntilExit()
        try #require(make.terminationStatus == 0)
        return (certificate, key)
    }

    /// Runs a program to its end: its status, and its standard output and error together.
    static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    static func curl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try run("/usr/bin/curl", ["-sS", "--max-time", "5"] + arguments)
    }

    @Test func httpsAndWssCarryEverythingAndTheCLITrustsOnlyWhatItIsTold() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let (certificate, key) = try Self.certificate(in: scope.dataDirectory)
        let started = try await TestServer.start(in: scope, extra: ["--tls-cert", certificate, "--tls-key", key])
        #expect(started.url.hasPrefix("https://127.0.0.1:"), "\(started.url)")
        // A TLS client names the server (SNI), which an IP address cannot be: reach it by name.
        let server = TestServer(
            process: started.process, url: started.url.replacingOccurrences(of: "127.0.0.1", with: "localhost"), mediaPort: started.mediaPort, iceTCPPort: started.iceTCPPort)

        // HTTP over TLS with the certificate trusted; plain HTTP to the same port gets nothing.
        let healthy = try Self.curl(["--cacert", certificate, server.url + "/healthz"])
        #expect(healthy.status == 0 && healthy.output == "ok", "\(healthy)")
        #expect(try Self.curl(["--cacert", certificate, server.url.replacingOccurrences(of: "https://", with: "http://") + "/healthz"]).status != 0)

        // The CLI over wss: with --ca-file it enters and its media flows; without it, it refuses the certificate.
        let media = ["--publish", "color:FF0000"] + MediaEndToEndTests.small
        let host = try server.join("host", role: "anchor", in: scope, extra: media + ["--ca-file", certificate])
        #expect((try await host.waitForEvent("onEnterRoom")["result"]?.intValue ?? -1) > 0)
        let fan = try server.join("fan", in: scope, extra: ["--ca-file", certificate])
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        let stranger = try server.join("stranger", in: scope)
        #expect(try await stranger.waitForExit(timeout: .seconds(10)) == 3, "an untrusted certificate is refused")
        #expect(stranger.standardError.contains("cannot reach"), "\(stranger.standardError)")

        // WHEP over https plays the host.
        let offer = try GhostSessionTests.ghostOffer(direction: .recvonly)
        let whep = try Self.curl([
            "--cacert", certificate, "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/sdp",
            "-H", "Authorization: Bearer \(server.userSig("viewer"))", "--data-binary", offer, server.url + "/whep/room1/viewer",
        ])
        #expect(whep.output == "201", "\(whep)")
    }

    /// Runs `openssl s_client` for one protocol version against `port`, without the system's
    /// OpenSSL settings (which would stop the client itself from offering TLS 1.0 or 1.1).
    static func handshake(_ version: String, port: Int) throws -> (status: Int32, output: String) {
        try run(
            "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", version, "-cipher", "DEFAULT@SECLEVEL=0"],
            environment: ["OPENSSL_CONF": "/dev/null", "PATH": "/usr/bin:/bin"])
    }

    /// TLS 1.0 and 1.1 are refused, 1.2 and 1.3 taken; handshakes that never finish are closed
    /// at the request-head deadline, and one address holds at most its cap of them.
    @Test func oldTLSIsRefusedAndUnfinishedHandshakesAreClosedInTime() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let (certificate, key) = try Self.certificate(in: scope.dataDirectory)
        let (cap, perSource, timeout) = (80, 100, 3)
        let server = try await TestServer.start(
            in: scope,
            extra: ["--tls-cert", certificate, "--tls-key", key, "--request-head-timeout", String(timeout), "--max-connections-per-address", String(cap)])
        let port = try #require(URL(string: server.url)?.port)
        for (version, taken) in [("-tls1", false), ("-tls1_1", false), ("-tls1_2", true), ("-tls1_3", true)] {
            let (status, output) = try Self.handshake(version, port: port)
            if taken {
                #expect(status == 0 && output.contains("Verify return code") && !output.contains("alert"), "\(version) is taken: \(output.suffix(600))")
            } else {
                #expect(status != 0 && output.contains("alert protocol version"), "\(version) is refused by the server: \(output.suffix(600))")
            }
        }
        let baseline = try #require(server.process.openDescriptors)
        let sources = ["127.0.0.2", "127.0.0.3"]
        let flood = try scope.start(
            "/usr/bin/python3",
            [HostileTransportTests.script("half_open.py"), "127.0.0.1", String(port), String(perSource), "20", "tls", "1.5"] + sources, name: "half-open tls")
        _ = try await flood.waitForLine(timeout: .seconds(20)) { $0 == "done" }
        let last = try #require(flood.output.last { $0.hasPrefix("state ") }).split(separator: " ")
        #expect(last[1] == "0" && last[2] == "\(sources.count * (perSource - cap))" && last[4] == "\(sources.count * cap)", "\(last)")
        if let low = Double(last[5]), let high = Double(last[6]) {
            #expect(low >= Double(timeout) - 0.5 && high <= Double(timeout) + 3, "closed \(timeout) s after opening: between \(low) and \(high) s")
        } else {
            Issue.record("no handshake was closed at the deadline: \(last)")
        }
        try await Task.sleep(for: .seconds(1))
        let after = try #require(server.process.openDescriptors)
        #expect(after <= baseline + 10, "the descriptors came back: \(baseline) before, \(after) after")
        let metrics = try Self.curl(["--cacert", certificate, server.url.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/metrics"])
        #expect(metrics.status == 0 && metrics.output.contains("liveroom_rooms"), "/metrics answers after the unfinished handshakes: \(metrics.output.prefix(300))")
        try await server.checkStopsCleanly()
    }
}
