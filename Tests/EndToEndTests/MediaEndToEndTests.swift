import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomAuth
import LiveRoomProtocol
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import TestTools
import Testing

/// What ffprobe says of a recorded file's streams, with their frames counted.
func probe(_ path: String) throws -> [ProbedStream] {
    let result = try RequiredTool.ffprobe.run(
        ["-v", "error", "-count_frames", "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "json", path], timeout: toolTimeout)
    return try Probe(json: result.output).streams
}

extension TestServer {
    /// Joins with media options and waits until in the room.
    func enteredWithMedia(_ user: String, room: String = "room1", role: String = "audience", media: [String], in scope: ProcessScope) async throws -> ChildProcess {
        let client = try join(user, room: room, role: role, in: scope, extra: media)
        let enter = try await client.waitForEvent("onEnterRoom")
        #expect((enter["result"]?.intValue ?? -1) >= 0, "\(user) could not enter: \(enter.jsonText)")
        return client
    }

    func userSig(_ user: String) -> String {
        UserSig.make(sdkAppId: Self.sdkAppId, secretKey: Self.secretKey, identifier: user, time: Int64(Date().timeIntervalSince1970), expire: 600).encoded()
    }
}

/// Media between real processes: the server's SFU, `liveroom join` publishing and recording,
/// and GStreamer's webrtcbin over WHIP and WHEP.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MediaEndToEndTests {
    static let small = ["--resolution", "320x240", "--fps", "15", "--bitrate", "500"]

    @Test(.requires(.ffprobe), arguments: [("vp8", "vp8"), ("h264", "h264")])
    func anchorPublishesAudienceRecords(codec: String, probeName: String) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-\(codec)")
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc", "--video-codec", codec] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path], in: scope)
        try await fan.waitForEvent("onUserVideoAvailable") { $0["userId"] == "host" && $0["available"] == true }
        let first = try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15))
        #expect(first["userId"] == "host")
        #expect(first["width"] == 320)
        #expect(first["height"] == 240)
        let stats = try await fan.waitForEvent("onStatistics", timeout: .seconds(10)) { ($0["remoteStatistics"]?.arrayValue?.count ?? 0) > 0 }
        let remote = try #require(stats["remoteStatistics"]?.arrayValue?.first)
        #expect((remote["frameRate"]?.intValue ?? 0) > 5, "\(stats.jsonText)")
        #expect((remote["videoBitrate"]?.intValue ?? 0) > 0)
        try await Task.sleep(for: .seconds(2))
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let names = fan.events.compactMap { $0["event"]?.stringValue }
        let exit = try #require(names.lastIndex(of: "onExitRoom"))
        #expect(!names[exit...].contains("onStatistics"), "nothing after onExitRoom: \(names[exit...])")

        let streams = try probe(recordings.appendingPathComponent("host.mkv").path)
        let video = try #require(streams.first { $0.width != nil })
        #expect(video.codec == probeName)
        #expect(video.width == 320 && video.height == 240)
        #expect(video.frames >= 30, "at least 2 s of 15 fps video: \(video)")
        let audio = try #require(streams.first { $0.codec == "opus" })
        #expect(audio.frames >= 100, "at least 2 s of 20 ms Opus frames: \(audio)")
    }

    @Test func sdpAnswersArePrintedOnlyWithVerbose() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let quiet = try scope.start(
            "liveroom",
            ["join", "--server", server.url, "--room", "room1", "--user-id", "host", "--role", "anchor", "--sdk-app-id", String(TestServer.sdkAppId),
             "--secret-key", TestServer.secretKey, "--json", "--publish", "color:FF0000"] + Self.small,
            name: "host")
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        #expect(quiet.events(named: "onEnterRoom").count == 1)
        #expect(quiet.events(named: "onPublishAnswer").isEmpty, "no SDP without --verbose")
        #expect(!fan.events(named: "onSubscribeAnswer").isEmpty, "--verbose shows it")
    }

    @Test func micConnectionCarriesMediaAndMuteIsSeen() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "color:FF0000"] + Self.small, in: scope)
        let fan = try await server.enteredWithMedia("fan", media: ["--publish", "color:0000FF"] + Self.small, in: scope)
        let watcher = try await server.enteredWithMedia("watcher", media: [], in: scope)
        try await watcher.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "host" }
        #expect(fan.events(named: "onPublishAnswer").isEmpty, "audience does not publish")

        fan.send("request-mic")
        try await host.waitForEvent("onMicRequest")
        host.send("accept-mic fan")
        try await fan.waitForEvent("onPublishAnswer", timeout: .seconds(10))
        try await watcher.waitForEvent("onUserVideoAvailable") { $0["userId"] == "fan" && $0["available"] == true }
        try await watcher.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "fan" }
        try await host.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "fan" }

        host.send("mute-video on")
        try await watcher.waitForEvent("onUserVideoAvailable") { $0["userId"] == "host" && $0["available"] == false }
        host.send("mute-video off")
        try await watcher.waitForEvent("onUserVideoAvailable", count: 2) { $0["userId"] == "host" && $0["available"] == true }

        host.send("end-mic fan")
        try await watcher.waitForEvent("onUserVideoAvailable") { $0["userId"] == "fan" && $0["available"] == false }
        try await watcher.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "fan" && $0["reason"] == 3 }
    }

    @Test func hostileDatagramsAreDroppedAndMediaGoesOn() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        _ = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + Self.small, in: scope)
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15))

        // Bad STUN, truncated RTP, RTP with a wrong auth tag, RTCP garbage, DTLS garbage, random bytes.
        var generator = SystemRandomNumberGenerator()
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.mediaPort.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let shapes: [[UInt8]] = [
            [0x00, 0x01, 0x00, 0x50, 0x21, 0x12, 0xA4, 0x42],
            [0x80, 0x60, 0x00],
            [0x80, 0x60, 0x12, 0x34, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF] + Array(repeating: 0xAA, count: 1000),
            [0x81, 0xC9, 0x00, 0x07],
            [0x16, 0xFE, 0xFD, 0x00, 0x00, 0xFF, 0xFF],
        ]
        for i in 0..<3000 {
            var datagram = i % 6 < shapes.count ? shapes[i % 6] : (0..<Int.random(in: 1...1400, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, &datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(sent == datagram.count)
        }
        // Media keeps flowing: a fresh statistics report still sees video.
        let before = fan.events(named: "onStatistics").count
        let stats = try await fan.waitForEvent("onStatistics", count: before + 2, timeout: .seconds(10))
        let remote = try #require(stats["remoteStatistics"]?.arrayValue?.first)
        #expect((remote["frameRate"]?.intValue ?? 0) > 5, "\(stats.jsonText)")
        #expect(server.process.isRunning)
    }

    @Test func audiencePublishIsRefused() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let enter = RoomRequest.enterRoom(EnterRoomParams(sdkAppId: TestServer.sdkAppId, userId: "sneaky", userSig: server.userSig("sneaky"), strRoomId: "room1", role: .audience))
        let (events, _) = try await SignalingRobustnessTests.exchange(server.url, frames: [enter.json.jsonText, RoomRequest.publish(sdp: "v=0").json.jsonText])
        #expect(events.compactMap { $0["errCode"]?.intValue } == [ErrorCode.audienceCannotPublish])
    }

    /// webrtcbin publishes VP8, H.264 in packetization-mode 1 (x264, FU-A and STAP-A) and in
    /// mode 0 (slices that fit one packet: single NAL units only, which the server forwards to
    /// the viewer's mode 1).
    @Test(.requires(.gstreamerWebRTC, .ffprobe), arguments: [("vp8", "vp8"), ("h264", "h264"), ("h264-mode0", "h264")])
    func webrtcbinPublishesOverWHIPAndTheCLIRecordsIt(codec: String, probeName: String) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-whip")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path], in: scope)
        let gst = try scope.startPython("whip_publish.py", [server.url + "/whip/room1/gst", server.userSig("gst"), "6", codec], name: "webrtcbin WHIP")
        try await fan.waitForEvent("onUserVideoAvailable", timeout: .seconds(15)) { $0["userId"] == "gst" }
        let first = try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "gst" }
        #expect(first["width"] == 320 && first["height"] == 240)
        #expect(try await gst.waitForExit(timeout: .seconds(20)) == 0, "webrtcbin: \(gst.output) \(gst.standardError.suffix(2000))")
        if codec == "h264-mode0" {
            // What webrtcbin sent: single NAL units (5 IDR, 1 slice, 7/8 parameter sets), no STAP-A (24) or FU-A (28).
            let types = try JSONValue.parse(try #require(gst.output.last))["nalTypes"]?.objectValue ?? [:]
            #expect(types["24"] == nil && types["28"] == nil && (types["5"]?.intValue ?? 0) > 0 && (types["1"]?.intValue ?? 0) > 30, "\(types)")
        }
        // The WHIP DELETE ended the session: the room is told.
        try await fan.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == "gst" && $0["available"] == false }
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let streams = try probe(recordings.appendingPathComponent("gst.mkv").path)
        let video = try #require(streams.first { $0.width != nil })
        #expect(video.codec == probeName && video.width == 320 && video.height == 240)
        #expect(video.frames >= 30, "\(video)")
        #expect(streams.contains { $0.codec == "opus" && $0.frames > 50 })
    }

    @Test(.requires(.gstreamerWebRTC), arguments: ["vp8", "h264"]) func webrtcbinPlaysTheCLIAnchorOverWHEP(codec: String) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc", "--video-codec", codec] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let gst = try scope.startPython("whep_play.py", [server.url + "/whep/room1/gstviewer", server.userSig("gstviewer"), "5", codec], name: "webrtcbin WHEP")
        #expect(try await gst.waitForExit(timeout: .seconds(20)) == 0, "webrtcbin: \(gst.output) \(gst.standardError.suffix(2000))")
        let result = try JSONValue.parse(try #require(gst.output.last))
        #expect((result["videoFrames"]?.intValue ?? 0) >= 20, "\(result.jsonText)")
        #expect(result["width"] == 320 && result["height"] == 240)
        #expect((result["audioBuffers"]?.intValue ?? 0) > 0)
    }

    /// The delay a viewer reports for a webrtcbin publisher (whose sender reports' RTP time runs
    /// at twice the media clock) is the delay it reports for a CLI publisher in the same room,
    /// within 50 ms, at every report after the first seconds, for over 30 s: it does not grow,
    /// and the session outlives ICE consent's 30 s though libnice sends no checks after connecting.
    @Test(.requires(.gstreamerWebRTC)) func aForeignPublishersDelayIsTheCLIPublishers() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        let cli = try await server.enteredWithMedia("cli", role: "anchor", media: ["--publish", "testsrc"] + Self.small, in: scope)
        try await cli.waitForEvent("onPublishAnswer")
        let publishers = try ["vp8", "h264"].map { codec in
            try scope.startPython("whip_publish.py", [server.url + "/whip/room1/gst-\(codec)", server.userSig("gst-\(codec)"), "50", codec], name: "webrtcbin \(codec)")
        }
        try await Self.expectDelaysLikeTheCLIPublishers(["gst-vp8", "gst-h264"], at: fan, reports: 18)
        for publisher in publishers { #expect(try await publisher.waitForExit(timeout: .seconds(30)) == 0, "\(publisher.standardError.suffix(1000))") }
    }

    /// Chromium publishes H.264 (packetization-mode 1) from its fake camera and microphone over
    /// WHIP (Tests/Interop/whip_publish.html): a CLI viewer records it, and the delay it reports
    /// is the CLI publisher's within 50 ms.
    @Test(.requires(.chromium, .ffprobe)) func chromiumPublishesH264OverWHIPWithTheCLIPublishersDelay() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let recordings = scope.dataDirectory.appendingPathComponent("rec-chromium")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path], in: scope)
        let cli = try await server.enteredWithMedia("cli", role: "anchor", media: ["--publish", "testsrc"] + Self.small, in: scope)
        try await cli.waitForEvent("onPublishAnswer")
        let page = RequiredTool.interopDirectory.appendingPathComponent("whip_publish.html").path
        _ = try await HeadlessChromium.start(
            in: scope, arguments: ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"],
            url: "file://\(page)#url=\(server.url)/whip/room1/browser&token=\(server.userSig("browser"))&codec=h264&width=320&height=240&fps=15")
        try await Self.expectDelaysLikeTheCLIPublishers(["browser"], at: fan)
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let streams = try probe(recordings.appendingPathComponent("browser.mkv").path)
        let video = try #require(streams.first { $0.width != nil })
        #expect(video.codec == "h264" && video.width == 320 && video.height == 240 && video.frames >= 60, "\(video)")
        #expect(streams.contains { $0.codec == "opus" && $0.frames > 100 })
    }

    /// Waits for the users' first frames at `fan`, leaves 4 s out (the server passes on its own
    /// mapping until a publisher's reports agree), then expects each of the next `reports`
    /// (2 s apart) to give each user a `point2PointDelay` within 50 ms of the CLI publisher `cli`'s.
    static func expectDelaysLikeTheCLIPublishers(_ users: [String], at fan: ChildProcess, reports: Int = 6) async throws {
        for user in users {
            try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(20)) { $0["userId"]?.stringValue == user }
        }
        try await Task.sleep(for: .seconds(4))
        let settled = fan.events(named: "onStatistics").count
        try await fan.waitForEvent("onStatistics", count: settled + reports, timeout: .seconds(2 * reports + 8))
        func delays(of user: String) -> [Double] {
            fan.events(named: "onStatistics").dropFirst(settled).compactMap { event in
                event["remoteStatistics"]?.arrayValue?.first { $0["userId"]?.stringValue == user }?["point2PointDelay"]?.doubleValue
            }
        }
        let reference = delays(of: "cli")
        #expect(reference.count >= reports)
        for user in users {
            let foreign = delays(of: user)
            #expect(foreign.count >= reports)
            let apart = zip(foreign, reference).map { abs($0 - $1) }
            #expect(apart.allSatisfy { $0 <= 50 }, "\(user): \(foreign) ms against the CLI's \(reference) ms")
        }
    }

    /// A viewer that joins 4 s after the publisher records sound and picture in step: the
    /// clapper's white picture and beep (Tests/Interop/clapper.py) at most 40 ms apart. Its
    /// video starts from the publisher's kept keyframe, up to a GOP older than its first audio:
    /// placed by arrival, the picture ran that much late (995 ms for webrtcbin); the sender
    /// report the server sends with the first packet places it where it was captured.
    @Test(.requires(.gstreamerWebRTC, .ffprobe), arguments: ["cli", "webrtcbin"])
    func aLateViewersRecordingKeepsLipSync(publisher: String) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let directory = scope.dataDirectory.appendingPathComponent("clapper")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let maker = try scope.startPython("clapper.py", ["make", directory.path, "40"], name: "clapper")
        #expect(try await maker.waitForExit(timeout: .seconds(60)) == 0, "\(maker.standardError.suffix(1000))")
        let clapper = directory.appendingPathComponent("clapper.mkv").path
        if publisher == "cli" {
            let anchor = try await server.enteredWithMedia(
                "anchor", role: "anchor", media: ["--publish", "file:" + clapper, "--resolution", "320x180", "--fps", "30", "--bitrate", "600"], in: scope)
            try await anchor.waitForEvent("onPublishAnswer")
        } else {
            _ = try scope.startPython("whip_publish.py", [server.url + "/whip/room1/anchor", server.userSig("anchor"), "30", "vp8", clapper], name: "webrtcbin WHIP")
        }
        try await Task.sleep(for: .seconds(4))
        let recordings = scope.dataDirectory.appendingPathComponent("rec")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "anchor" }
        try await Task.sleep(for: .seconds(9))
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let analysis = try scope.startPython("clapper.py", ["analyse", recordings.appendingPathComponent("anchor.mkv").path], name: "analyse")
        #expect(try await analysis.waitForExit(timeout: .seconds(60)) == 0, "\(analysis.standardError.suffix(1000))")
        let offsets = try JSONValue.parse(try #require(analysis.output.last))["offsets"]?.arrayValue?.compactMap(\.doubleValue) ?? []
        #expect(offsets.count >= 3 && offsets.allSatisfy { abs($0) <= 40 }, "white picture minus beep, ms: \(offsets)")
    }

    @Test func whipRefusesBadRequests() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        func post(_ path: String, token: String?, contentType: String = "application/sdp", body: String = "v=0\r\n") async throws -> Int {
            var request = URLRequest(url: URL(string: server.url + path)!)
            request.httpMethod = "POST"
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            request.httpBody = Data(body.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as! HTTPURLResponse).statusCode
        }
        #expect(try await post("/whip/room1/u", token: nil) == 401)
        #expect(try await post("/whip/room1/u", token: "garbage") == 401)
        #expect(try await post("/whip/room1/u", token: server.userSig("other")) == 401)
        #expect(try await post("/whip/room1/u", token: server.userSig("u"), contentType: "text/plain") == 415)
        #expect(try await post("/whip/room1/u", token: server.userSig("u"), body: "not sdp") == 400)
        #expect(try await post("/whep/room1/v", token: server.userSig("v")) == 409, "nobody publishes yet")
        var options = URLRequest(url: URL(string: server.url + "/whip/room1/u")!)
        options.httpMethod = "OPTIONS"
        let (_, response) = try await URLSession.shared.data(for: options)
        #expect((response as! HTTPURLResponse).statusCode == 204)
        #expect((response as! HTTPURLResponse).value(forHTTPHeaderField: "Accept-Post") == "application/sdp")
    }

    /// WHIP PATCH (RFC 9725 section 4.4): new ICE credentials restart ICE and get the server's
    /// new ones with its candidates; the credentials in use (trickle) get 204; the rest is refused.
    @Test func whipPatchRestartsICE() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let offer = SDPNegotiation.offer(
            [.init(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 2)],
            local: TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active),
            sessionID: 1, streamID: "cam"
        ).serialize()
        var post = URLRequest(url: URL(string: server.url + "/whip/room1/cam")!)
        post.httpMethod = "POST"
        post.setValue("application/sdp", forHTTPHeaderField: "Content-Type")
        post.setValue("Bearer \(server.userSig("cam"))", forHTTPHeaderField: "Authorization")
        post.httpBody = Data(offer.utf8)
        let (answerData, created) = try await URLSession.shared.data(for: post)
        let location = try #require((created as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location"))
        let firstUfrag = try TransportDescription(of: try SessionDescription.parse(String(decoding: answerData, as: UTF8.self))).iceUfrag

        func patch(
            _ path: String = location, token: String? = nil, contentType: String = "application/trickle-ice-sdpfrag", body: String
        ) async throws -> (Int, String, HTTPURLResponse) {
            var request = URLRequest(url: URL(string: server.url + path)!)
            request.httpMethod = "PATCH"
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer \(token ?? server.userSig("cam"))", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(body.utf8)
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = response as! HTTPURLResponse
            return (http.statusCode, String(decoding: data, as: UTF8.self), http)
        }
        let fresh = ICECredentials.random()
        let restart = "a=ice-ufrag:\(fresh.ufrag)\r\na=ice-pwd:\(fresh.pwd)\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\n"
        #expect(try await patch(token: server.userSig("other"), body: restart).0 == 401)
        #expect(try await patch("/whip/room1/cam/999999", body: restart).0 == 404)
        #expect(try await patch(contentType: "application/sdp", body: restart).0 == 415)
        #expect(try await patch(body: "a=ice-ufrag:\(fresh.ufrag)\r\n").0 == 400, "no password")
        #expect(try await patch(body: String(repeating: "a=x\r\n", count: 5000)).0 == 413)
        // The credentials in use: a trickled candidate, which an ICE-lite server needs not.
        let trickle = "a=ice-ufrag:\(ice.ufrag)\r\na=ice-pwd:\(ice.pwd)\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=candidate:1 1 udp 1 10.0.0.9 5000 typ host\r\n"
        #expect(try await patch(body: trickle).0 == 204)

        let (status, fragment, response) = try await patch(body: restart)
        #expect(status == 200, "\(fragment)")
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/trickle-ice-sdpfrag")
        #expect(response.value(forHTTPHeaderField: "ETag") != nil)
        let lines = fragment.components(separatedBy: "\r\n")
        let ufrag = try #require(lines.first { $0.hasPrefix("a=ice-ufrag:") }?.dropFirst("a=ice-ufrag:".count))
        #expect(ufrag != firstUfrag[...], "new server credentials")
        #expect(lines.contains { $0.hasPrefix("a=candidate:") && $0.contains(" udp ") && $0.contains(" \(server.mediaPort) ") })
        #expect(lines.contains { $0.hasPrefix("a=candidate:") && $0.contains("tcptype passive") && $0.contains(" \(server.iceTCPPort) ") })
        #expect(try await patch(body: restart).0 == 204, "these credentials are now the ones in use")
    }

    @Test func metricsCountRoomsUsersAndForwardedPackets() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15))
        try await Task.sleep(for: .seconds(1))

        func metrics() async throws -> [String: Double] {
            let (data, response) = try await URLSession.shared.data(from: try #require(URL(string: server.url + "/metrics")))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            var values: [String: Double] = [:]
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
                let parts = line.split(separator: " ")
                if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
            }
            return values
        }
        let first = try await metrics()
        #expect(first["liveroom_rooms"] == 1 && first["liveroom_users"] == 2 && first["liveroom_publishers"] == 1, "\(first)")
        #expect(first["liveroom_signaling_connections"] == 2 && first["liveroom_media_peer_connections"] == 2, "\(first)")
        let received = try #require(first["liveroom_rtp_received_total"])
        #expect(received > 0 && (first["liveroom_rtp_forwarded_total"] ?? 0) > 0, "\(first)")
        try await Task.sleep(for: .seconds(1))
        let second = try await metrics()
        #expect((second["liveroom_rtp_received_total"] ?? 0) > received, "counters keep counting: \(second)")
    }

    /// Two media loops share the one UDP port: peer connections go to them in turn, so the
    /// anchor's packets reach the fans on both loops, each loop forwarding to its own.
    @Test func twoMediaLoopsShareThePortAndEachServesItsOwnSubscribers() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--media-loops", "2"])
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        var fans: [ChildProcess] = []
        for index in 0..<4 {
            let recordings = scope.dataDirectory.appendingPathComponent("fan\(index)").path
            fans.append(try await server.enteredWithMedia("fan\(index)", media: ["--record", recordings], in: scope))
        }
        for fan in fans { try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) }
        try await Task.sleep(for: .seconds(1))
        let (data, _) = try await URLSession.shared.data(from: try #require(URL(string: server.url + "/metrics")))
        let text = String(decoding: data, as: UTF8.self)
        func value(_ name: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        let loop0 = try #require(value(#"liveroom_media_loop_rtp_forwarded_total{loop="0"}"#), "\(text)")
        let loop1 = try #require(value(#"liveroom_media_loop_rtp_forwarded_total{loop="1"}"#), "\(text)")
        #expect(loop0 > 0 && loop1 > 0, "both loops forward: \(loop0), \(loop1)")
        #expect(value("liveroom_rtp_forwarded_total") == loop0 + loop1)
        #expect(value("liveroom_media_peer_connections") == 5)
        #expect((value("liveroom_media_fanout_delay_seconds_count") ?? 0) > 0, "the fan-out delay is measured")
        // The publisher's loop reads its packets from a socket connected to it: one socket on the
        // media port has a remote address (/proc/net/udp, hexadecimal ports), the fans' none.
        let sockets = try String(contentsOfFile: "/proc/net/udp", encoding: .utf8).split(separator: "\n").dropFirst().map { $0.split(separator: " ") }
        let onPort = sockets.filter { $0.count > 2 && $0[1].hasSuffix(String(format: ":%04X", server.mediaPort)) }
        #expect(onPort.filter { !$0[2].hasSuffix(":0000") }.count == 1, "one socket connected to the publisher: \(onPort)")
        try await Task.sleep(for: .seconds(2))
        for (index, fan) in fans.enumerated() {
            fan.send("leave")
            #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
            let video = try #require(try probe(scope.dataDirectory.appendingPathComponent("fan\(index)/host.mkv").path).first { $0.width != nil })
            #expect(video.frames >= 30, "fan\(index) recorded at least 2 s of 15 fps video: \(video)")
        }
    }
}
