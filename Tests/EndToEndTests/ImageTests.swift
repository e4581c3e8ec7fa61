import Foundation
import LiveRoomProtocol
import TestTools
import Testing

/// A task's images come from http(s) under the egress policy or from regular files in the
/// operator's image directory; clients cannot make the server read its own files or block on one.
@Suite(.serialized, .timeLimit(.minutes(2)), .requires(.ffmpeg))
struct ImageTests {
    @Test func aFIFOASymlinkedSecretAndServerPathsAreRefusedWithMinus7235WhileTheMixRunsWithRSSUnder200MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let images = scope.dataDirectory.deletingLastPathComponent().appendingPathComponent("images-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: images) }
        // A private file of the server's, outside the image directory, that looks like an image.
        let secret = images.deletingLastPathComponent().appendingPathComponent("secret-\(UUID().uuidString.prefix(8)).png")
        _ = try RequiredTool.ffmpeg.run(["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=white:s=64x64", "-frames:v", "1", secret.path])
        defer { try? FileManager.default.removeItem(at: secret) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        try FileManager.default.createSymbolicLink(atPath: images.appendingPathComponent("secret.png").path, withDestinationPath: secret.path)
        #expect(mkfifo(images.appendingPathComponent("fifo.png").path, 0o600) == 0)
        _ = try RequiredTool.ffmpeg.run([
            "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=green:s=64x64", "-frames:v", "1", images.appendingPathComponent("mark.png").path,
        ])

        let server = try await TestServer.start(in: scope, extra: ["--image-dir", images.path], allowLoopbackEgress: false)
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000"] + PublishTaskEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")

        let hostile = ["fifo.png", "secret.png", "../" + secret.lastPathComponent, "file://" + secret.path, secret.path, "/dev/kmsg",
                       server.url + "/logo.png", "http://169.254.169.254/latest/meta-data/x.png"]
        let watermarks = (["mark.png"] + hostile).enumerated().map { index, url in
            #"{"watermarkUrl":"\#(url)","rect":{"left":\#(index % 4 * 80),"top":\#(index / 4 * 60),"right":\#(index % 4 * 80 + 80),"bottom":\#(index / 4 * 60 + 60)},"zOrder":\#(index)}"#
        }
        let started = ContinuousClock.now
        host.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix","strRoomId":"room1"}},"#
                + #""encoderParam":{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":300},"#
                + #""mixingConfig":{"videoLayoutList":[{"fixedVideoUser":{"userId":"host","strRoomId":"room1"},"#
                + #""rect":{"left":0,"top":0,"right":320,"bottom":240},"zOrder":0}],"watermarkList":[\#(watermarks.joined(separator: ","))]}}"#)
        let answer = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(answer["code"] == 0, "\(answer.jsonText)")

        // Each hostile image is reported once to the task's owner; the good one is not.
        let deadline = ContinuousClock.now + .seconds(15)
        func refusals() -> [String] {
            host.events(named: "onError").filter { $0["errCode"] == .number(Double(ErrorCode.imageUnavailable)) }.compactMap { $0["errMsg"]?.stringValue }
        }
        while refusals().count < hostile.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let messages = refusals()
        #expect(ContinuousClock.now - started < .seconds(10), "a FIFO or device never blocks the task")
        for url in hostile {
            #expect(messages.filter { $0.contains(url.quoted) }.count == 1, "\(url) reported once: \(messages)")
        }
        #expect(!messages.contains { $0.contains(#""mark.png""#) }, "\(messages)")
        #expect(messages.allSatisfy { !$0.contains("PNG") || !$0.contains("IHDR") }, "no file content comes back")
        #expect(messages.contains { $0.contains(#""secret.png""#) && $0.contains("outside the image directory") }, "\(messages)")
        #expect(messages.contains { $0.contains(#""fifo.png""#) && $0.contains("not a regular file") }, "\(messages)")

        // The mix still runs: the room sees its robot publishing.
        try await host.waitForEvent("onRemoteUserEnterRoom", timeout: .seconds(10)) { $0["userId"] == "mix" }
        #expect(server.residentMiB < 200, "\(server.residentMiB) MiB")
        try await server.checkServesANormalRoom(in: scope)
    }
}
