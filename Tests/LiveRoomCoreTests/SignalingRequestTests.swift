import Testing

@testable import LiveRoomCore

@Suite struct SignalingRequestTests {
    @Test func everyRequestRoundTrips() throws {
        let requests: [SignalingRequest] = [
            .enterRoom(EnterRoomParams(sdkAppId: 1_400_000_000, userId: "u", userSig: "s", strRoomId: "r", role: .anchor)),
            .exitRoom, .switchRole(.audience), .requestMic, .acceptMic(userId: "a"), .rejectMic(userId: "b"),
            .inviteMic(userId: "c"), .acceptInvitation, .rejectInvitation, .endMic(userId: "d"),
            .sendCustomCmdMsg(CustomCmdMsg(cmdID: 3, data: "{\"cmd\":\"item_popup_msg\"}", reliable: true, ordered: false)),
            .publish(sdp: "v=0\r\n"), .unpublish, .subscribe(userId: "a", sdp: "v=0\r\n"), .unsubscribe(userId: "a"),
            .muteLocalVideo(true), .muteLocalAudio(false),
            .startPublishMediaStream(target: Self.cdnTarget, encoderParam: Self.encoderParam, mixingConfig: Self.mixingConfig),
            .startPublishMediaStream(target: Self.cdnTarget, encoderParam: nil, mixingConfig: nil),
            .updatePublishMediaStream(taskId: "t1", target: nil, encoderParam: nil, mixingConfig: Self.mixingConfig),
            .updatePublishMediaStream(taskId: "t1", target: Self.cdnTarget, encoderParam: Self.encoderParam, mixingConfig: nil),
            .stopPublishMediaStream(taskId: "t1"), .stopPublishMediaStream(taskId: ""),
        ]
        #expect(Set(requests.map(\.type)) == Set(SignalingRequest.types))
        for request in requests {
            #expect(try SignalingRequest.parse(request.json.jsonText) == request)
        }
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
        #expect(start == .startPublishMediaStream(target: ["mode": 1, "extra": [1, "a"]], encoderParam: nil, mixingConfig: nil))
        #expect(start.json.jsonText == #"{"target":{"extra":[1,"a"],"mode":1},"type":"startPublishMediaStream"}"#)

        let update = try SignalingRequest.parse(#"{"type":"updatePublishMediaStream","taskId":"t9","encoderParam":{"videoEncodedKbps":900}}"#)
        #expect(update == .updatePublishMediaStream(taskId: "t9", target: nil, encoderParam: ["videoEncodedKbps": 900], mixingConfig: nil))
        #expect(update.json.jsonText == #"{"encoderParam":{"videoEncodedKbps":900},"taskId":"t9","type":"updatePublishMediaStream"}"#)

        // No taskId (or null) stops every task of the user.
        #expect(try SignalingRequest.parse(#"{"type":"stopPublishMediaStream"}"#) == .stopPublishMediaStream(taskId: ""))
        #expect(try SignalingRequest.parse(#"{"type":"stopPublishMediaStream","taskId":null}"#) == .stopPublishMediaStream(taskId: ""))
        #expect(SignalingRequest.stopPublishMediaStream(taskId: "t9").json.jsonText == #"{"taskId":"t9","type":"stopPublishMediaStream"}"#)
    }

    @Test func publishMediaStreamEventsEncode() {
        #expect(ServerEvent.onStartPublishMediaStream(taskId: "t1", code: 0, message: "").json.jsonText
            == #"{"code":0,"event":"onStartPublishMediaStream","message":"","taskId":"t1"}"#)
        #expect(ServerEvent.onUpdatePublishMediaStream(taskId: "t1", code: -7223, message: "resolution").json.jsonText
            == #"{"code":-7223,"event":"onUpdatePublishMediaStream","message":"resolution","taskId":"t1"}"#)
        #expect(ServerEvent.onStopPublishMediaStream(taskId: "", code: 0, message: "").json.jsonText
            == #"{"code":0,"event":"onStopPublishMediaStream","message":"","taskId":""}"#)
        #expect(ServerEvent.onCdnStreamStateChanged(taskId: "t1", cdnUrl: "rtmp://cdn/live/s", status: 2, code: 0, message: "").json.jsonText
            == #"{"cdnUrl":"rtmp://cdn/live/s","code":0,"event":"onCdnStreamStateChanged","message":"","status":2,"taskId":"t1"}"#)
        #expect((0...4).compactMap(ServerEvent.cdnStreamStatusName) == ["stopped", "connecting", "pushing", "reconnecting", "failed"])
        #expect(ServerEvent.cdnStreamStatusName(5) == nil)
    }

    @Test func eventsEncodeWithTheirCallbackName() {
        #expect(ServerEvent.onEnterRoom(result: 12).json.jsonText == #"{"event":"onEnterRoom","result":12}"#)
        #expect(ServerEvent.onRecvCustomCmdMsg(userId: "a", cmdID: 1, seq: 2, data: "d").json.jsonText
            == #"{"cmdID":1,"data":"d","event":"onRecvCustomCmdMsg","seq":2,"userId":"a"}"#)
        #expect(ServerEvent.error(LiveRoomError(-7101, "m"), requestType: "x").json.jsonText
            == #"{"errCode":-7101,"errMsg":"m","event":"onError","requestType":"x"}"#)
    }
}

@Suite struct PriorityOutboxTests {
    @Test func highOvertakesQueuedNormal() {
        var box = PriorityOutbox<Int>()
        box.push(1, priority: .normal)
        box.push(2, priority: .normal)
        box.push(10, priority: .high)
        box.push(3, priority: .normal)
        box.push(11, priority: .high)
        var out: [Int] = []
        while let x = box.pop() { out.append(x) }
        #expect(out == [10, 11, 1, 2, 3])
        #expect(box.isEmpty)
    }

    @Test func longQueuesCompact() {
        var box = PriorityOutbox<Int>()
        for i in 0..<5000 { box.push(i, priority: .normal) }
        for i in 0..<4000 { #expect(box.pop() == i) }
        #expect(box.count == 1000)
        for i in 4000..<5000 { #expect(box.pop() == i) }
        #expect(box.pop() == nil)
    }
}

@Suite struct TokenBucketTests {
    @Test func refillsWithTimeAndCaps() {
        let t0 = ContinuousClock.now
        var bucket = TokenBucket(capacity: 2, ratePerSecond: 1)
        func can(_ cost: Double, after ms: Int) -> Bool {
            bucket.canTake(cost, now: t0.advanced(by: .milliseconds(ms)))
        }
        #expect(can(2, after: 0))
        bucket.take(2, now: t0)
        #expect(!can(1, after: 0))
        #expect(!can(1, after: 999))
        #expect(can(1, after: 1000))
        #expect(!can(2.5, after: 60_000), "never more than capacity")
        // A clock that goes backwards gives nothing.
        #expect(!can(3, after: 0))
    }
}
