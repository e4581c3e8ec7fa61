import Foundation
import LiveRoomProtocol
import Testing

/// Client text in the server's log cannot write lines of its own.
@Suite(.serialized, .timeLimit(.minutes(1))) struct LogForgingTests {
    @Test func anImageURLWithANewlineDoesNotForgeALogLine() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--log-level", "info"])
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        // The image URL carries a newline, a carriage return and a Unicode line separator, each
        // followed by what a forged line would say.
        let image = #"missing.png\n2026-01-01T00:00:00+0000 critical liveroom-server: forged\r\u2028forged"#
        host.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix","strRoomId":"room1"}},"#
                + #""encoderParam":{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":300},"#
                + #""mixingConfig":{"backgroundImage":"\#(image)","videoLayoutList":[{"fixedVideoUser":{"userId":"host","strRoomId":"room1"},"#
                + #""rect":{"left":0,"top":0,"right":320,"bottom":240},"zOrder":0}]}}"#)
        let started = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(started["code"] == 0, "\(started.jsonText)")

        let deadline = ContinuousClock.now + .seconds(10)
        while !server.process.standardError.contains("missing.png"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let log = server.process.standardError
        let lines = log.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\u{2028}" })
        let imageLines = lines.filter { $0.contains("missing.png") }
        #expect(imageLines.count == 1, "the image is named once, on one line:\n\(log)")
        #expect(imageLines.first?.contains(#"missing.png\n2026-01-01"#) == true, "the newline is shown escaped:\n\(log)")
        #expect(!lines.contains { $0.contains("forged") && !$0.contains("missing.png") }, "a line of its own:\n\(log)")
    }
}
