import Foundation
import LiveRoomProtocol
import RTMPTestSupport
import TestTools
import Testing

/// SEI from the anchor's frame to RTC viewers (`onRecvSEIMsg`), through relay and mix tasks to
/// CDN viewers (`liveroom play`'s `onReceiveSeiMessage`), with real processes and nginx-rtmp.
@Suite(.serialized, .timeLimit(.minutes(4)), .requires(.ffprobe, .ffmpeg))
struct SEIEndToEndTests {
    static let small = ["--resolution", "320x240", "--fps", "15", "--bitrate", "400"]
    static let popUps = [
        #"{"cmd":"item_popup_msg","msg":{"itemNumber":1,"itemPrice":199.0,"itemTitle":"Tea","itemUrl":"https://shop.example/1"}}"#,
        #"{"cmd":"item_popup_msg","msg":{"itemNumber":2,"itemPrice":59.5,"itemTitle":"Cup","itemUrl":"https://shop.example/2"}}"#,
    ]

    /// The messages a client printed for `event` (onRecvSEIMsg or onReceiveSeiMessage), in order.
    static func messages(_ client: ChildProcess, _ event: String) -> [String] {
        client.events(named: event).compactMap { $0["message"]?.stringValue ?? $0["messageHex"]?.stringValue }
    }

    /// Waits until `client` printed `count` `event`s, then a little longer for any duplicate.
    static func waitForMessages(_ client: ChildProcess, _ event: String, count: Int, timeout: Duration = .seconds(15)) async throws -> [String] {
        _ = try await client.waitForEvent(event, count: count, timeout: timeout)
        try await Task.sleep(for: .seconds(2))
        return messages(client, event)
    }

    @Test(arguments: ["vp8", "h264"])
    func rtcViewersGetEachPopUpOnceAlsoWhenTheFirstCopiesAreLost(codec: String) async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        // Both clients' media crosses a relay that can drop what the anchor sends next.
        let server = try await TestServer.start(in: scope, extra: ["--announce-ip", "127.0.0.2"])
        let relay = try scope.start(
            "/usr/bin/python3", [LossyNetworkTests.relay, "127.0.0.2", String(server.mediaPort), "127.0.0.1", String(server.mediaPort), "0", "0", "0"],
            name: "relay")
        _ = try await relay.waitForLine { $0 == "ready" }
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "testsrc", "--video-codec", codec, "--ice-transport", "udp"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.enteredWithMedia("fan", media: ["--ice-transport", "udp"], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(20)) { $0["userId"] == "host" }

        host.send("sei \(Self.popUps[0]) 3")
        // The second pop-up's first copies are lost on the way (a few frames' packets): NACK or a
        // later copy brings it, and it is still reported once.
        relay.send("drop-up 8")
        host.send("sei \(Self.popUps[1]) 5")
        _ = try await relay.waitForLine { $0.hasPrefix("dropped ") }
        let received = try await Self.waitForMessages(fan, "onRecvSEIMsg", count: 2)
        #expect(received == Self.popUps, "each pop-up once, in order: \(received)")
        let event = try #require(fan.events(named: "onRecvSEIMsg").first)
        #expect(event["userId"] == "host" && event["payloadType"] == 242, "\(event.jsonText)")
        #expect(host.events(named: "onError").isEmpty, "\(host.events(named: "onError"))")
    }

    @Test func payloadTypeFiveCarriesItsUUIDAndBinaryBytesSurvive() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "testsrc", "--video-codec", "h264", "--sei-payload-type", "5"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.enteredWithMedia("fan", media: [], in: scope)
        try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(20))
        // Bytes that need emulation prevention in an H.264 NAL unit.
        host.send("sei-hex 00000301000000ff 2")
        let event = try await fan.waitForEvent("onRecvSEIMsg", timeout: .seconds(10))
        #expect(event["payloadType"] == 5 && event["messageHex"] == "00000301000000ff", "\(event.jsonText)")
        #expect(event["uuid"] == .string(Array("LiveRoomSEIData!".utf8).map { String(format: "%02x", $0) }.joined()), "\(event.jsonText)")
    }

    @Test func overTheLimitsEverySenderGetsItsCode() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        try await host.waitForEvent("onMediaConnected")
        func error(_ client: ChildProcess, after line: String) async throws -> Int? {
            let before = client.events(named: "onError").count
            client.send(line)
            return try await client.waitForEvent("onError", count: before + 1, timeout: .seconds(5))["errCode"]?.intValue
        }
        #expect(try await error(host, after: "sei \(String(repeating: "x", count: 1001))") == ErrorCode.invalidSEIMessage)
        #expect(try await error(host, after: "sei hello 31") == ErrorCode.invalidSEIMessage, "a repeat count over 30")
        // 30 messages a second pass; those over it in the same second do not.
        let before = host.events(named: "onError").count
        host.send((0..<45).map { "sei burst-\($0)" }.joined(separator: "\n"))
        _ = try await host.waitForEvent("onError", count: before + 10, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(500))
        let refused = host.events(named: "onError").dropFirst(before)
        #expect(refused.allSatisfy { $0["errCode"]?.intValue == ErrorCode.customMessageRateLimited }, "\(refused)")
        #expect((10...15).contains(refused.count), "30 of 45 (and what refilled meanwhile) were taken: \(refused.count) refused")
        // Muted video carries no SEI.
        host.send("mute-video on")
        try await Task.sleep(for: .milliseconds(1200))
        #expect(try await error(host, after: "sei while muted") == ErrorCode.seiNeedsVideo)

        let audience = try await server.enteredWithMedia("fan", media: [], in: scope)
        #expect(try await error(audience, after: "sei from the audience") == ErrorCode.audienceCannotPublish)
        let silent = try await server.enteredWithMedia("quiet", role: "anchor", media: [], in: scope)
        #expect(try await error(silent, after: "sei without video") == ErrorCode.seiNeedsVideo)
    }

    /// A relay (H.264 passed through, VP8 transcoded) and a mix each carry every pop-up once to
    /// a `liveroom play` viewer, and ffmpeg sees the SEI NAL unit before the slice with the
    /// sender's bytes; the task's own pass-through SEI comes too.
    @Test(.requires(.nginxRTMP))
    func cdnViewersGetEachPopUpOnceThroughRelaysAndMixes() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope)
        let h264 = try await server.enteredWithMedia("h264host", role: "anchor", media: ["--publish", "testsrc", "--video-codec", "h264"] + Self.small, in: scope)
        let vp8 = try await server.enteredWithMedia(
            "vp8host", role: "anchor", media: ["--publish", "testsrc", "--sei-payload-type", "100"] + Self.small, in: scope)
        try await h264.waitForEvent("onPublishAnswer")
        try await vp8.waitForEvent("onPublishAnswer")

        let encoder = #""encoderParam":{"videoEncodedWidth":320,"videoEncodedHeight":240,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":400"#
        let passThrough = #""videoSeiParams":"{\"payloadContent\":\"task-sei\",\"payloadType\":120,\"interval\":500}""#
        let streams: [(client: ChildProcess, request: String, stream: String)] = [
            (h264, #"{"target":{"mode":"bigStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(nginx.url(stream: "relay264"))"}]}}"#, "relay264"),
            (vp8, #"{"target":{"mode":"bigStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(nginx.url(stream: "relayvp8"))"}]},\#(encoder)}}"#, "relayvp8"),
            (vp8, #"{"target":{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(nginx.url(stream: "mix"))"}]},\#(encoder),\#(passThrough)},"mixingConfig":{"layoutMode":"grid"}}"#, "mix"),
        ]
        for (client, request, _) in streams {
            let answered = client.events(named: "onStartPublishMediaStream").count
            client.send("start-publish \(request)")
            let started = try await client.waitForEvent("onStartPublishMediaStream", count: answered + 1)
            #expect(started["code"] == 0, "\(started.jsonText)")
        }
        try await h264.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        try await vp8.waitForEvent("onCdnStreamStateChanged", count: 2, timeout: .seconds(15)) { $0["status"] == 2 }

        var viewers: [String: ChildProcess] = [:]
        for (_, _, stream) in streams {
            let viewer = try scope.start(
                "liveroom", ["play", nginx.url(stream: stream), "--json", "--duration", "25", "--record", scope.dataDirectory.appendingPathComponent("\(stream).flv").path],
                name: "play \(stream)")
            try await viewer.waitForEvent("onFirstVideoFrame", timeout: .seconds(20))
            viewers[stream] = viewer
        }
        h264.send("sei \(Self.popUps[0]) 3")
        vp8.send("sei \(Self.popUps[1]) 3")

        let relayed = try await Self.waitForMessages(try #require(viewers["relay264"]), "onReceiveSeiMessage", count: 1)
        #expect(relayed == [Self.popUps[0]], "the H.264 relay keeps the anchor's SEI: \(relayed)")
        let transcoded = try await Self.waitForMessages(try #require(viewers["relayvp8"]), "onReceiveSeiMessage", count: 1)
        #expect(transcoded == [Self.popUps[1]], "the VP8 relay puts it into its H.264: \(transcoded)")
        let mixViewer = try #require(viewers["mix"])
        _ = try await mixViewer.waitForEvent("onReceiveSeiMessage", timeout: .seconds(15)) { $0["message"] == .string(Self.popUps[1]) }
        let mixed = mixViewer.events(named: "onReceiveSeiMessage")
        #expect(mixed.filter { $0["message"] == .string(Self.popUps[1]) }.count == 1, "\(mixed)")
        #expect(mixed.contains { $0["payloadType"] == 100 && $0["message"] == .string(Self.popUps[1]) }, "the sender's payload type: \(mixed)")
        #expect(mixed.filter { $0["message"] == "task-sei" && $0["payloadType"] == 120 }.count == 1, "the task's own SEI, once although repeated: \(mixed)")

        // ffmpeg reads the SEI NAL unit before the slice, with the sender's bytes.
        for viewer in viewers.values { viewer.stop() }
        let trace = try RequiredTool.ffmpeg.run(
            ["-v", "info", "-i", scope.dataDirectory.appendingPathComponent("mix.flv").path, "-map", "0:v", "-c", "copy", "-bsf:v", "trace_headers", "-f", "null", "-"],
            timeout: toolTimeout
        ).errors
        let lines = trace.split(separator: "\n").map(String.init)
        let seiIndex = try #require(lines.firstIndex { $0.contains("last_payload_type_byte") && $0.hasSuffix("= 100") }, "no SEI of payload type 100")
        let payloadFirstByte = try #require(lines[seiIndex...].first { $0.contains("payload_byte[0]") })
        #expect(payloadFirstByte.hasSuffix("= 123"), "the sender's first byte, '{': \(payloadFirstByte)")
        let nextSlice = lines[seiIndex...].firstIndex { $0.contains("Slice Header") || $0.contains("slice_type") }
        let nextPacket = lines[seiIndex...].firstIndex { $0.contains("Packet:") }
        #expect(nextSlice != nil && nextPacket != nil && nextSlice! < nextPacket!, "the SEI precedes a slice of the same packet")
    }

    /// A relay started by the admin API with a layout-and-volume SEI: `liveroom play` with a
    /// payload type filter reports only those, each naming the anchor with its audio level;
    /// its recording plays; when the CDN goes away it reconnects and goes on recording.
    @Test(.requires(.nginxRTMP))
    func theCDNPlayerFiltersRecordsAndReconnects() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "testsrc", "--video-codec", "h264"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let url = nginx.url(stream: "layout")
        let start: JSONValue = [
            "SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1", "RoomIdType": 1, "WithTranscoding": 0,
            "SingleSubscribeParams": ["UserMediaStream": ["UserInfo": ["RoomId": "room1", "UserId": "host"], "StreamType": 0]],
            "PublishCdnParams": [["PublishCdnUrl": .string(url)]],
            "SeiParams": ["LayoutVolume": ["AppData": "shop-7", "PayloadType": 130, "Interval": 500]],
        ]
        let (started, status) = try await server.admin("StartPublishCdnStream", start, in: scope)
        #expect(status == 0, "\(started.jsonText)")
        let recording = scope.dataDirectory.appendingPathComponent("viewer.mkv").path
        let viewer = try scope.start(
            "liveroom", ["play", url, "--json", "--sei-payload-type", "130", "--record", recording, "--retry-interval-ms", "500"], name: "play")
        try await viewer.waitForEvent("onFirstVideoFrame", timeout: .seconds(20))
        host.send("sei not-this-type 2")
        let layout = try await viewer.waitForEvent("onReceiveSeiMessage", timeout: .seconds(10))
        let content = try JSONValue.parse(try #require(layout["message"]?.stringValue))
        #expect(layout["payloadType"] == 130 && content["app_data"] == "shop-7", "\(layout.jsonText)")
        let region = try #require(content["regions"]?.arrayValue?.first)
        #expect(region["uid"] == "host" && region["w"] == 320 && region["h"] == 240, "\(content.jsonText)")
        // The tone is heard (the first messages may come before the relay has decoded any audio).
        func volume(_ event: JSONValue) -> Int {
            let content = event["message"]?.stringValue.flatMap { try? JSONValue.parse($0) }
            return content?["regions"]?.arrayValue?.first?["volume"]?.intValue ?? 0
        }
        let heard = try await viewer.waitForEvent("onReceiveSeiMessage", timeout: .seconds(10)) { volume($0) > 20 }
        #expect(volume(heard) > 20, "the anchor's tone is heard: \(heard.jsonText)")
        let statistics = try await viewer.waitForEvent("onStatistics", timeout: .seconds(10)) { ($0["fps"]?.doubleValue ?? 0) > 5 }
        #expect(statistics["width"] == 320 && (statistics["videoBitrate"]?.intValue ?? 0) > 50, "\(statistics.jsonText)")

        // The CDN goes away and comes back: the viewer reconnects and plays on.
        nginx.kill()
        try await viewer.waitForEvent("onConnectionLost", timeout: .seconds(15))
        try nginx.start()
        try await viewer.waitForEvent("onConnectionRecovery", timeout: .seconds(20))
        let frames = viewer.events(named: "onStatistics").last?["framesDecoded"]?.intValue ?? 0
        _ = try await viewer.waitForEvent("onStatistics", timeout: .seconds(15)) { ($0["framesDecoded"]?.intValue ?? 0) > frames + 10 }
        #expect(viewer.events(named: "onReceiveSeiMessage").allSatisfy { $0["payloadType"] == 130 }, "only the type asked for")
        let decoded = viewer.events(named: "onStatistics").last?["framesDecoded"]?.intValue ?? 0
        viewer.stop()
        // One recording across the reconnection: besides what was decoded before the cut, it
        // holds most of what was decoded after it (a recording that stopped at the cut fails).
        let video = try #require(try probe(recording).first { $0.width != nil }, "the recording has video")
        let after = decoded - frames
        #expect(
            after > 10 && video.frames - frames >= after * 8 / 10,
            "\(video.frames) frames recorded, \(frames) decoded before the cut and \(after) after it")
    }
}
