import Foundation
import LiveRoomProtocol
import RTMPTestSupport
import TestTools
import Testing

/// Cross-room PK in publish media stream tasks: two rooms, one anchor each, linked with
/// `connect-room`; each room mixes with the `pk` template to its own nginx-rtmp stream, pulled
/// back with ffmpeg. Each anchor sends its own tone, so the audio shows who is mixed, and how often.
@Suite(.serialized, .timeLimit(.minutes(4)), .requires(.nginxRTMP, .ffmpeg, .ffprobe))
struct PKMixEndToEndTests {
    static let red: UInt32 = 0xFF0000
    static let blue: UInt32 = 0x0000FF
    static let redTone = 500
    static let blueTone = 2_000
    /// Between the two tones, where neither should be heard.
    static let betweenTones = 1_200

    /// A mix to `url` with the PK template on a green 640x360 canvas.
    static func startRequest(url: String) -> String {
        """
        {"target":{"mode":"mixStreamToCdn","cdnUrlList":[{"rtmpUrl":"\(url)"}]},\
        "encoderParam":{"videoEncodedWidth":640,"videoEncodedHeight":360,"videoEncodedFPS":15,"videoEncodedGOP":1,"videoEncodedKbps":800,\
        "audioEncodedSampleRate":48000,"audioEncodedChannelNum":2,"audioEncodedKbps":64},\
        "mixingConfig":{"layoutMode":"pk","backgroundColor":65280}}
        """
    }

    /// The share of sample points in columns `columns` of the frame that are `rgb`, staying
    /// 16 pixels clear of the column edges.
    static func share(of rgb: UInt32, in frame: RGBFrame, columns: Range<Int>) -> Double {
        let xs = stride(from: columns.lowerBound + 16, to: columns.upperBound - 16, by: 16)
        let ys = stride(from: 16, to: frame.height - 16, by: 16)
        let points = xs.flatMap { x in ys.map { (x, $0) } }
        return Double(points.filter { frame.pixel(x: $0.0, y: $0.1, is: rgb) }.count) / Double(points.count)
    }

    /// Records `seconds` of a stream's audio to a WAV file; the recorders run side by side.
    static func recordAudio(_ urls: [String], seconds: Int, in scope: ProcessScope, name: String) async throws -> [String] {
        let jobs = try urls.enumerated().map { index, url in
            let path = scope.dataDirectory.appendingPathComponent("\(name)-\(index).wav").path
            let recorder = try scope.start(
                RequiredTool.ffmpeg.path, ["-v", "error", "-i", url, "-t", String(seconds), "-vn", "-ac", "2", "-ar", "48000", "-y", path], name: "audio \(name)")
            return (path, recorder)
        }
        for (_, recorder) in jobs {
            #expect(try await recorder.waitForExit(timeout: .seconds(seconds + 15)) == 0, "\(recorder.name): \(recorder.standardError)")
        }
        return jobs.map(\.0)
    }

    /// The mean level in dB of `path`'s audio through a narrow band-pass at `frequency`
    /// (skipping the first half second). The band-pass runs twice for steeper skirts: once, it
    /// lets a tone 2.4 times off its centre through at only about -20 dB.
    static func bandLevel(_ path: String, frequency: Int) throws -> Double {
        let band = "bandpass=f=\(frequency):width_type=q:w=10"
        let filter = "\(band),\(band),volumedetect"
        let text = try RequiredTool.ffmpeg.run(["-ss", "0.5", "-i", path, "-af", filter, "-f", "null", "-"], timeout: toolTimeout).errors
        let line = try #require(text.split(separator: "\n").first { $0.contains("mean_volume:") }, "no mean_volume: \(text)")
        return try #require(Double(line.split(separator: " ").dropLast().last ?? ""), "\(line)")
    }

    struct ToneLevels: CustomStringConvertible {
        var red: Double
        var between: Double
        var blue: Double
        var description: String { String(format: "%d Hz %.1f dB, %d Hz %.1f dB, %d Hz %.1f dB", redTone, red, betweenTones, between, blueTone, blue) }

        init(_ path: String) throws {
            red = try bandLevel(path, frequency: redTone)
            between = try bandLevel(path, frequency: betweenTones)
            blue = try bandLevel(path, frequency: blueTone)
        }
    }

    /// Both tones loud, once each: nothing between them, and neither twice as strong as the other.
    /// (Measured: each tone about -13.6 dB, between them about -54 dB.)
    static func expectBothTonesOnce(_ levels: ToneLevels, _ stream: String) {
        #expect(levels.red > -30 && levels.blue > -30, "\(stream): \(levels)")
        #expect(levels.between < min(levels.red, levels.blue) - 25, "\(stream): \(levels)")
        // A voice mixed twice would be 6 dB up on the other.
        #expect(abs(levels.red - levels.blue) < 3, "\(stream): one voice mixed more often than the other: \(levels)")
    }

    @Test func eachRoomsPKMixShowsItsOwnAnchorFirstAndHearsBothOnce() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let nginx = try NginxRTMPServer()
        try nginx.start()
        defer { nginx.stop() }
        let server = try await TestServer.start(in: scope)
        let small = PublishTaskEndToEndTests.small
        let red = try await server.enteredWithMedia(
            "red", room: "roomA", role: "anchor", media: ["--publish", "color:FF0000", "--tone-hz", String(Self.redTone)] + small, in: scope)
        let blue = try await server.enteredWithMedia(
            "blue", room: "roomB", role: "anchor", media: ["--publish", "color:0000FF", "--tone-hz", String(Self.blueTone)] + small, in: scope)
        try await red.waitForEvent("onPublishAnswer")
        try await blue.waitForEvent("onPublishAnswer")

        try await blue.allowPK("roomA")
        red.send("connect-room roomB blue")
        let connected = try await red.waitForEvent("onConnectOtherRoom")
        #expect(connected["errCode"] == 0 && connected["userId"] == "blue", "\(connected.jsonText)")
        try await red.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "blue" }
        try await red.waitForEvent("onUserVideoAvailable") { $0["userId"] == "blue" && $0["available"] == true }
        try await red.waitForEvent("onUserAudioAvailable") { $0["userId"] == "blue" && $0["available"] == true }
        try await blue.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "red" }
        try await blue.waitForEvent("onUserVideoAvailable") { $0["userId"] == "red" && $0["available"] == true }
        try await blue.waitForEvent("onUserAudioAvailable") { $0["userId"] == "red" && $0["available"] == true }

        let urlA = nginx.url(stream: "roomA"), urlB = nginx.url(stream: "roomB")
        for (anchor, url) in [(red, urlA), (blue, urlB)] {
            anchor.send("start-publish \(Self.startRequest(url: url))")
            let started = try await anchor.waitForEvent("onStartPublishMediaStream")
            #expect(started["code"] == 0, "\(anchor.name): \(started.jsonText)")
        }
        try await red.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        try await blue.waitForEvent("onCdnStreamStateChanged", timeout: .seconds(15)) { $0["status"] == 2 }
        try await Task.sleep(for: .seconds(2))

        // Two full-height columns, the room's own anchor on the left.
        let video = try probeVideo(urlA)
        #expect(video.width == 640 && video.height == 360, "\(video)")
        let mixA = try decodeFrame(urlA, width: 640, height: 360)
        let mixB = try decodeFrame(urlB, width: 640, height: 360)
        let left = 0..<320, right = 320..<640
        let seen = [
            ("roomA left red", Self.share(of: Self.red, in: mixA, columns: left)), ("roomA right blue", Self.share(of: Self.blue, in: mixA, columns: right)),
            ("roomB left blue", Self.share(of: Self.blue, in: mixB, columns: left)), ("roomB right red", Self.share(of: Self.red, in: mixB, columns: right)),
        ]
        print("PK mix pixels: \(seen.map { "\($0.0) \(Int($0.1 * 100))%" }.joined(separator: ", "));",
              "roomA (160,180) \(mixA.color(x: 160, y: 180)) (480,180) \(mixA.color(x: 480, y: 180));",
              "roomB (160,180) \(mixB.color(x: 160, y: 180)) (480,180) \(mixB.color(x: 480, y: 180))")
        for (what, share) in seen {
            #expect(share > 0.95, "\(what): \(Int(share * 100))% of the column; roomA \(mixA.color(x: 160, y: 180)) \(mixA.color(x: 480, y: 180)), roomB \(mixB.color(x: 160, y: 180)) \(mixB.color(x: 480, y: 180))")
        }

        // Both tones in both streams, each once.
        let linked = try await Self.recordAudio([urlA, urlB], seconds: 3, in: scope, name: "linked")
        let levelsA = try ToneLevels(linked[0]), levelsB = try ToneLevels(linked[1])
        print("PK mix audio while linked: roomA \(levelsA); roomB \(levelsB)")
        Self.expectBothTonesOnce(levelsA, "roomA")
        Self.expectBothTonesOnce(levelsB, "roomB")

        // The link ends: roomA's mix is red alone, and blue's tone leaves it.
        red.send("disconnect-room")
        let disconnected = try await red.waitForEvent("onDisconnectOtherRoom")
        #expect(disconnected["errCode"] == 0, "\(disconnected.jsonText)")
        try await red.waitForEvent("onRemoteUserLeaveRoom") { $0["userId"] == "blue" }
        try await Task.sleep(for: .seconds(2))
        let alone = try decodeFrame(urlA, width: 640, height: 360)
        let blueOnRight = Self.share(of: Self.blue, in: alone, columns: right), redWhole = Self.share(of: Self.red, in: alone, columns: 0..<640)
        print("PK mix after disconnect-room: roomA right half blue \(Int(blueOnRight * 100))%, whole width red \(Int(redWhole * 100))%, (480,180) \(alone.color(x: 480, y: 180))")
        #expect(blueOnRight == 0, "blue still on roomA's right half: \(alone.color(x: 480, y: 180))")
        #expect(redWhole > 0.95, "roomA after the link: (160,180) \(alone.color(x: 160, y: 180)) (480,180) \(alone.color(x: 480, y: 180))")
        let after = try await Self.recordAudio([urlA], seconds: 3, in: scope, name: "unlinked")
        let levelsAlone = try ToneLevels(after[0])
        print("PK mix audio after disconnect-room: roomA \(levelsAlone)")
        // (Measured: blue's band falls from about -13.6 dB to about -71 dB; red's stays put.)
        #expect(levelsAlone.blue < levelsA.blue - 30, "blue is still heard in roomA: linked \(levelsA), unlinked \(levelsAlone)")
        #expect(abs(levelsAlone.red - levelsA.red) < 3, "red alone should sound as loud as red linked, heard once: linked \(levelsA), unlinked \(levelsAlone)")
        #expect(server.process.isRunning)
    }
}
