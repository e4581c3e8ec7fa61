import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

@Suite("Admin API parameters (StartPublishCdnStream, UpdatePublishCdnStream, StopPublishCdnStream)")
struct AdminParsingTests {
    static let customStart = """
        {
          "SdkAppId": 1400000001, "RoomId": "room1", "RoomIdType": 1,
          "AgentParams": {"UserId": "mcu_robot_room1", "UserSig": "eJw...", "MaxIdleTime": 60},
          "WithTranscoding": 1,
          "AudioParams": {
            "AudioEncode": {"SampleRate": 48000, "Channel": 2, "BitRate": 64, "Codec": 0},
            "SubscribeAudioList": [{"UserInfo": {"UserId": "anchor", "RoomId": "room1", "RoomIdType": 1}},
                                   {"UserInfo": {"UserId": "guest", "RoomId": "room1", "RoomIdType": 1}, "Volume": 70}]
          },
          "VideoParams": {
            "VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 1500, "Gop": 2},
            "BackGroundColor": "0x336699",
            "BackgroundImageUrl": "https://img.example.com/bg.jpg",
            "LayoutParams": {
              "MixLayoutMode": 4,
              "MixLayoutList": [
                {"UserMediaStream": {"UserInfo": {"UserId": "anchor", "RoomId": "room1", "RoomIdType": 1}, "StreamType": 0},
                 "ImageWidth": 640, "ImageHeight": 720, "LocationX": 0, "LocationY": 0, "ZOrder": 0, "RenderMode": 0},
                {"UserMediaStream": {"UserInfo": {"UserId": "guest", "RoomId": "room1", "RoomIdType": 1}, "StreamType": 1},
                 "ImageWidth": 640, "ImageHeight": 720, "LocationX": 640, "LocationY": 0, "ZOrder": 1, "RenderMode": 2,
                 "BackGroundColor": "0x000000", "BackgroundImageUrl": "https://img.example.com/camera-off.png"},
                {"ImageWidth": 320, "ImageHeight": 180, "LocationX": 960, "LocationY": 540, "ZOrder": 2, "RenderMode": 1}
              ]
            },
            "WaterMarkList": [{"WaterMarkType": 0, "WaterMarkImage": {"WaterMarkUrl": "https://img.example.com/logo.png",
                                "WaterMarkWidth": 120, "WaterMarkHeight": 40, "LocationX": 1140, "LocationY": 20, "ZOrder": 5}}]
          },
          "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/room1_mix", "IsTencentCdn": 0},
                               {"PublishCdnUrl": "rtmp://backup.example.com/live/room1_mix", "IsTencentCdn": 0}],
          "SeiParams": {"LayoutVolume": {"AppData": "shop", "PayloadType": 100, "Interval": 1000}}
        }
        """

    @Test func customMixStart() throws {
        let (request, config) = try AdminPublishCdnStreamRequest.parseStart(json(Self.customStart))
        #expect(request.sdkAppId == 1400000001)
        #expect(request.roomId == "room1")
        #expect(request.roomIdType == 1)
        #expect(config.target.mode == .mixStreamToCdn)
        #expect(config.target.cdnUrlList == [
            PublishCdnUrl(rtmpUrl: "rtmp://push.example.com/live/room1_mix", isInternalLine: false),
            PublishCdnUrl(rtmpUrl: "rtmp://backup.example.com/live/room1_mix", isInternalLine: false),
        ])
        #expect(config.agentUserId == "mcu_robot_room1")
        #expect(config.idleTimeout == .seconds(60))
        #expect(config.encoderParam == StreamEncoderParam(
            videoEncodedWidth: 1280, videoEncodedHeight: 720, videoEncodedFPS: 15, videoEncodedGOP: 2, videoEncodedKbps: 1500,
            audioEncodedSampleRate: 48000, audioEncodedChannelNum: 2, audioEncodedKbps: 64))
        let mixing = try #require(config.mixingConfig)
        #expect(mixing.template == .custom)
        #expect(mixing.backgroundColor == 0x336699)
        #expect(mixing.backgroundImage == "https://img.example.com/bg.jpg")
        #expect(mixing.videoLayoutList == [
            VideoLayout(rect: MixRect(x: 0, y: 0, width: 640, height: 720), zOrder: 0, fillMode: .fill, fixedVideoUser: MixUser(userId: "anchor", roomId: "room1")),
            VideoLayout(
                rect: MixRect(x: 640, y: 0, width: 640, height: 720), zOrder: 1, fillMode: .fit, backgroundColor: 0,
                placeHolderImage: "https://img.example.com/camera-off.png", fixedVideoUser: MixUser(userId: "guest", roomId: "room1"),
                fixedVideoStreamType: .sub),
            VideoLayout(rect: MixRect(x: 960, y: 540, width: 320, height: 180), zOrder: 2, fillMode: .stretch),
        ])
        #expect(mixing.audioMixUserList == [
            AudioMixUser(user: MixUser(userId: "anchor", roomId: "room1")),
            AudioMixUser(user: MixUser(userId: "guest", roomId: "room1"), volume: 70),
        ])
        #expect(mixing.watermarkList == [Watermark(watermarkUrl: "https://img.example.com/logo.png", rect: MixRect(x: 1140, y: 20, width: 120, height: 40), zOrder: 5)])
        #expect(config.seiParams?.layoutVolume == TaskSEIParams.LayoutVolume(appData: "shop", payloadType: 100, uuid: nil, schedule: .init(intervalMilliseconds: 1000)))
    }

    @Test func relayStart() throws {
        let (_, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"SdkAppId": 1400000001, "RoomId": 8080, "RoomIdType": 0, "WithTranscoding": 0,
             "AgentParams": {"UserId": "relay_robot"},
             "AudioParams": {"AudioEncode": {"SampleRate": 48000, "Channel": 1, "BitRate": 50}},
             "SingleSubscribeParams": {"UserMediaStream": {"UserInfo": {"UserId": "anchor", "RoomId": "8080", "RoomIdType": 0}, "StreamType": 0}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/anchor"}]}
            """))
        #expect(config.target.mode == .bigStreamToCdn)
        // RoomIdType 0: the numeric room 8080, not the string room "8080".
        #expect(config.relaySource == MixUser(userId: "anchor", room: .number(8080)))
        #expect(config.mixingConfig == nil)
        #expect(config.hasVideo)

        let (request, screen) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": 8080, "RoomIdType": 0,
             "SingleSubscribeParams": {"UserMediaStream": {"UserInfo": {"UserId": "anchor"}, "StreamType": 1}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/anchor-screen"}]}
            """))
        #expect(request.room == .number(8080) && request.roomId == RoomID.number(8080).key)
        #expect(screen.target.mode == .subStreamToCdn)
    }

    @Test func templates() throws {
        for (mode, template) in [(1, LayoutTemplate.float), (2, .screenShare), (3, .grid), (4, .custom), (5, .pk)] {
            let (_, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
                {"RoomId": "room1", "WithTranscoding": 1,
                 "VideoParams": {"VideoEncode": {"Width": 720, "Height": 1280, "Fps": 15, "BitRate": 1200, "Gop": 2},
                                 "LayoutParams": {"MixLayoutMode": \(mode), "RenderMode": 2, "PureAudioHoldPlaceMode": 1,
                                                  "MaxVideoUser": {"UserMediaStream": {"UserInfo": {"UserId": "teacher", "RoomId": "room1", "RoomIdType": 1}, "StreamType": 1}}}},
                 "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/x"}]}
                """))
            let mixing = try #require(config.mixingConfig)
            #expect(mixing.template == template)
            #expect(mixing.templateFillMode == .fit)
            #expect(mixing.pureAudioHoldsPlace)
            #expect(mixing.templateMainUser == MixUser(userId: "teacher", roomId: "room1"))
            #expect(mixing.templateMainStreamType == .sub)
        }
    }

    @Test func pkTemplateOnStartAndUpdate() throws {
        let (_, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1", "VideoParams": {"VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 1500, "Gop": 2},
             "LayoutParams": {"MixLayoutMode": 5}}, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/pk"}]}
            """))
        let mixing = try #require(config.mixingConfig)
        #expect(mixing.template == .pk)
        #expect(mixing.template.name == "pk")
        // The admin default: audio-only anchors take no column.
        #expect(mixing.pureAudioHoldsPlace == false)
        #expect(mixing.templateFillMode == nil)

        // A grid mix turned into PK when the other room links, and back.
        let (_, grid) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1", "VideoParams": {"VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 1500, "Gop": 2}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/pk"}]}
            """))
        let update = try AdminPublishCdnStreamRequest.parseUpdate(json(#"{"TaskId": "t1", "SequenceNumber": 1, "VideoParams": {"LayoutParams": {"MixLayoutMode": 5}}}"#))
        let pk = try update.applied(to: grid)
        #expect(pk.mixingConfig?.template == .pk)
        #expect(pk.encoderParam == grid.encoderParam)
        let back = try AdminPublishCdnStreamRequest.parseUpdate(json(#"{"TaskId": "t1", "SequenceNumber": 2, "VideoParams": {"LayoutParams": {"MixLayoutMode": 3}}}"#))
        #expect(try back.applied(to: pk).mixingConfig?.template == .grid)
    }

    @Test func defaultsOfAnAdminMix() throws {
        let (_, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1", "VideoParams": {"VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 0, "Gop": 2}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/x"}]}
            """))
        #expect(config.target.mode == .mixStreamToCdn)
        #expect(config.mixingConfig?.template == .grid)
        #expect(config.mixingConfig?.pureAudioHoldsPlace == false)
        #expect(config.encoderParam?.audioEncodedSampleRate == 48000)
        #expect(config.idleTimeout == nil)
    }

    @Test func withoutVideoParamsTheOutputIsAudioOnly() throws {
        let (_, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1", "WithTranscoding": 1, "AudioParams": {"AudioEncode": {"SampleRate": 44100, "Channel": 2, "BitRate": 96}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/radio"}]}
            """))
        #expect(config.hasVideo == false)
        #expect(config.encoderParam?.audioEncodedSampleRate == 44100)
    }

    @Test func mixBackIntoARoom() throws {
        let (_, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1", "WithTranscoding": 1,
             "VideoParams": {"VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 1500, "Gop": 2}},
             "FeedBackRoomParams": [{"RoomId": "room1", "RoomIdType": 1, "UserId": "mix_robot", "UserSig": "eJw..."}]}
            """))
        #expect(config.target.mode == .mixStreamToRoom)
        #expect(config.target.mixStreamIdentity == MixUser(userId: "mix_robot", roomId: "room1"))
    }

    @Test func startErrors() {
        for bad in [0, 6] {
            expectError(ErrorCode.invalidLayoutMode, "VideoParams.LayoutParams.MixLayoutMode", "\(bad) is not", "4 (custom) or 5 (pk)") {
                _ = try AdminPublishCdnStreamRequest.parseStart(json("""
                    {"RoomId": "room1", "VideoParams": {"VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 1500, "Gop": 2},
                     "LayoutParams": {"MixLayoutMode": \(bad)}}, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}
                    """))
            }
        }
        expectError(ErrorCode.missingParameter, "RoomId") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json(#"{"PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}"#))
        }
        expectError(ErrorCode.missingParameter, "VideoParams.VideoEncode") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json(#"{"RoomId": "r", "VideoParams": {}, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}"#))
        }
        expectError(ErrorCode.invalidRelaySource, "SingleSubscribeParams") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json(#"{"RoomId": "r", "WithTranscoding": 0, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}"#))
        }
        expectError(ErrorCode.invalidWatermark, "WaterMarkType", "1") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json("""
                {"RoomId": "r", "VideoParams": {"VideoEncode": {"Width": 1280, "Height": 720, "Fps": 15, "BitRate": 1500, "Gop": 2},
                 "WaterMarkList": [{"WaterMarkType": 1, "WaterMarkText": {"Text": "LIVE"}}]}, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}
                """))
        }
        expectError(ErrorCode.missingCdnUrl) {
            _ = try AdminPublishCdnStreamRequest.parseStart(json(#"{"RoomId": "r", "WithTranscoding": 1}"#))
        }
        expectError(ErrorCode.invalidVideoResolution, "1920x1920") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json("""
                {"RoomId": "r", "VideoParams": {"VideoEncode": {"Width": 1920, "Height": 1920, "Fps": 15, "BitRate": 1500, "Gop": 2}},
                 "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}
                """))
        }
        expectError(ErrorCode.invalidLayoutRect, "MixLayoutList[0]") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json("""
                {"RoomId": "r", "VideoParams": {"VideoEncode": {"Width": 640, "Height": 360, "Fps": 15, "BitRate": 800, "Gop": 2},
                 "LayoutParams": {"MixLayoutMode": 4, "MixLayoutList": [{"ImageWidth": 0, "ImageHeight": 360}]}},
                 "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}
                """))
        }
        expectError(ErrorCode.invalidParameter, "RoomIdType") {
            _ = try AdminPublishCdnStreamRequest.parseStart(json(#"{"RoomId": "r", "RoomIdType": 3}"#))
        }
        for bad in [#""shop1""#, "0", "-5", "4294967296", #""0123""#] {
            expectError(ErrorCode.invalidParameter, "RoomId must be an integer room id") {
                _ = try AdminPublishCdnStreamRequest.parseStart(json(#"{"RoomId": \#(bad), "RoomIdType": 0}"#))
            }
        }
    }

    @Test func roomIdTypeChoosesTheRoomKindAndUsersInheritIt() throws {
        let (request, config) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "123", "RoomIdType": 0,
             "AudioParams": {"AudioEncode": {"SampleRate": 48000, "Channel": 1, "BitRate": 50},
                             "SubscribeAudioList": [{"UserInfo": {"UserId": "a", "RoomId": 123}},
                                                    {"UserInfo": {"UserId": "b", "RoomId": "123", "RoomIdType": 1}},
                                                    {"UserInfo": {"UserId": "c"}}]},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}
            """))
        #expect(request.room == .number(123))
        #expect(config.mixingConfig?.audioMixUserList.map(\.user) == [
            MixUser(userId: "a", room: .number(123)), MixUser(userId: "b", room: .string("123")), MixUser(userId: "c"),
        ])
        // Without RoomIdType a task names string rooms, as before.
        let (stringRequest, _) = try AdminPublishCdnStreamRequest.parseStart(json(#"{"RoomId": 123, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://h/live/x"}]}"#))
        #expect(stringRequest.room == .string("123"))
    }

    @Test func updateKeepsWhatIsLeftOut() throws {
        let (_, start) = try AdminPublishCdnStreamRequest.parseStart(json(Self.customStart))
        let update = try AdminPublishCdnStreamRequest.parseUpdate(json("""
            {"SdkAppId": 1400000001, "TaskId": "task-1", "SequenceNumber": 2, "WithTranscoding": 1,
             "VideoParams": {"LayoutParams": {"MixLayoutMode": 3}}}
            """))
        #expect(update.taskId == "task-1")
        #expect(update.sequenceNumber == 2)
        let updated = try update.applied(to: start)
        #expect(updated.mixingConfig?.template == .grid)
        #expect(updated.target == start.target)
        #expect(updated.encoderParam == start.encoderParam)
        #expect(updated.mixingConfig?.audioMixUserList == start.mixingConfig?.audioMixUserList)
        #expect(updated.mixingConfig?.watermarkList == start.mixingConfig?.watermarkList)
        #expect(updated.mixingConfig?.backgroundColor == 0x336699)

        let urls = try AdminPublishCdnStreamRequest.parseUpdate(json("""
            {"TaskId": "task-1", "SequenceNumber": 3, "PublishCdnParams": [{"PublishCdnUrl": "rtmp://other.example.com/live/room1"}],
             "AudioParams": {"SubscribeAudioList": [], "UnSubscribeAudioList": [{"UserInfo": {"UserId": "guest"}}]}}
            """)).applied(to: updated)
        #expect(urls.target.cdnUrlList.map(\.rtmpUrl) == ["rtmp://other.example.com/live/room1"])
        #expect(urls.mixingConfig?.template == .grid)
        #expect(urls.mixingConfig?.audioMixUserList == [])
        #expect(urls.mixingConfig?.audioExcludeUserList == [MixUser(userId: "guest")])
        #expect(urls.encoderParam == start.encoderParam)
    }

    @Test func relayUpdatedToAMix() throws {
        let (_, relay) = try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1", "WithTranscoding": 0,
             "SingleSubscribeParams": {"UserMediaStream": {"UserInfo": {"UserId": "anchor"}}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/anchor"}]}
            """))
        let mixed = try AdminPublishCdnStreamRequest.parseUpdate(json("""
            {"TaskId": "t", "SequenceNumber": 1, "WithTranscoding": 1,
             "VideoParams": {"VideoEncode": {"Width": 540, "Height": 960, "Fps": 15, "BitRate": 1300, "Gop": 2}, "LayoutParams": {"MixLayoutMode": 1}}}
            """)).applied(to: relay)
        #expect(mixed.target.mode == .mixStreamToCdn)
        #expect(mixed.relaySource == nil)
        #expect(mixed.mixingConfig?.template == .float)
        #expect(mixed.target.cdnUrlList == relay.target.cdnUrlList)
    }

    @Test func updateAndStopErrors() throws {
        expectError(ErrorCode.missingParameter, "SequenceNumber") {
            _ = try AdminPublishCdnStreamRequest.parseUpdate(json(#"{"TaskId": "t"}"#))
        }
        expectError(ErrorCode.missingParameter, "TaskId") {
            _ = try AdminPublishCdnStreamRequest.parseUpdate(json(#"{"SequenceNumber": 1}"#))
        }
        expectError(ErrorCode.invalidParameter, "SequenceNumber", "integer") {
            _ = try AdminPublishCdnStreamRequest.parseUpdate(json(#"{"TaskId": "t", "SequenceNumber": "one"}"#))
        }
        expectError(ErrorCode.missingParameter, "TaskId") {
            _ = try AdminPublishCdnStreamRequest.parseStopTaskId(json(#"{"SdkAppId": 1}"#))
        }
        #expect(try AdminPublishCdnStreamRequest.parseStopTaskId(json(#"{"SdkAppId": 1, "TaskId": "task-7"}"#)) == "task-7")
    }
}
