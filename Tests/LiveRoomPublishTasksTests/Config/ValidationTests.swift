import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

@Suite("Validation errors: each with its code and a message naming the field")
struct ValidationTests {
    func layout(_ index: Int, user: String? = nil) -> VideoLayout {
        VideoLayout(rect: MixRect(x: (index % 4) * 134, y: (index / 4) * 240, width: 134, height: 240), zOrder: index,
                    fixedVideoUser: user.map { MixUser(userId: $0) })
    }

    @Test func aValidMixPasses() throws {
        try mixConfig(layouts: (0..<16).map { layout($0, user: "u\($0)") }).validate()
    }

    @Test func tooManyInputs() {
        expectError(ErrorCode.tooManyInputs, "videoLayoutList", "17", "16") {
            var layouts = (0..<16).map { layout($0) }
            layouts.append(VideoLayout(rect: MixRect(x: 0, y: 0, width: 10, height: 10), zOrder: 15))
            try mixConfig(layouts: layouts).validate()
        }
        expectError(ErrorCode.tooManyInputs, "audioMixUserList", "17") {
            try mixConfig(audio: (0..<17).map { AudioMixUser(user: MixUser(userId: "u\($0)")) }).validate()
        }
        // 10 video users and 7 other audio-only users are 17 inputs.
        expectError(ErrorCode.tooManyInputs, "17 inputs", "audio-only") {
            try mixConfig(
                layouts: (0..<10).map { layout($0, user: "v\($0)") },
                audio: (0..<7).map { AudioMixUser(user: MixUser(userId: "a\($0)")) }
            ).validate()
        }
        // The same users in video and audio count once.
        #expect(throws: Never.self) {
            try mixConfig(
                layouts: (0..<16).map { layout($0, user: "v\($0)") },
                audio: (0..<16).map { AudioMixUser(user: MixUser(userId: "v\($0)")) }
            ).validate()
        }
    }

    @Test func zOrders() {
        expectError(ErrorCode.invalidZOrder, "mixingConfig.videoLayoutList[0].zOrder", "16", "0 to 15") {
            try mixConfig(layouts: [VideoLayout(rect: MixRect(x: 0, y: 0, width: 100, height: 100), zOrder: 16)]).validate()
        }
        expectError(ErrorCode.invalidZOrder, "-1") {
            try mixConfig(layouts: [VideoLayout(rect: MixRect(x: 0, y: 0, width: 100, height: 100), zOrder: -1)]).validate()
        }
        // TRTC's e-commerce sample gives its co-hosts one zOrder: allowed, drawn in list order, and said.
        let shared = mixConfig(layouts: [
            VideoLayout(rect: MixRect(x: 0, y: 0, width: 100, height: 100), zOrder: 3),
            VideoLayout(rect: MixRect(x: 100, y: 0, width: 100, height: 100), zOrder: 3),
        ])
        #expect(throws: Never.self) { try shared.validate() }
        #expect(shared.mixingConfig!.warnings(canvas: shared.encoderParam!.canvas) == ["mixingConfig.videoLayoutList[1] shares zOrder 3 with [0]; drawn in list order"])
        expectError(ErrorCode.invalidZOrder, "watermarkList[0].zOrder") {
            var config = mixConfig()
            config.mixingConfig?.watermarkList = [Watermark(watermarkUrl: "https://x/logo.png", rect: MixRect(x: 0, y: 0, width: 10, height: 10), zOrder: 20)]
            try config.validate()
        }
    }

    @Test func rects() {
        // Past the canvas: clipped and said; wholly outside: refused.
        let past = mixConfig(layouts: [VideoLayout(rect: MixRect(x: 400, y: 800, width: 200, height: 200))])
        #expect(throws: Never.self) { try past.validate() }
        #expect(past.mixingConfig!.warnings(canvas: past.encoderParam!.canvas) == [
            "mixingConfig.videoLayoutList[0].rect (400,800 200x200) reaches past the 540x960 canvas; clipped to (400,800 140x160)",
        ])
        #expect(past.mixingConfig!.clipped(to: past.encoderParam!.canvas).videoLayoutList[0].rect == MixRect(x: 400, y: 800, width: 140, height: 160))
        let outside = mixConfig(layouts: [VideoLayout(rect: MixRect(x: 0, y: 985, width: 136, height: 240))])
        #expect(throws: Never.self) { try outside.validate() }
        #expect(outside.mixingConfig!.warnings(canvas: outside.encoderParam!.canvas) == [
            "mixingConfig.videoLayoutList[0].rect (0,985 136x240) lies outside the 540x960 canvas; not drawn",
        ])
        expectError(ErrorCode.invalidLayoutRect, "empty") {
            try mixConfig(layouts: [VideoLayout(rect: MixRect(left: 100, top: 0, right: 50, bottom: 100))]).validate()
        }
        expectError(ErrorCode.invalidLayoutRect, "even pixels") {
            try mixConfig(layouts: [VideoLayout(rect: MixRect(x: 0, y: 0, width: 1, height: 100))]).validate()
        }
        expectError(ErrorCode.invalidLayoutRect, "watermarkList[0].rect") {
            var config = mixConfig()
            config.mixingConfig?.watermarkList = [Watermark(watermarkUrl: "https://x/logo.png", rect: MixRect(x: 0, y: 0, width: 100, height: 0))]
            try config.validate()
        }
    }

    @Test func cdnUrls() {
        for (url, fragment) in [
            ("http://cdn.example.com/live/a", "rtmp:// or rtmps://"), ("rtmp:///live/a", "no host"), ("rtmp://cdn.example.com", "path"),
            ("rtmp://cdn.example.com/", "path"), ("rtmp://cdn.example.com/live/a b", "spaces"), ("", "empty"),
        ] {
            expectError(ErrorCode.invalidCdnUrl, "target.cdnUrlList[0].rtmpUrl", fragment) {
                try mixConfig(urls: [url]).validate()
            }
        }
        expectError(ErrorCode.tooManyCdnUrls, "11 URLs", "10") {
            try mixConfig(urls: (0..<11).map { "rtmp://cdn.example.com/live/s\($0)" }).validate()
        }
        expectError(ErrorCode.duplicateCdnUrl, "cdnUrlList[1]", "cdnUrlList[0]") {
            try mixConfig(urls: ["rtmp://cdn.example.com/live/a", "RTMP://CDN.example.com/live/a"]).validate()
        }
        expectError(ErrorCode.missingCdnUrl, "cdnUrlList") {
            try mixConfig(urls: []).validate()
        }
        #expect(throws: Never.self) {
            try mixConfig(urls: (0..<10).map { "rtmps://cdn.example.com:443/live/s\($0)?secret=x" }).validate()
        }
    }

    @Test func videoEncoding() {
        func encoder(_ change: (inout StreamEncoderParam) -> Void) throws {
            var config = mixConfig()
            change(&config.encoderParam!)
            try config.validate()
        }
        expectError(ErrorCode.invalidVideoEncoding, "encoderParam.videoEncodedFPS", "0") { try encoder { $0.videoEncodedFPS = 0 } }
        expectError(ErrorCode.invalidVideoEncoding, "videoEncodedFPS", "61") { try encoder { $0.videoEncodedFPS = 61 } }
        expectError(ErrorCode.invalidVideoEncoding, "videoEncodedGOP", "9") { try encoder { $0.videoEncodedGOP = 9 } }
        expectError(ErrorCode.invalidVideoEncoding, "videoEncodedGOP") { try encoder { $0.videoEncodedGOP = 0 } }
        expectError(ErrorCode.invalidVideoEncoding, "videoEncodedKbps", "10001") { try encoder { $0.videoEncodedKbps = 10001 } }
        expectError(ErrorCode.invalidVideoResolution, "videoEncodedWidth", "541", "even") { try encoder { $0.videoEncodedWidth = 541 } }
        expectError(ErrorCode.invalidVideoResolution, "videoEncodedHeight", "8") { try encoder { $0.videoEncodedHeight = 8 } }
        expectError(ErrorCode.invalidVideoResolution, "videoEncodedWidth", "2000") { try encoder { $0.videoEncodedWidth = 2000 } }
        expectError(ErrorCode.invalidVideoResolution, "1920x1920", "1920x1080") {
            try encoder { $0.videoEncodedWidth = 1920; $0.videoEncodedHeight = 1920 }
        }
        expectError(ErrorCode.invalidVideoResolution, "videoEncodedWidth is 0") { try encoder { $0.videoEncodedWidth = 0 } }
        expectError(ErrorCode.unsupportedCodec, "videoEncodedCodecType", "H.264") { try encoder { $0.videoEncodedCodecType = 1 } }
        #expect(throws: Never.self) { try encoder { $0.videoEncodedWidth = 16; $0.videoEncodedHeight = 1920 } }
    }

    @Test func audioEncoding() {
        func encoder(_ change: (inout StreamEncoderParam) -> Void) throws {
            var config = mixConfig()
            change(&config.encoderParam!)
            try config.validate()
        }
        expectError(ErrorCode.invalidAudioEncoding, "audioEncodedSampleRate", "22050") { try encoder { $0.audioEncodedSampleRate = 22050 } }
        expectError(ErrorCode.invalidAudioEncoding, "audioEncodedChannelNum", "3") { try encoder { $0.audioEncodedChannelNum = 3 } }
        expectError(ErrorCode.invalidAudioEncoding, "audioEncodedKbps", "600") { try encoder { $0.audioEncodedKbps = 600 } }
        expectError(ErrorCode.unsupportedCodec, "audioEncodedCodecType 1", "LC-AAC") { try encoder { $0.audioEncodedCodecType = 1 } }
    }

    @Test func audioOnlyOutputWithLayouts() {
        expectError(ErrorCode.invalidVideoResolution, "audio-only") {
            try mixConfig(layouts: [VideoLayout(rect: MixRect(x: 0, y: 0, width: 10, height: 10))], width: 0, height: 0).validate()
        }
        #expect(throws: Never.self) { try mixConfig(width: 0, height: 0, template: .grid).validate() }
    }

    @Test func targetsAndInputs() {
        expectError(ErrorCode.invalidPublishTarget, "mixStreamIdentity") {
            try PublishTaskConfig(target: PublishTarget(mode: .mixStreamToRoom), encoderParam: StreamEncoderParam(videoEncodedWidth: 640, videoEncodedHeight: 360)).validate()
        }
        expectError(ErrorCode.missingParameter, "encoderParam") {
            try PublishTaskConfig(target: PublishTarget(mode: .mixStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: "rtmp://h/live/s")])).validate()
        }
        expectError(ErrorCode.invalidRelaySource, "bigStreamToCdn") {
            try PublishTaskConfig(target: PublishTarget(mode: .bigStreamToCdn, cdnUrlList: [PublishCdnUrl(rtmpUrl: "rtmp://h/live/s")])).validate()
        }
        expectError(ErrorCode.invalidAudioMixUser, "audioMixUserList[1].volume", "101") {
            try mixConfig(audio: [AudioMixUser(user: MixUser(userId: "a")), AudioMixUser(user: MixUser(userId: "b"), volume: 101)]).validate()
        }
        expectError(ErrorCode.invalidWatermark, "watermarkList[0].watermarkUrl") {
            var config = mixConfig()
            config.mixingConfig?.watermarkList = [Watermark(watermarkUrl: "", rect: MixRect(x: 0, y: 0, width: 10, height: 10))]
            try config.validate()
        }
        expectError(ErrorCode.invalidWatermark, "watermarkList has 17 entries", "16") {
            var config = mixConfig()
            config.mixingConfig?.watermarkList = (0..<17).map { Watermark(watermarkUrl: "w\($0).png", rect: MixRect(x: 0, y: 0, width: 10, height: 10)) }
            try config.validate()
        }
        expectError(ErrorCode.invalidBackground, "backgroundImage", "1024") {
            var config = mixConfig()
            config.mixingConfig?.backgroundImage = "https://cdn.example.com/" + String(repeating: "a", count: 1024)
            try config.validate()
        }
        expectError(ErrorCode.invalidParameter, "MaxIdleTime") {
            var config = mixConfig()
            config.idleTimeout = .seconds(2)
            try config.validate()
        }
    }

    @Test func cloudErrorNames() {
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.invalidZOrder, "")) == "InvalidParameter.MixLayoutList")
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.tooManyInputs, "")) == "InvalidParameter.MixLayoutList")
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.invalidCdnUrl, "")) == "InvalidParameter.PublishCdnUrl")
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.staleSequenceNumber, "")) == "FailedOperation.SequenceNumber")
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.invalidLayoutMode, "")) == "InvalidParameter.MixLayoutMode")
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.missingParameter, "")) == "MissingParameter")
        #expect(ErrorCode.cloudErrorName(for: LiveRoomError(ErrorCode.invalidField, "")) == "InvalidParameter")
    }
}
