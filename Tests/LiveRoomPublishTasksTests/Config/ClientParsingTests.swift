import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

@Suite("Client API JSON (TRTCPublishTarget, TRTCStreamEncoderParam, TRTCStreamMixingConfig)")
struct ClientParsingTests {
    @Test func guideMixingRequest() throws {
        let config = try PublishTaskConfig.parseClient(request: json(guideMixRequest), caller: caller)
        #expect(config.target.mode == .mixStreamToCdn)
        #expect(config.target.cdnUrlList == [PublishCdnUrl(rtmpUrl: "rtmp://push.example.com/live/shop42?txSecret=9f2c&txTime=6650C0A0")])
        let encoder = try #require(config.encoderParam)
        #expect(encoder == StreamEncoderParam(
            videoEncodedWidth: 540, videoEncodedHeight: 960, videoEncodedFPS: 15, videoEncodedGOP: 2, videoEncodedKbps: 1300,
            audioEncodedSampleRate: 48000, audioEncodedChannelNum: 1, audioEncodedKbps: 50))
        let mixing = try #require(config.mixingConfig)
        #expect(mixing.template == .custom)
        #expect(mixing.videoLayoutList == [
            VideoLayout(rect: MixRect(x: 0, y: 0, width: 540, height: 960), zOrder: 0, fixedVideoUser: MixUser(userId: "anchor", roomId: "room1")),
            VideoLayout(rect: MixRect(x: 400, y: 250, width: 135, height: 240), zOrder: 1, fixedVideoUser: MixUser(userId: "guest", roomId: "room1")),
        ])
        #expect(mixing.audioMixUserList.map(\.user.userId) == ["anchor", "guest"])
        #expect(mixing.audioMixUserList.map(\.volume) == [100, 100])
        #expect(config.relaySource == nil)
    }

    @Test func intRoomIdNamesTheNumericRoomAndWinsOverStrRoomId() throws {
        func user(_ text: String) throws -> MixUser {
            try PublishTaskConfig.parseClientUser(JSONFields(json(text)), code: ErrorCode.invalidAudioMixUser)
        }
        #expect(try user(#"{"userId": "a", "intRoomId": 123}"#) == MixUser(userId: "a", room: .number(123)))
        #expect(try user(#"{"userId": "a", "strRoomId": "123"}"#) == MixUser(userId: "a", room: .string("123")))
        #expect(try user(#"{"userId": "a", "intRoomId": 123}"#) != (try user(#"{"userId": "a", "strRoomId": "123"}"#)))
        // TRTC: when both are set, intRoomId is used.
        #expect(try user(#"{"userId": "a", "intRoomId": 123, "strRoomId": "shop1"}"#) == MixUser(userId: "a", room: .number(123)))
        #expect(try user(#"{"userId": "a", "intRoomId": 0, "strRoomId": "shop1"}"#) == MixUser(userId: "a", room: .string("shop1")))
        // LiveRoom's roomId: a number is the numeric room, text the string room; nothing is the task's room.
        #expect(try user(#"{"userId": "a", "roomId": 7}"#) == MixUser(userId: "a", room: .number(7)))
        #expect(try user(#"{"userId": "a", "roomId": "7"}"#) == MixUser(userId: "a", room: .string("7")))
        #expect(try user(#"{"userId": "a"}"#) == MixUser(userId: "a"))
        for bad in ["-1", "4294967296", "1.5", #""123""#] {
            expectError(ErrorCode.invalidAudioMixUser, "intRoomId") { _ = try user(#"{"userId": "a", "intRoomId": \#(bad)}"#) }
        }
    }

    @Test func relayOfTheCallersOwnStream() throws {
        let config = try PublishTaskConfig.parseClient(
            target: json(#"{"mode": 1, "cdnUrlList": [{"rtmpUrl": "rtmp://cdn.example.com/live/solo"}]}"#),
            encoderParam: json(#"{"videoEncodedWidth": 540, "videoEncodedHeight": 960, "videoEncodedFPS": 15, "videoEncodedGOP": 2, "videoEncodedKbps": 1300}"#),
            mixingConfig: nil, caller: caller)
        #expect(config.target.mode == .bigStreamToCdn)
        #expect(config.relaySource == caller)
        #expect(config.mixingConfig == nil)
        #expect(config.hasVideo)
    }

    @Test func relayWithoutEncoderParamAndSubStream() throws {
        let config = try PublishTaskConfig.parseClient(
            target: json(#"{"mode": "TRTCPublishSubStreamToCdn", "cdnUrlList": [{"rtmpUrl": "rtmps://cdn.example.com:443/live/screen"}]}"#),
            encoderParam: .null, mixingConfig: nil, caller: caller)
        #expect(config.target.mode == .subStreamToCdn)
        #expect(config.encoderParam == nil)
    }

    @Test func enumerationsByName() throws {
        let config = try PublishTaskConfig.parseClient(
            request: json("""
                {"target": {"mode": "mixStreamToCdn", "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]},
                 "encoderParam": {"videoEncodedWidth": 1280, "videoEncodedHeight": 720},
                 "mixingConfig": {"videoLayoutList": [
                   {"rect": {"x": 0, "y": 0, "width": 640, "height": 720}, "zOrder": 3, "fillMode": "TRTCVideoFillMode_Fit",
                    "fixedVideoUser": {"userId": "a"}, "fixedVideoStreamType": "TRTCVideoStreamTypeSub"},
                   {"rect": {"x": 640, "y": 0, "width": 640, "height": 720}, "zOrder": 4, "fillMode": "fill", "fixedVideoStreamType": "small"}
                 ]}}
                """), caller: caller)
        let layouts = try #require(config.mixingConfig).videoLayoutList
        #expect(layouts[0].fillMode == .fit)
        #expect(layouts[0].fixedVideoStreamType == .sub)
        #expect(layouts[0].rect == MixRect(x: 0, y: 0, width: 640, height: 720))
        #expect(layouts[1].fillMode == .fill)
        #expect(layouts[1].fixedVideoStreamType == .small)
        #expect(layouts[1].fixedVideoUser == nil)
        // Defaults of TRTCStreamEncoderParam for what was left out.
        let encoder = try #require(config.encoderParam)
        #expect(encoder.videoEncodedFPS == 20)
        #expect(encoder.videoEncodedGOP == 3)
        #expect(encoder.audioEncodedSampleRate == 48000)
        #expect(encoder.effectiveVideoKbps == 1280 * 720 * 20 * 15 / 100_000)
    }

    @Test func coloursImagesWatermarksAndVolumes() throws {
        let config = try PublishTaskConfig.parseClient(
            request: json("""
                {"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]},
                 "encoderParam": {"videoEncodedWidth": 720, "videoEncodedHeight": 1280},
                 "mixingConfig": {
                   "backgroundColor": "0x61B9F1", "backgroundImage": "https://img.example.com/bg.png",
                   "videoLayoutList": [{"rect": {"left": 0, "top": 0, "right": 720, "bottom": 1280}, "backgroundColor": "#FF0000",
                                        "placeHolderImage": "https://img.example.com/away.png", "fixedVideoUser": {"userId": "", "strRoomId": "room1"}}],
                   "audioMixUserList": [{"userId": "a", "intRoomId": 12345, "volume": 40}, {"userId": "b", "roomId": "pk-room"}],
                   "watermarkList": [{"watermarkUrl": "https://img.example.com/logo.png", "rect": {"left": 600, "top": 20, "right": 700, "bottom": 70}, "zOrder": 15}]
                 }}
                """), caller: caller)
        let mixing = try #require(config.mixingConfig)
        #expect(mixing.backgroundColor == 0x61B9F1)
        #expect(mixing.backgroundImage == "https://img.example.com/bg.png")
        #expect(mixing.videoLayoutList[0].backgroundColor == 0xFF0000)
        #expect(mixing.videoLayoutList[0].placeHolderImage == "https://img.example.com/away.png")
        // A fixedVideoUser with an empty userId means "fill automatically", as in TRTC.
        #expect(mixing.videoLayoutList[0].fixedVideoUser == nil)
        #expect(mixing.audioMixUserList == [
            AudioMixUser(user: MixUser(userId: "a", room: .number(12345)), volume: 40),
            AudioMixUser(user: MixUser(userId: "b", roomId: "pk-room"), volume: 100),
        ])
        #expect(mixing.watermarkList == [Watermark(watermarkUrl: "https://img.example.com/logo.png", rect: MixRect(x: 600, y: 20, width: 100, height: 50), zOrder: 15)])
    }

    @Test func numericBackgroundColour() throws {
        let config = try PublishTaskConfig.parseClient(
            request: json(#"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {}, "mixingConfig": {"backgroundColor": 6404593}}"#),
            caller: caller)
        #expect(config.mixingConfig?.backgroundColor == 0x61B9F1)
        #expect(config.hasVideo == false)
    }

    @Test func mixBackIntoTheRoom() throws {
        let config = try PublishTaskConfig.parseClient(
            request: json("""
                {"target": {"mode": 4, "mixStreamIdentity": {"userId": "mix_robot", "strRoomId": "room1"},
                            "cdnUrlList": [{"rtmpUrl": "rtmp://ignored/live/x"}]},
                 "encoderParam": {"videoEncodedWidth": 1280, "videoEncodedHeight": 720, "videoEncodedFPS": 15, "videoEncodedGOP": 2},
                 "mixingConfig": {"layoutMode": "grid"}}
                """), caller: caller)
        #expect(config.target.mode == .mixStreamToRoom)
        #expect(config.target.mixStreamIdentity == MixUser(userId: "mix_robot", roomId: "room1"))
        #expect(config.target.cdnUrlList.isEmpty)
        #expect(config.mixingConfig?.template == .grid)
    }

    @Test func pkTemplateByLayoutMode() throws {
        func mixing(_ layoutMode: String) throws -> StreamMixingConfig? {
            try PublishTaskConfig.parseClient(
                request: json("""
                    {"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/pk"}]},
                     "encoderParam": {"videoEncodedWidth": 1280, "videoEncodedHeight": 720, "videoEncodedFPS": 15, "videoEncodedGOP": 2},
                     "mixingConfig": {"layoutMode": \(layoutMode)}}
                    """), caller: caller
            ).mixingConfig
        }
        for mode in [#""pk""#, #""PK""#, "5"] {
            #expect(try mixing(mode)?.template == .pk, "\(mode)")
        }
        // The client API's default stays custom (videoLayoutList), and TRTC's SDK clients never send layoutMode.
        #expect(try mixing("null")?.template == .custom)
        expectError(ErrorCode.invalidLayoutMode, "mixingConfig.layoutMode", "\"pq\" is not one of", "pk") { _ = try mixing(#""pq""#) }
        expectError(ErrorCode.invalidLayoutMode, "mixingConfig.layoutMode", "6 is not one of", "5") { _ = try mixing("6") }
        expectError(ErrorCode.invalidLayoutMode, "mixingConfig.layoutMode") { _ = try mixing("true") }
    }

    @Test func mixingWithoutConfigMixesEveryAnchorInAGrid() throws {
        let config = try PublishTaskConfig.parseClient(
            request: json(#"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {"videoEncodedWidth": 640, "videoEncodedHeight": 360}}"#),
            caller: caller)
        #expect(config.mixingConfig == nil)
        #expect(config.effectiveMixingConfig.template == .grid)
    }

    @Test func updateKeepsWhatIsLeftOut() throws {
        let request = try json(guideMixRequest)
        let current = try PublishTaskConfig.parseClient(request: request, caller: caller)
        // The guide's flow: the co-host leaves, the anchor sends only a new mixing config.
        let updated = try PublishTaskConfig.parseClientUpdate(
            target: nil, encoderParam: .null,
            mixingConfig: json(#"{"videoLayoutList": [{"rect": {"left": 0, "top": 0, "right": 540, "bottom": 960}, "fixedVideoUser": {"userId": "anchor", "strRoomId": "room1"}}]}"#),
            caller: caller, current: current)
        #expect(updated.target == current.target)
        #expect(updated.encoderParam == current.encoderParam)
        #expect(updated.mixingConfig?.videoLayoutList.count == 1)
        #expect(updated.mixingConfig?.audioMixUserList == [])
        // A relay of the caller's stream from a mix, keeping the URLs.
        let relay = try PublishTaskConfig.parseClientUpdate(
            target: json(#"{"mode": 1, "cdnUrlList": [{"rtmpUrl": "rtmp://push.example.com/live/shop42"}]}"#),
            encoderParam: nil, mixingConfig: nil, caller: caller, current: current)
        #expect(relay.relaySource == caller)
        #expect(relay.mixingConfig == nil)
        expectError(ErrorCode.invalidZOrder) {
            _ = try PublishTaskConfig.parseClientUpdate(
                target: nil, encoderParam: nil,
                mixingConfig: json(#"{"videoLayoutList": [{"rect": {"left": 0, "top": 0, "right": 10, "bottom": 10}, "zOrder": 99}]}"#),
                caller: caller, current: current)
        }
    }

    @Test func requestWithoutTarget() {
        expectError(ErrorCode.missingParameter, "target") {
            _ = try PublishTaskConfig.parseClient(request: json(#"{"encoderParam": {}}"#), caller: caller)
        }
    }

    @Test func wrongTypesNameTheField() {
        expectError(ErrorCode.invalidZOrder, "mixingConfig.videoLayoutList[0].zOrder", "integer") {
            _ = try PublishTaskConfig.parseClient(
                request: json(#"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {"videoEncodedWidth": 640, "videoEncodedHeight": 360}, "mixingConfig": {"videoLayoutList": [{"rect": {"left": 0, "top": 0, "right": 10, "bottom": 10}, "zOrder": "top"}]}}"#),
                caller: caller)
        }
        expectError(ErrorCode.invalidLayoutRect, "mixingConfig.videoLayoutList[0].rect", "object") {
            _ = try PublishTaskConfig.parseClient(
                request: json(#"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {"videoEncodedWidth": 640, "videoEncodedHeight": 360}, "mixingConfig": {"videoLayoutList": [{"rect": [0, 0, 10, 10]}]}}"#),
                caller: caller)
        }
        expectError(ErrorCode.invalidPublishTarget, "target.mode", "party") {
            _ = try PublishTaskConfig.parseClient(request: json(#"{"target": {"mode": "party"}}"#), caller: caller)
        }
        expectError(ErrorCode.invalidPublishTarget, "target.mode", "9") {
            _ = try PublishTaskConfig.parseClient(request: json(#"{"target": {"mode": 9}}"#), caller: caller)
        }
        expectError(ErrorCode.invalidBackground, "mixingConfig.backgroundColor", "purple") {
            _ = try PublishTaskConfig.parseClient(
                request: json(#"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {}, "mixingConfig": {"backgroundColor": "purple"}}"#),
                caller: caller)
        }
        expectError(ErrorCode.invalidAudioMixUser, "mixingConfig.audioMixUserList[0].userId") {
            _ = try PublishTaskConfig.parseClient(
                request: json(#"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {}, "mixingConfig": {"audioMixUserList": [{"strRoomId": "room1"}]}}"#),
                caller: caller)
        }
    }

    /// Errors of the one JSON reader carry the full path of the field, also as `field`.
    @Test func errorsCarryTheFullPathOfTheField() throws {
        let layouts = [
            #"{"rect": {"left": 0, "top": 0, "right": 640, "bottom": 360}, "zOrder": 0}"#,
            #"{"rect": {"x": 0, "y": 0, "width": 320, "height": 180}, "zOrder": 1}"#,
            #"{"rect": {"left": 0, "top": 0, "right": "wide", "bottom": 180}, "zOrder": 2}"#,
        ]
        let request = #"{"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://h/live/s"}]}, "encoderParam": {"videoEncodedWidth": 640, "videoEncodedHeight": 360}, "mixingConfig": {"videoLayoutList": ["#
            + layouts.joined(separator: ",") + "]}}"
        do {
            _ = try PublishTaskConfig.parseClient(request: json(request), caller: caller)
            Issue.record("parsed a rect with right \"wide\"")
        } catch let error as LiveRoomError {
            #expect(error.code == ErrorCode.invalidLayoutRect)
            #expect(error.message == "mixingConfig.videoLayoutList[2].rect.right must be an integer, not string")
            #expect(error.field == "mixingConfig.videoLayoutList[2].rect.right")
        }
        expectError(ErrorCode.missingParameter, "missing field mixingConfig.videoLayoutList[1].rect.height") {
            _ = try PublishTaskConfig.parseClient(
                request: json(request.replacingOccurrences(of: #", "height": 180"#, with: "")), caller: caller)
        }
    }
}
