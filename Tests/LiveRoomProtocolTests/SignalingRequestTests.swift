import Testing

@testable import LiveRoomProtocol

@Suite struct SignalingRequestTests {
    @Test func everyRequestRoundTrips() throws {
        let rooms: [RoomRequest] = [
            .enterRoom(EnterRoomParams(sdkAppId: 1_400_000_000, userId: "u", userSig: "s", strRoomId: "r", role: .anchor)),
            .enterRoom(EnterRoomParams(sdkAppId: 1_400_000_000, userId: "u", userSig: "s", strRoomId: "r", role: .audience, privateMapKey: "k")),
            .enterRoom(EnterRoomParams(sdkAppId: 1_400_000_000, userId: "u", userSig: "s", roomId: 123, role: .anchor)),
            .enterRoom(EnterRoomParams(sdkAppId: 1_400_000_000, userId: "u", userSig: "s", roomId: .max, strRoomId: "r", role: .anchor)),
            .exitRoom, .switchRole(.audience), .requestMic, .acceptMic(userId: "a"), .rejectMic(userId: "b"),
            .inviteMic(userId: "c"), .acceptInvitation, .rejectInvitation, .endMic(userId: "d"),
            .sendCustomCmdMsg(CustomCmdMsg(cmdID: 3, data: "{\"cmd\":\"item_popup_msg\"}", reliable: true, ordered: false)),
            .publish(sdp: "v=0\r\n"), .unpublish, .subscribe(userId: "a", sdp: "v=0\r\n"), .unsubscribe(userId: "a"),
            .restartIce(userId: nil, sdp: "v=0\r\n"), .restartIce(userId: "a", sdp: "v=0\r\n"),
            .muteLocalVideo(true), .muteLocalAudio(false),
            .addProduct(["itemNumber": 1, "title": "Tea"]), .editProduct(itemNumber: 1, changes: ["stock": 5, "version": 1]),
            .removeProduct(itemNumber: 1), .listProducts(offset: 0, limit: 100), .listProducts(offset: 100, limit: 20), .popProduct(itemNumber: 1, custom: true), .popProduct(itemNumber: 2, custom: false),
            .unpopProduct, .buyProduct(itemNumber: 1, quantity: 2, requestId: "r-1"), .buyProduct(itemNumber: 3, quantity: 1, requestId: nil), .removeReplay(replayId: "0123456789abcdef0123456789abcdef"), .shopOwner(userId: "fan", grant: true), .shopOwner(userId: "fan", grant: false),
            .connectOtherRoom(room: .string("shop2"), userId: "anchor2"), .connectOtherRoom(room: .number(42), userId: "anchor3"), .disconnectOtherRoom,
            .updateOtherRoomForwardMode(room: .string("shop2"), mode: .audio), .requestPK(room: .number(7), userId: "a"),
            .answerPK(room: .string("shop2"), userId: "b", accept: true), .answerPK(room: .string("shop2"), userId: "b", accept: false),
            .startPKBattle(durationSec: 60), .setPKAllowList(rooms: [.string("shop2"), .number(7)]), .setPKAllowList(rooms: []),
        ]
        let tasks: [PublishTaskRequest] = [
            .startPublishMediaStream(target: Self.cdnTarget, encoderParam: Self.encoderParam, mixingConfig: Self.mixingConfig),
            .startPublishMediaStream(target: Self.cdnTarget, encoderParam: nil, mixingConfig: nil),
            .updatePublishMediaStream(taskId: "t1", target: nil, encoderParam: nil, mixingConfig: Self.mixingConfig),
            .updatePublishMediaStream(taskId: "t1", target: Self.cdnTarget, encoderParam: Self.encoderParam, mixingConfig: nil),
            .stopPublishMediaStream(taskId: "t1"), .stopPublishMediaStream(taskId: ""),
        ]
        let requests = rooms.map(SignalingRequest.room) + tasks.map(SignalingRequest.publishTask)
        #expect(Set(rooms.map(\.type)) == Set(RoomRequest.types))
        #expect(Set(tasks.map(\.type)) == Set(PublishTaskRequest.types))
        #expect(Set(requests.map(\.type)) == Set(SignalingRequest.types))
        for request in requests {
            #expect(try SignalingRequest.parse(request.json.jsonText) == request)
        }
    }

    @Test func enterRoomWithoutARoleEntersAsAnchorAsTRTCsLiveSceneDoes() throws {
        let request = try SignalingRequest.parse(#"{"type":"enterRoom","sdkAppId":1,"userId":"u","userSig":"s","strRoomId":"r"}"#)
        #expect(request == .room(.enterRoom(EnterRoomParams(sdkAppId: 1, userId: "u", userSig: "s", strRoomId: "r", role: .anchor))))
    }

    @Test func theIntegerRoomIdIsItsOwnNamespaceAndWinsOverStrRoomId() throws {
        func room(_ fields: String) throws -> RoomID {
            guard case .room(.enterRoom(let params)) = try SignalingRequest.parse(#"{"type":"enterRoom","sdkAppId":1,"userId":"u","userSig":"s",\#(fields)}"#) else {
                throw LiveRoomError(0, "not enterRoom")
            }
            return params.room
        }
        #expect(try room(#""roomId":123"#) == .number(123))
        #expect(try room(#""strRoomId":"123""#) == .string("123"))
        #expect(try room(#""roomId":123,"strRoomId":"shop1""#) == .number(123), "TRTC: roomId wins when both are set")
        #expect(try room(#""roomId":0,"strRoomId":"shop1""#) == .string("shop1"), "0 means roomId is not set")
        #expect(try room(#""roomId":4294967295"#) == .number(4_294_967_295))
        // Neither set: an empty string room, which the room core refuses with -3318.
        #expect(try room(#""roomId":0"#) == .string(""))
        #expect(try room(#""roomId":null"#) == .string(""))
        // The wire form of a string room stays as it was: no roomId field.
        let stringRoom = RoomRequest.enterRoom(EnterRoomParams(sdkAppId: 1, userId: "u", userSig: "s", strRoomId: "r", role: .anchor)).json
        #expect(stringRoom["roomId"] == nil && stringRoom["strRoomId"] == "r")
        let numericRoom = RoomRequest.enterRoom(EnterRoomParams(sdkAppId: 1, userId: "u", userSig: "s", room: .number(7), role: .anchor)).json
        #expect(numericRoom["roomId"] == 7 && numericRoom["strRoomId"] == nil)
    }

    @Test(arguments: ["-1", "4294967296", "1e12", "1.5", #""123""#, "true", "[1]", "{}"])
    func aBadIntegerRoomIdIsTRTCsInvalidRoomId(value: String) {
        do {
            _ = try SignalingRequest.parse(#"{"type":"enterRoom","sdkAppId":1,"userId":"u","userSig":"s","strRoomId":"r","roomId":\#(value)}"#)
            Issue.record("parsed roomId \(value)")
        } catch {
            #expect(error.code == ErrorCode.invalidRoomId, "\(value): \(error)")
            #expect(error.field == "roomId" && error.message.hasPrefix("roomId must be"), "\(value): \(error)")
        }
    }

    @Test func roomKeysNeverCollideAndNameTheRoomBack() {
        let rooms: [RoomID] = [.number(123), .string("123"), .number(1), .number(.max), .string("*123"), .string("**1"), .string("shop 1"), .string("*"), .string("")]
        #expect(Set(rooms.map(\.key)).count == rooms.count)
        for room in rooms {
            #expect(RoomID(key: room.key) == room, "\(room)")
        }
        // String rooms keep their ids as keys (the history of existing rooms stays readable).
        #expect(RoomID.string("shop1").key == "shop1")
        #expect(RoomID.number(123).description == "room 123" && RoomID.string("123").description == #"room "123""#)
        #expect(RoomID.number(123).json == 123 && RoomID.string("123").json == "123" && RoomID.number(123).text == "123")
    }

    @Test(arguments: [
        ("{not json", ErrorCode.malformedJSON),
        ("[1,2]", ErrorCode.invalidField),
        ("{}", ErrorCode.missingField),
        ("{\"type\":5}", ErrorCode.invalidField),
        ("{\"type\":\"fly\"}", ErrorCode.unknownRequest),
        ("{\"type\":\"enterRoom\"}", ErrorCode.missingField),
        ("{\"type\":\"enterRoom\",\"sdkAppId\":\"x\"}", ErrorCode.invalidField),
        ("{\"type\":\"enterRoom\",\"sdkAppId\":0}", ErrorCode.invalidSdkAppId),
        ("{\"type\":\"enterRoom\",\"sdkAppId\":1.5}", ErrorCode.invalidField),
        ("{\"type\":\"enterRoom\",\"sdkAppId\":1,\"role\":\"king\"}", ErrorCode.invalidField),
        ("{\"type\":\"enterRoom\",\"sdkAppId\":1,\"scene\":\"call\"}", ErrorCode.invalidField),
        ("{\"type\":\"switchRole\"}", ErrorCode.missingField),
        ("{\"type\":\"acceptMic\",\"userId\":[]}", ErrorCode.invalidField),
        ("{\"type\":\"sendCustomCmdMsg\",\"cmdID\":1}", ErrorCode.missingField),
        ("{\"type\":\"sendCustomCmdMsg\",\"cmdID\":1,\"data\":\"x\",\"reliable\":\"yes\"}", ErrorCode.invalidField),
        (#"{"type":"startPublishMediaStream"}"#, ErrorCode.missingField),
        (#"{"type":"startPublishMediaStream","target":null}"#, ErrorCode.missingField),
        (#"{"type":"startPublishMediaStream","target":"rtmp://cdn/live/s"}"#, ErrorCode.invalidField),
        (#"{"type":"startPublishMediaStream","target":[]}"#, ErrorCode.invalidField),
        (#"{"type":"startPublishMediaStream","target":{},"encoderParam":3}"#, ErrorCode.invalidField),
        (#"{"type":"startPublishMediaStream","target":{},"mixingConfig":true}"#, ErrorCode.invalidField),
        (#"{"type":"updatePublishMediaStream","target":{}}"#, ErrorCode.missingField),
        (#"{"type":"updatePublishMediaStream","taskId":7}"#, ErrorCode.invalidField),
        (#"{"type":"updatePublishMediaStream","taskId":"t","target":"x"}"#, ErrorCode.invalidField),
        (#"{"type":"stopPublishMediaStream","taskId":{}}"#, ErrorCode.invalidField),
        (#"{"type":"updateOtherRoomForwardMode","strRoomId":"b","mode":"loud"}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"updateOtherRoomForwardMode","strRoomId":"b"}"#, ErrorCode.missingField),
        (#"{"type":"connectOtherRoom","roomId":4294967296,"userId":"u"}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"connectOtherRoom","strRoomId":7,"userId":"u"}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"startPKBattle"}"#, ErrorCode.missingField),
        // A catalogue page is 1–100 products from an offset of 0–10000.
        (#"{"type":"listProducts","limit":0}"#, ErrorCode.invalidField),
        (#"{"type":"listProducts","limit":101}"#, ErrorCode.invalidField),
        (#"{"type":"listProducts","offset":-1}"#, ErrorCode.invalidField),
        (#"{"type":"listProducts","offset":10001}"#, ErrorCode.invalidField),
        // A PK allow-list is an array of at most 20 rooms, each naming one.
        (#"{"type":"setPKAllowList"}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"setPKAllowList","rooms":"b"}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"setPKAllowList","rooms":[{}]}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"setPKAllowList","rooms":["b"]}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"setPKAllowList","rooms":[{"roomId":4294967296}]}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"setPKAllowList","rooms":[{"strRoomId":"r0"},{"strRoomId":"r1"},{"strRoomId":"r2"},{"strRoomId":"r3"},{"strRoomId":"r4"},{"strRoomId":"r5"},{"strRoomId":"r6"},{"strRoomId":"r7"},{"strRoomId":"r8"},{"strRoomId":"r9"},{"strRoomId":"r10"},{"strRoomId":"r11"},{"strRoomId":"r12"},{"strRoomId":"r13"},{"strRoomId":"r14"},{"strRoomId":"r15"},{"strRoomId":"r16"},{"strRoomId":"r17"},{"strRoomId":"r18"},{"strRoomId":"r19"},{"strRoomId":"r20"}]}"#, ErrorCode.pkInvalidParameter),
        (#"{"type":"startPKBattle","durationSec":"long"}"#, ErrorCode.invalidPKBattle),
        // A purchase's quantity and request id are range-checked where they are read.
        (#"{"type":"buyProduct","itemNumber":1,"quantity":0}"#, ErrorCode.invalidPurchase),
        (#"{"type":"buyProduct","itemNumber":1,"quantity":101}"#, ErrorCode.invalidPurchase),
        (#"{"type":"buyProduct","itemNumber":1,"quantity":-9223372036854775808}"#, ErrorCode.invalidPurchase),
        (#"{"type":"buyProduct","itemNumber":"one"}"#, ErrorCode.invalidPurchase),
        (#"{"type":"buyProduct","itemNumber":1,"requestId":""}"#, ErrorCode.invalidPurchase),
        (#"{"type":"buyProduct","itemNumber":1,"requestId":"\#(String(repeating: "r", count: 65))"}"#, ErrorCode.invalidPurchase),
    ])
    func badMessagesNameTheProblem(text: String, code: Int) {
        do {
            _ = try SignalingRequest.parse(text)
            Issue.record("parsed \(text)")
        } catch {
            #expect(error.code == code)
            #expect(!error.message.isEmpty)
        }
    }

    static let cdnTarget: JSONValue = ["mode": 3, "cdnUrlList": [["rtmpUrl": "rtmp://cdn.example/live/s1", "isInternalLine": false]]]
    static let encoderParam: JSONValue = ["videoEncodedWidth": 640, "videoEncodedHeight": 360, "videoEncodedKbps": 800]
    static let mixingConfig: JSONValue = [
        "backgroundColor": 0x202020,
        "videoLayoutList": [["rect": ["left": 0, "top": 0, "right": 640, "bottom": 360], "zOrder": 0, "fixedVideoUser": ["userId": "host"]]],
    ]

    @Test func publishMediaStreamRequestsKeepTheirObjects() throws {
        let start = try SignalingRequest.parse(
            #"{"type":"startPublishMediaStream","target":{"mode":1,"extra":[1,"a"]},"encoderParam":null}"#)
        #expect(start == .publishTask(.startPublishMediaStream(target: ["mode": 1, "extra": [1, "a"]], encoderParam: nil, mixingConfig: nil)))
        #expect(start.json.jsonText == #"{"target":{"extra":[1,"a"],"mode":1},"type":"startPublishMediaStream"}"#)

        let update = try SignalingRequest.parse(#"{"type":"updatePublishMediaStream","taskId":"t9","encoderParam":{"videoEncodedKbps":900}}"#)
        #expect(update == .publishTask(.updatePublishMediaStream(taskId: "t9", target: nil, encoderParam: ["videoEncodedKbps": 900], mixingConfig: nil)))
        #expect(update.json.jsonText == #"{"encoderParam":{"videoEncodedKbps":900},"taskId":"t9","type":"updatePublishMediaStream"}"#)

        // No taskId (or null) stops every task of the user.
        #expect(try SignalingRequest.parse(#"{"type":"stopPublishMediaStream"}"#) == .publishTask(.stopPublishMediaStream(taskId: "")))
        #expect(try SignalingRequest.parse(#"{"type":"stopPublishMediaStream","taskId":null}"#) == .publishTask(.stopPublishMediaStream(taskId: "")))
        #expect(PublishTaskRequest.stopPublishMediaStream(taskId: "t9").json.jsonText == #"{"taskId":"t9","type":"stopPublishMediaStream"}"#)
    }

    /// The publish media stream requests belong to the server's publish task service, the
    /// others to the room core: parsing sorts them apart, so the room core never sees a task request.
    @Test func parsingSortsRoomRequestsFromPublishTaskRequests() throws {
        for type in RoomRequest.types {
            let request = try? SignalingRequest.parse(["type": .string(type)])
            if case .publishTask = request { Issue.record("\(type) parsed as a publish task request") }
        }
        let taskRequests: [JSONValue] = [
            ["type": "startPublishMediaStream", "target": ["mode": 1]],
            ["type": "updatePublishMediaStream", "taskId": "t1", "encoderParam": ["videoEncodedKbps": 900]],
            ["type": "stopPublishMediaStream"],
        ]
        for json in taskRequests {
            let request = try SignalingRequest.parse(json)
            guard case .publishTask = request else {
                Issue.record("\(json.jsonText) did not parse as a publish task request")
                continue
            }
        }
        #expect(Set(SignalingRequest.types) == Set(RoomRequest.types).union(PublishTaskRequest.types))
        #expect(Set(RoomRequest.types).isDisjoint(with: PublishTaskRequest.types))
    }
}
