import Foundation
import LiveRoomProtocol
import RTMPTestSupport
import TestTools
import Testing

/// One decoded picture as RGB24, from ffmpeg.
struct RGBFrame {
    let width: Int
    let height: Int
    let pixels: [UInt8]

    func color(x: Int, y: Int) -> (r: Int, g: Int, b: Int) {
        let i = (y * width + x) * 3
        return (Int(pixels[i]), Int(pixels[i + 1]), Int(pixels[i + 2]))
    }

    /// Whether the pixel is within `tolerance` of 0xRRGGBB in every channel.
    func pixel(x: Int, y: Int, is rgb: UInt32, tolerance: Int = 48) -> Bool {
        let c = color(x: x, y: y)
        return abs(c.r - Int(rgb >> 16)) <= tolerance && abs(c.g - Int(rgb >> 8 & 0xFF)) <= tolerance && abs(c.b - Int(rgb & 0xFF)) <= tolerance
    }
}

/// The first video frame of `input` (a URL or file; `before` goes ahead of `-i`), decoded.
func decodeFrame(_ input: String, width: Int, height: Int, before: [String] = []) throws -> RGBFrame {
    let data = try RequiredTool.ffmpeg.run(["-v", "error"] + before + ["-i", input, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], timeout: toolTimeout).output
    guard data.count == width * height * 3 else {
        throw TimedOut(description: "ffmpeg gave \(data.count) bytes for a \(width)x\(height) frame of \(input)")
    }
    return RGBFrame(width: width, height: height, pixels: [UInt8](data))
}

/// The video stream of `input`: codec, width, height, frame rate.
func probeVideo(_ input: String) throws -> ProbedStream {
    let result = try RequiredTool.ffprobe.run(
        ["-v", "error", "-select_streams", "v", "-show_entries", "stream=codec_name,width,height,r_frame_rate", "-of", "json", input],
        timeout: toolTimeout)
    return try #require(Probe(json: result.output).streams.first, "no video stream in \(input)")
}

/// Publish media stream tasks through the server to a real RTMP server (nginx-rtmp), pulled
/// back with ffmpeg.
@Suite(.serialized, .timeLimit(.minutes(4)), .requires(.nginxRTMP, .ffmpeg, .ffprobe))
struct PublishTaskEndToEndTests {
    static let small = ["--resolution", "320x240", "--fps", "15", "--bitrate", "400"]
    static let red: UInt32 = 0xFF0000
    static let blue: UInt32 = 0x0000FF
    static let green: UInt32 = 0x00FF00
    static let yellow: UInt32 = 0xFFFF00

    /// The custom layout on a 640x360 canvas: `left` on the left half, `boxed` in a 200x200 box on the right.
    static func mixingConfig(left: String, boxed: String) -> String {
        func layout(_ user: String, x: Int, y: Int, width: Int, height: Int, z: Int) -> String {
            """
            {"fixedVideoUser":{"userId":"\(user)","strRoomId":"room1"},"rect":{"left":\(x),"top":\(y),"right":\(x + width),"bottom":\(y + height)},\
            "zOrder":\(z),"fillMode":0,"backgroundColor":\(yellow)}
            """
        }
        return """
            {"backgroundColor":\(green),"layoutMode":"custom","videoLayoutList":[\(layout(left, x: 0, y: 0, width: 320, height: 360, z: 1)),\
            \(layout(boxed, x: 400, y: 80, width: 200, height: 200, z: 2))]}
            """
    }

    static func startRequest(url: String) -> String {
        """
        {"target":{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\(url)"}]},\
        "encoderParam":{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":800,\
        "audioEncodedSampleRate":48000,"audioEncodedChannelNum":2,"audioEncodedKbps":64},\
        "mixingConfig":\(mixingConfig(left: "red", boxed: "blue"))}
        """
    }

    @Test func mixTaskPlacesAnchorsFollowsUpdatesAndSurvivesTheCDNGoingAway() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope, extra: ["--task-retry-interval-ms", "500", "--task-retry-count", "20"])
        let red = try await server.enteredWithMedia("red", role: "anchor", media: ["--publish", "color:FF0000"] + Self.small, in: scope)
        let blue = try await server.enteredWithMedia("blue", role: "anchor", media: ["--publish", "color:0000FF"] + Self.small, in: scope)
        try await red.waitForEvent("onPublishAnswer")
        try await blue.waitForEvent("onPublishAnswer")

        let url = nginx.url(stream: "mix")
        red.send("start-publish \(Self.startRequest(url: url))")
        let started = try await red.waitForEvent("onStartPublishMediaStream")
        #expect(started["code"] == 0, "\(started.jsonText)")
        let taskId = try #require(started["taskId"]?.stringValue)
        try await red.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }

        // The declared size and rate, each anchor in its rect, the background elsewhere.
        let video = try probeVideo(url)
        #expect(video.width == 640 && video.height == 360 && video.frameRate == "15/1" && video.codec == "h264", "\(video)")
        try await Task.sleep(for: .seconds(1))
        let mixed = try decodeFrame(url, width: 640, height: 360)
        #expect(mixed.pixel(x: 160, y: 180, is: Self.red), "left half: \(mixed.color(x: 160, y: 180))")
        #expect(mixed.pixel(x: 500, y: 180, is: Self.blue), "box: \(mixed.color(x: 500, y: 180))")
        #expect(mixed.pixel(x: 360, y: 20, is: Self.green), "background: \(mixed.color(x: 360, y: 20))")
        #expect(mixed.pixel(x: 620, y: 340, is: Self.green), "background: \(mixed.color(x: 620, y: 340))")
        // Both anchors' tones are in the mix: the CDN audio is far from silence.
        let levels = try RequiredTool.ffmpeg.run(["-i", url, "-t", "2", "-vn", "-af", "volumedetect", "-f", "null", "-"], timeout: toolTimeout).errors
        let mean = levels.split(separator: "\n").first { $0.contains("mean_volume:") }.flatMap { Double($0.split(separator: " ").dropLast().last ?? "") }
        #expect((mean ?? -100) > -40, "mean volume \(mean.map { "\($0) dB" } ?? "missing"): \(levels)")

        // Record the CDN stream across an update that swaps the rects: one unbroken recording.
        let recording = scope.dataDirectory.appendingPathComponent("swap.flv").path
        let recorder = try scope.start(RequiredTool.ffmpeg.path, ["-v", "error", "-i", url, "-t", "9", "-c", "copy", "-y", recording], name: "recorder")
        try await Task.sleep(for: .seconds(3))
        red.send("update-publish \(taskId) {\"mixingConfig\":\(Self.mixingConfig(left: "blue", boxed: "red"))}")
        let updated = try await red.waitForEvent("onUpdatePublishMediaStream")
        #expect(updated["code"] == 0, "\(updated.jsonText)")
        #expect(try await recorder.waitForExit(timeout: .seconds(20)) == 0, "\(recorder.standardError)")
        let first = try decodeFrame(recording, width: 640, height: 360)
        let last = try decodeFrame(recording, width: 640, height: 360, before: ["-sseof", "-0.5"])
        #expect(first.pixel(x: 160, y: 180, is: Self.red) && first.pixel(x: 500, y: 180, is: Self.blue), "before: \(first.color(x: 160, y: 180))")
        #expect(last.pixel(x: 160, y: 180, is: Self.blue) && last.pixel(x: 500, y: 180, is: Self.red), "after: \(last.color(x: 160, y: 180))")
        let duration = try RequiredTool.ffprobe.run(["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", recording], timeout: toolTimeout).output
        #expect((Double(String(decoding: duration, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 8.5, "the recording broke off")
        #expect(red.events(named: "onCdnStreamStateChanged").filter { $0["status"] == 3 }.isEmpty, "the task reconnected during the update")

        // Muted video shows the layout's placeholder colour.
        blue.send("mute-video on")
        try await red.waitForEvent("onUserVideoAvailable") { $0["userId"] == "blue" && $0["available"] == false }
        try await Task.sleep(for: .seconds(1))
        let muted = try decodeFrame(url, width: 640, height: 360)
        #expect(muted.pixel(x: 160, y: 180, is: Self.yellow), "placeholder: \(muted.color(x: 160, y: 180))")
        #expect(muted.pixel(x: 500, y: 180, is: Self.red))

        // The RTMP server goes away and comes back: the task reconnects and the stream returns.
        nginx.kill()
        try await red.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 3 }
        try await Task.sleep(for: .seconds(1))
        try nginx.start()
        try await red.waitForEvent("onCdnStreamStateChanged", count: 2, timeout: .seconds(20)) { $0["status"] == 2 }
        let back = try decodeFrame(url, width: 640, height: 360)
        #expect(back.pixel(x: 500, y: 180, is: Self.red), "after the reconnect: \(back.color(x: 500, y: 180))")

        red.send("stop-publish \(taskId)")
        let stopped = try await red.waitForEvent("onStopPublishMediaStream")
        #expect(stopped["code"] == 0)
        try await red.waitForEvent("onCdnStreamStateChanged") { $0["status"] == 0 }
    }

    @Test func adminRelayTaskAndItsErrors() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope, extra: ["--task-idle-timeout", "2"])
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "color:0000FF", "--video-codec", "h264"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")

        // A relay of an H.264 anchor: its own size, no re-encoding.
        let url = nginx.url(stream: "relay")
        func relay(_ user: String, to url: String) -> JSONValue {
            [
                "SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1", "RoomIdType": 1, "WithTranscoding": 0,
                "SingleSubscribeParams": ["UserMediaStream": ["UserInfo": ["RoomId": "room1", "UserId": .string(user)], "StreamType": 0]],
                "PublishCdnParams": [["PublishCdnUrl": .string(url)]],
            ]
        }
        let start = relay("host", to: url)
        let (started, status) = try await server.admin("StartPublishCdnStream", start, in: scope)
        #expect(status == 0, "\(started.jsonText)")
        let taskId = try #require(started["Response"]?["TaskId"]?.stringValue, "\(started.jsonText)")
        try await Task.sleep(for: .seconds(2))
        let video = try probeVideo(url)
        #expect(video.width == 320 && video.height == 240 && video.codec == "h264", "\(video)")
        let frame = try decodeFrame(url, width: 320, height: 240)
        #expect(frame.pixel(x: 160, y: 120, is: Self.blue), "\(frame.color(x: 160, y: 120))")

        // A VP8 anchor cannot go into FLV as it is: its relay is transcoded to H.264 at its size.
        let vp8 = try await server.enteredWithMedia("vp8host", role: "anchor", media: ["--publish", "color:FF0000", "--video-codec", "vp8"] + Self.small, in: scope)
        try await vp8.waitForEvent("onPublishAnswer")
        let (vp8Started, _) = try await server.admin("StartPublishCdnStream", relay("vp8host", to: nginx.url(stream: "relay-vp8")), in: scope)
        #expect(vp8Started["Response"]?["TaskId"] != nil, "\(vp8Started.jsonText)")
        try await Task.sleep(for: .seconds(2))
        let transcoded = try probeVideo(nginx.url(stream: "relay-vp8"))
        #expect(transcoded.width == 320 && transcoded.height == 240 && transcoded.codec == "h264", "\(transcoded)")
        let red = try decodeFrame(nginx.url(stream: "relay-vp8"), width: 320, height: 240)
        #expect(red.pixel(x: 160, y: 120, is: Self.red), "\(red.color(x: 160, y: 120))")
        vp8.send("leave")

        // The same URL twice is refused; a stale sequence number is refused.
        let (duplicate, _) = try await server.admin("StartPublishCdnStream", start, in: scope)
        #expect(duplicate["Response"]?["Error"]?["Code"] == "FailedOperation.RequestRejection", "\(duplicate.jsonText)")
        let update: JSONValue = ["SdkAppId": .number(Double(TestServer.sdkAppId)), "TaskId": .string(taskId), "SequenceNumber": 2]
        let (firstUpdate, _) = try await server.admin("UpdatePublishCdnStream", update, in: scope)
        #expect(firstUpdate["Response"]?["Error"] == nil, "\(firstUpdate.jsonText)")
        let (staleUpdate, _) = try await server.admin("UpdatePublishCdnStream", update, in: scope)
        #expect(staleUpdate["Response"]?["Error"]?["Code"] == "FailedOperation.SequenceNumber", "\(staleUpdate.jsonText)")
        let (noRoom, _) = try await server.admin(
            "StartPublishCdnStream",
            ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "nowhere", "RoomIdType": 1, "WithTranscoding": 1,
             "PublishCdnParams": [["PublishCdnUrl": .string(nginx.url(stream: "x"))]]],
            in: scope)
        #expect(noRoom["Response"]?["Error"]?["Code"] == "FailedOperation.RoomNotExist", "\(noRoom.jsonText)")

        // The anchor leaves: after the idle time the task is gone.
        host.send("leave")
        _ = try await host.waitForExit(timeout: .seconds(10))
        try await Task.sleep(for: .seconds(4))
        let (stop, _) = try await server.admin("StopPublishCdnStream", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "TaskId": .string(taskId)], in: scope)
        #expect(stop["Response"]?["Error"]?["Code"] == "FailedOperation.TaskNotExist", "\(stop.jsonText)")
    }

    @Test func dismissingTheRoomStopsItsTasksAndBadRequestsGetCodes() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope, extra: ["--task-retry-count", "2", "--task-retry-interval-ms", "200"])
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "color:FF0000"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let fan = try await server.entered("fan", in: scope)

        // Nobody listens at the URL: two retries, then the URL fails and the task ends.
        let nowhere = "rtmp://127.0.0.1:\(try NginxRTMPServer.freeLoopbackPort())/live/x"
        host.send("start-publish \(Self.startRequest(url: nowhere))")
        let doomed = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(doomed["code"] == 0, "\(doomed.jsonText)")
        let failed = try await host.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(20)) { $0["status"] == 4 }
        #expect(failed["code"] == -7228 && failed["cdnUrl"] == .string(nowhere), "\(failed.jsonText)")
        let states = host.events(named: "onCdnStreamStateChanged").compactMap { $0["status"]?.intValue }
        #expect(states == [1, 3, 3, 4], "connecting, two retries, failed: \(states)")
        host.send("stop-publish \(doomed["taskId"]?.stringValue ?? "")")
        let gone = try await host.waitForEvent("onStopPublishMediaStream")
        #expect(gone["code"] == -7220, "the task ended by itself: \(gone.jsonText)")

        // An audience member may not start a task; a malformed one gets the field's code.
        fan.send("start-publish \(Self.startRequest(url: nginx.url(stream: "fan")))")
        let refused = try await fan.waitForEvent("onStartPublishMediaStream")
        #expect(refused["code"] == .number(Double(ErrorCode.anchorOnly)), "\(refused.jsonText)")
        host.send(#"start-publish {"target":{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"http://not-rtmp"}]},"encoderParam":{"videoEncodedWidth":640,"videoEncodedHeight":360}}"#)
        let bad = try await host.waitForEvent("onStartPublishMediaStream", count: 2)
        #expect(bad["code"] == -7201, "\(bad.jsonText)")

        host.send("start-publish \(Self.startRequest(url: nginx.url(stream: "dismiss")))")
        let started = try await host.waitForEvent("onStartPublishMediaStream", count: 3)
        #expect(started["code"] == 0, "\(started.jsonText)")
        try await host.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        let (dismissed, _) = try await server.admin("DismissRoomByStrRoomId", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": "room1"], in: scope)
        #expect(dismissed["Response"]?["Error"] == nil)
        let (stop, _) = try await server.admin(
            "StopPublishCdnStream", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "TaskId": .string(started["taskId"]?.stringValue ?? "")], in: scope)
        #expect(stop["Response"]?["Error"]?["Code"] == "FailedOperation.TaskNotExist", "\(stop.jsonText)")
        #expect(server.process.isRunning)
    }

    @Test func mixIntoTheRoomAppearsAsAUserOthersReceive() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let red = try await server.enteredWithMedia("red", role: "anchor", media: ["--publish", "color:FF0000"] + Self.small, in: scope)
        let blue = try await server.enteredWithMedia("blue", role: "anchor", media: ["--publish", "color:0000FF"] + Self.small, in: scope)
        try await red.waitForEvent("onPublishAnswer")
        try await blue.waitForEvent("onPublishAnswer")
        let recordings = scope.dataDirectory.appendingPathComponent("rec")
        let fan = try await server.enteredWithMedia("fan", media: ["--record", recordings.path], in: scope)

        red.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix","strRoomId":"room1"}},"#
                + #""encoderParam":{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":800},"#
                + #""mixingConfig":\#(Self.mixingConfig(left: "red", boxed: "blue"))}"#)
        let started = try await red.waitForEvent("onStartPublishMediaStream")
        #expect(started["code"] == 0, "\(started.jsonText)")
        try await fan.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "mix" }
        try await fan.waitForEvent("onUserVideoAvailable") { $0["userId"] == "mix" && $0["available"] == true }
        let first: JSONValue
        do {
            first = try await fan.waitForEvent("onFirstVideoFrame", timeout: .seconds(15)) { $0["userId"] == "mix" }
        } catch {
            // Seen once in a full run (the fan's subscription to the mix never connected): what
            // the media port dropped and the server's warnings, for the next time.
            let metrics = (try? await ClusterMediaEndToEndTests.metrics(server)) ?? [:]
            Issue.record(
                """
                the mix's video did not reach the fan; the media port's drops: \(metrics.filter { $0.key.contains("dropped") && $0.value > 0 }), \
                peer connections \(metrics["liveroom_media_peer_connections"] ?? -1); the server's log: \(server.process.standardError.suffix(3000))
                """)
            throw error
        }
        #expect(first["width"] == 640 && first["height"] == 360, "\(first.jsonText)")
        try await Task.sleep(for: .seconds(3))

        // Stopping the task takes the mix's user out of the room.
        red.send("stop-publish \(started["taskId"]?.stringValue ?? "")")
        try await fan.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(10)) { $0["userId"] == "mix" }
        fan.send("leave")
        #expect(try await fan.waitForExit(timeout: .seconds(10)) == 0)
        let recording = recordings.appendingPathComponent("mix.mkv").path
        let video = try probeVideo(recording)
        #expect(video.width == 640 && video.height == 360 && video.codec == "h264", "\(video)")
        let frame = try decodeFrame(recording, width: 640, height: 360, before: ["-sseof", "-1"])
        #expect(frame.pixel(x: 160, y: 180, is: Self.red), "\(frame.color(x: 160, y: 180))")
        #expect(frame.pixel(x: 500, y: 180, is: Self.blue), "\(frame.color(x: 500, y: 180))")
        #expect(frame.pixel(x: 360, y: 20, is: Self.green), "\(frame.color(x: 360, y: 20))")
    }

    /// TRTC's e-commerce flow: a relay while the anchor is alone, updated to a mix when a
    /// co-host comes on, and back; the CDN stream stays one unbroken stream.
    @Test func aRelayBecomesAMixAndBackOnTheSameStream() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "color:FF0000", "--video-codec", "h264"] + Self.small, in: scope)
        let guest = try await server.enteredWithMedia("guest", role: "anchor", media: ["--publish", "color:0000FF"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        try await guest.waitForEvent("onPublishAnswer")

        let url = nginx.url(stream: "shop")
        let target = #"{"mode":"bigStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(url)"}]}"#
        let mixTarget = #"{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(url)"}]}"#
        let encoder = #"{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":800}"#
        host.send(#"start-publish {"target":\#(target),"encoderParam":\#(encoder)}"#)
        let started = try await host.waitForEvent("onStartPublishMediaStream")
        let taskId = try #require(started["taskId"]?.stringValue, "\(started.jsonText)")
        try await host.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        try await Task.sleep(for: .seconds(1))
        let relayed = try probeVideo(url)
        #expect(relayed.width == 320 && relayed.height == 240, "the relay has the anchor's own size: \(relayed)")

        let recording = scope.dataDirectory.appendingPathComponent("switch.flv").path
        let recorder = try scope.start(RequiredTool.ffmpeg.path, ["-v", "error", "-i", url, "-t", "8", "-c", "copy", "-y", recording], name: "recorder")
        try await Task.sleep(for: .seconds(2))
        host.send("update-publish \(taskId) " + #"{"target":\#(mixTarget),"mixingConfig":\#(Self.mixingConfig(left: "host", boxed: "guest"))}"#)
        let updated = try await host.waitForEvent("onUpdatePublishMediaStream")
        #expect(updated["code"] == 0, "\(updated.jsonText)")
        try await Task.sleep(for: .seconds(2))
        let mixedVideo = try probeVideo(url)
        #expect(mixedVideo.width == 640 && mixedVideo.height == 360, "\(mixedVideo)")
        let mixed = try decodeFrame(url, width: 640, height: 360)
        #expect(mixed.pixel(x: 160, y: 180, is: Self.red) && mixed.pixel(x: 500, y: 180, is: Self.blue), "\(mixed.color(x: 500, y: 180))")
        #expect(try await recorder.waitForExit(timeout: .seconds(20)) == 0, "\(recorder.standardError)")
        let duration = try RequiredTool.ffprobe.run(["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", recording], timeout: toolTimeout).output
        #expect((Double(String(decoding: duration, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 7.5, "the stream broke off")

        // And back to the relay when the co-host leaves the stage.
        host.send("update-publish \(taskId) " + #"{"target":\#(target)}"#)
        let back = try await host.waitForEvent("onUpdatePublishMediaStream", count: 2)
        #expect(back["code"] == 0, "\(back.jsonText)")
        try await Task.sleep(for: .seconds(2))
        let relayedAgain = try probeVideo(url)
        #expect(relayedAgain.width == 320 && relayedAgain.height == 240, "\(relayedAgain)")
        #expect(host.events(named: "onCdnStreamStateChanged").filter { $0["status"] == 3 }.isEmpty, "the task reconnected")
    }

    /// TRTC's e-commerce guide mixes its co-hosts with one zOrder and rects running below the
    /// 960-pixel canvas (`CGRectMake(400, 5 + i * 245, 135, 240)`): the task starts, says what it
    /// does differently, and the mix is published.
    @Test func theGuidesMixingSampleRunsAsWrittenWithWarnings() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "color:FF0000"] + Self.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        let users = ["host", "co1", "co2", "co3", "co4"]
        let layouts = users.enumerated().map { index, user in
            let rect = index == 0 ? (0, 0, 540, 960) : (400, 5 + index * 245, 135, 240)
            return #"{"fixedVideoUser":{"userId":"\#(user)","strRoomId":"room1"},"rect":{"left":\#(rect.0),"top":\#(rect.1),"right":\#(rect.0 + rect.2),"bottom":\#(rect.1 + rect.3)},"zOrder":\#(index == 0 ? 0 : 1)}"#
        }
        host.send(
            "start-publish " + #"{"target":{"mode":"mixStreamToRoom","mixStreamIdentity":{"userId":"mix","strRoomId":"room1"}},"#
                + #""encoderParam":{"videoEncodedWidth":540,"videoEncodedHeight":960,"videoEncodedFPS":15,"videoEncodedGOP":2,"videoEncodedKbps":1300},"#
                + #""mixingConfig":{"videoLayoutList":[\#(layouts.joined(separator: ","))]}}"#)
        let answer = try await host.waitForEvent("onStartPublishMediaStream")
        #expect(answer["code"] == 0, "\(answer.jsonText)")
        let message = answer["message"]?.stringValue ?? ""
        #expect(message.contains("videoLayoutList[2] shares zOrder 1 with [1]"), "\(message)")
        #expect(message.contains("videoLayoutList[3].rect (400,740 135x240) reaches past the 540x960 canvas; clipped to (400,740 135x220)"), "\(message)")
        #expect(message.contains("videoLayoutList[4].rect (400,985 135x240) lies outside the 540x960 canvas; not drawn"), "\(message)")
        try await host.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == "mix" && $0["available"] == true }
    }

    /// A relay of a VP8 anchor of 720x1280 transcodes it at that size (18.4 million pixels a
    /// second encoded at the task's default 20 fps, and the anchor decoded), not at the 540x960
    /// at 15 fps it is counted as when it starts (7.8 million): once its first frame is in, the
    /// budget counts what it really costs, and a second relay that would have fit the estimates
    /// (15.6 of 24 million) is refused.
    @Test func aRelayIsCountedAtWhatItReallyEncodesOnceItsFirstFrameIsIn() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope, extra: ["--encoding-budget", "24000000"])
        let host = try await server.enteredWithMedia(
            "host", role: "anchor", media: ["--publish", "color:FF0000", "--resolution", "720x1280", "--fps", "15", "--bitrate", "600"], in: scope)
        try await host.waitForEvent("onPublishAnswer")
        func relay(_ stream: String) {
            host.send("start-publish " + #"{"target":{"mode":"bigStreamToCdn","cdnUrlList":[{"rtmpUrl":"\#(nginx.url(stream: stream))"}]}}"#)
        }
        relay("first")
        #expect(try await host.waitForEvent("onStartPublishMediaStream")["code"] == 0)
        // Counted at 540x960 at 15 fps until the relay's runner reports at its first frame: the
        // encode, and the anchor's decode (at the task's rate, then as measured: 15 fps).
        let encoding = Double(720 * 1280 * 20)
        let decodingAtMost = Double(720 * 1280 * 20 * 64 / 100)
        let deadline = ContinuousClock.now + .seconds(15)
        var metrics: [String: Double] = [:]
        while ContinuousClock.now < deadline {
            metrics = try await ClusterMediaEndToEndTests.metrics(server)
            if (metrics["liveroom_encoding_pixels_per_second"] ?? 0) > encoding { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let counted = metrics["liveroom_encoding_pixels_per_second"] ?? 0
        #expect(
            counted > encoding && counted <= encoding + decodingAtMost,
            "\(metrics.filter { $0.key.contains("encoding") || $0.key.contains("tasks") }); the host's task events: \(host.events.filter { ($0["event"]?.stringValue ?? "").contains("Publish") || ($0["event"]?.stringValue ?? "").contains("Cdn") }.map(\.jsonText))")
        relay("second")
        let second = try await host.waitForEvent("onStartPublishMediaStream", count: 2)
        #expect(second["code"]?.intValue == ErrorCode.encodingBudgetExceeded, "\(second.jsonText)")
        #expect(second["message"]?.stringValue?.contains("this task costs 7.8 million pixels a second") == true, "\(second.jsonText)")
        await server.checkAlive("at the end")
    }
}
