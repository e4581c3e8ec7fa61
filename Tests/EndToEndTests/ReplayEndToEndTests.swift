import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomAuth
import LiveRoomProtocol
import TestTools
import Testing

/// Explanation replays with real processes: while a product is popped the server records
/// the anchor's stream without re-encoding (WebM for VP8, Matroska for H.264), lists it on the
/// product and serves it over HTTP with ranges to holders of a valid UserSig.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ReplayEndToEndTests {
    static let tea = #"{"itemNumber":1,"title":"Tea","price":"19.90","itemUrl":"https://shop.example/1","stock":5}"#

    /// GET `path` on the server, with `userSig` of `viewer` unless nil, and an optional Range.
    static func get(_ server: TestServer, _ path: String, userSig: String?, range: String? = nil) async throws -> (Int, Data, HTTPURLResponse?) {
        var url = server.url + path
        if let userSig {
            url += "?sdkappid=\(TestServer.sdkAppId)&identifier=viewer&usersig=\(userSig.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? userSig)"
        }
        var request = URLRequest(url: try #require(URL(string: url)))
        if let range { request.setValue(range, forHTTPHeaderField: "Range") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, data, http)
    }

    static func duration(_ path: String) throws -> Double? {
        let result = try RequiredTool.ffprobe.run(["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path], timeout: toolTimeout)
        return Double(String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The replays of item 1 in the latest onProductChanged that has `count` of them.
    static func replays(_ client: ChildProcess, count: Int, timeout: Duration = .seconds(15)) async throws -> [JSONValue] {
        let changed = try await client.waitForEvent("onProductChanged", timeout: timeout) { event in
            (event["products"]?.arrayValue?.first { $0["itemNumber"] == 1 }?["replays"]?.arrayValue?.count ?? 0) == count
        }
        return changed["products"]?.arrayValue?.first { $0["itemNumber"] == 1 }?["replays"]?.arrayValue ?? []
    }

    @Test(.requires(.ffprobe)) func aPoppedProductIsRecordedListedAndServedWithRangesToUserSigHolders() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let limits = ["--replay-max-seconds", "8"]
        var server = try await TestServer.start(in: scope, extra: limits)
        let replayDirectory = scope.dataDirectory.appendingPathComponent("replays").path
        let vp8 = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + MediaEndToEndTests.small, in: scope)
        let h264 = try scope.start(
            "liveroom",
            ["join", "--server", server.url, "--room", "room2", "--user-id", "host2", "--role", "anchor", "--sdk-app-id", String(TestServer.sdkAppId),
             "--secret-key", TestServer.secretKey, "--json", "--verbose", "--publish", "testsrc", "--video-codec", "h264"] + MediaEndToEndTests.small,
            name: "host2")
        try await vp8.waitForEvent("onPublishAnswer")
        try await h264.waitForEvent("onPublishAnswer")
        for host in [vp8, h264] {
            host.send("product add \(Self.tea)")
            #expect(try await host.waitForEvent("onProductResult")["code"] == 0)
        }

        // H.264 is popped and left: the replay ends at the longest a replay may run (8 s).
        // VP8 is popped for 6 s, then unpopped.
        h264.send("pop 1 custom")
        vp8.send("pop 1 custom")
        try await Task.sleep(for: .seconds(6))
        vp8.send("unpop")
        let replay = try #require(try await Self.replays(vp8, count: 1).first)
        #expect(replay["codec"] == "vp8" && replay["userId"] == "host", "\(replay.jsonText)")
        let durationMs = replay["durationMs"]?.intValue ?? 0
        #expect((5000...7000).contains(durationMs), "\(replay.jsonText)")
        let path = try #require(replay["url"]?.stringValue)
        #expect(path.hasSuffix(".webm"))

        // Only holders of a valid UserSig get it.
        let sig = UserSig.make(
            sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "viewer", time: Int64(Date().timeIntervalSince1970), expire: 600
        ).encoded()
        #expect(try await Self.get(server, path, userSig: nil).0 == 401)
        let forged = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: "not-the-key", identifier: "viewer", time: Int64(Date().timeIntervalSince1970), expire: 600)
        #expect(try await Self.get(server, path, userSig: forged.encoded()).0 == 401)
        let (status, whole, _) = try await Self.get(server, path, userSig: sig)
        #expect(status == 200 && whole.count == replay["bytes"]?.intValue)
        let file = scope.dataDirectory.appendingPathComponent("downloaded.webm").path
        try whole.write(to: URL(fileURLWithPath: file))
        let codecs = Set(try probe(file).map(\.codec))
        #expect(codecs == ["vp8", "opus"])
        let seconds = try #require(try Self.duration(file))
        #expect(abs(seconds - 6) < 1, "\(seconds) s")

        // A range: 206 with exactly those bytes, so a browser can seek.
        let (partial, part, response) = try await Self.get(server, path, userSig: sig, range: "bytes=100-1099")
        #expect(partial == 206 && part == whole[100..<1100])
        #expect(response?.value(forHTTPHeaderField: "Content-Range") == "bytes 100-1099/\(whole.count)")
        #expect(try await Self.get(server, path, userSig: sig, range: "bytes=\(whole.count)-").0 == 416)
        #expect(try await Self.get(server, "/replays/..%2Fliveroom.sqlite", userSig: sig).0 == 404)

        // The H.264 replay ended by itself at 8 s, in Matroska.
        let long = try #require(try await Self.replays(h264, count: 1, timeout: .seconds(10)).first)
        #expect(long["codec"] == "h264" && (7000...9000).contains(long["durationMs"]?.intValue ?? 0), "\(long.jsonText)")
        let mkv = replayDirectory + "/" + (long["url"]?.stringValue?.split(separator: "/").last.map(String.init) ?? "")
        let mkvCodecs = Set(try probe(mkv).map(\.codec))
        #expect(mkv.hasSuffix(".mkv") && mkvCodecs == ["h264", "opus"])

        // Removing a replay removes its file; removing a product removes its replays' files.
        vp8.send("product remove-replay \(replay["replayId"]?.stringValue ?? "")")
        let removed = try await vp8.waitForEvent("onProductResult") { $0["request"] == "removeReplay" }
        #expect(removed["code"] == 0 && removed["product"]?["replays"] == [], "\(removed.jsonText)")
        #expect(try await Self.get(server, path, userSig: sig).0 == 404)
        h264.send("product remove 1")
        try await h264.waitForEvent("onProductResult") { $0["request"] == "removeProduct" }
        #expect(!FileManager.default.fileExists(atPath: mkv))

        // A recording cut short by kill -9 leaves no file behind after the restart.
        vp8.send("pop 1 custom")
        try await Task.sleep(for: .seconds(2))
        let writing = try FileManager.default.contentsOfDirectory(atPath: replayDirectory)
        #expect(writing.count == 1, "the recording is being written")
        server.process.crash()
        vp8.stop()
        h264.stop()
        server = try await TestServer.start(in: scope, extra: limits)
        let left = try FileManager.default.contentsOfDirectory(atPath: replayDirectory)
        #expect(left.isEmpty, "\(left)")
    }
}
