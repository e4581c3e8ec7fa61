import Foundation
import Testing

/// What a server says when it cannot start.
@Suite(.serialized, .timeLimit(.minutes(2))) struct StartUpTests {
    /// A second server given a port the first one holds stops with a line naming the setting and
    /// the address, for each of its three ports (the media port too, which the server's loops
    /// share among themselves and so must not share with another process).
    @Test func aPortInUseIsNamedWithItsSettingAndAddress() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let first = try await TestServer.start(in: scope, extra: ["--media-loops", "2"])
        let httpPort = try #require(URLComponents(string: first.url)?.port)
        for (ports, message) in [
            (["--port", String(httpPort), "--media-port", "0", "--ice-tcp-port", "0"], "cannot listen for HTTP and WebSocket on 127.0.0.1:\(httpPort) (--port, LIVEROOM_PORT): Address already in use"),
            (["--port", "0", "--media-port", String(first.mediaPort), "--ice-tcp-port", "0"], "cannot listen for media UDP on 127.0.0.1:\(first.mediaPort) (--media-port, LIVEROOM_MEDIA_PORT): Address already in use"),
            (["--port", "0", "--media-port", "0", "--ice-tcp-port", String(first.iceTCPPort)], "cannot listen for ICE-TCP on 127.0.0.1:\(first.iceTCPPort) (--ice-tcp-port"),
        ] {
            let second = try scope.start(
                "liveroom-server", ["--host", "127.0.0.1", "--media-loops", "2", "--data-dir", scope.dataDirectory.appendingPathComponent("second").path] + ports,
                name: "second")
            let status = try await second.waitForExit()
            #expect(status != nil && status != 0, "\(ports) was accepted")
            #expect(second.standardError.contains(message), "\(ports): \(second.standardError.suffix(2000))")
        }
        await first.checkAlive("after the second servers stopped")
    }
}
