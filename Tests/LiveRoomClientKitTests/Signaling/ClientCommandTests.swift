import LiveRoomProtocol
import Testing

@testable import LiveRoomClientKit

@Suite struct ClientCommandTests {
    @Test func commandsParse() throws {
        #expect(try ClientCommand.parse("custom 2 hello world") == .request(.room(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 2, data: "hello world")))))
        #expect(try ClientCommand.parse("  switch-role anchor ") == .request(.room(.switchRole(.anchor))))
        #expect(try ClientCommand.parse("request-mic") == .request(.room(.requestMic)))
        #expect(try ClientCommand.parse("accept-mic fan") == .request(.room(.acceptMic(userId: "fan"))))
        #expect(try ClientCommand.parse("reject-mic fan") == .request(.room(.rejectMic(userId: "fan"))))
        #expect(try ClientCommand.parse("invite-mic fan") == .request(.room(.inviteMic(userId: "fan"))))
        #expect(try ClientCommand.parse("accept-invite") == .request(.room(.acceptInvitation)))
        #expect(try ClientCommand.parse("reject-invite") == .request(.room(.rejectInvitation)))
        #expect(try ClientCommand.parse("end-mic fan") == .request(.room(.endMic(userId: "fan"))))
        #expect(try ClientCommand.parse("leave") == .leave)
        #expect(try ClientCommand.parse("") == nil)
        #expect(try ClientCommand.parse("# a comment") == nil)
    }

    @Test(arguments: ["dance", "custom", "custom x hi", "custom 1", "switch-role king", "accept-mic", "accept-mic a b", "leave now"])
    func badCommandsAreErrors(line: String) {
        #expect(throws: LiveRoomError.self) { try ClientCommand.parse(line) }
    }

    @Test func publishMediaStreamCommandsParse() throws {
        let target: JSONValue = ["mode": 3, "cdnUrlList": [["rtmpUrl": "rtmp://cdn.example/live/s1"]]]
        let mixing: JSONValue = ["videoLayoutList": [["rect": ["left": 0, "top": 0, "right": 640, "bottom": 360]]]]
        #expect(
            try ClientCommand.parse(#"start-publish {"target": {"mode": 3, "cdnUrlList": [{"rtmpUrl": "rtmp://cdn.example/live/s1"}]}}"#)
                == .request(.publishTask(.startPublishMediaStream(target: target, encoderParam: nil, mixingConfig: nil))))
        #expect(
            try ClientCommand.parse(
                #"start-publish {"target":{"mode":3,"cdnUrlList":[{"rtmpUrl":"rtmp://cdn.example/live/s1"}]},"encoderParam":{"videoEncodedKbps":800},"mixingConfig":{"videoLayoutList":[{"rect":{"left":0,"top":0,"right":640,"bottom":360}}]}}"#)
                == .request(.publishTask(.startPublishMediaStream(target: target, encoderParam: ["videoEncodedKbps": 800], mixingConfig: mixing))))
        #expect(
            try ClientCommand.parse(#"update-publish t1  {"encoderParam": {"videoEncodedKbps": 900}}"#)
                == .request(.publishTask(.updatePublishMediaStream(taskId: "t1", target: nil, encoderParam: ["videoEncodedKbps": 900], mixingConfig: nil))))
        #expect(
            try ClientCommand.parse(#"update-publish t1 {}"#)
                == .request(.publishTask(.updatePublishMediaStream(taskId: "t1", target: nil, encoderParam: nil, mixingConfig: nil))))
        #expect(try ClientCommand.parse("stop-publish t1") == .request(.publishTask(.stopPublishMediaStream(taskId: "t1"))))
        #expect(try ClientCommand.parse("stop-publish") == .request(.publishTask(.stopPublishMediaStream(taskId: ""))))
    }

    @Test(arguments: [
        ("start-publish", ErrorCode.missingField),
        ("start-publish {", ErrorCode.malformedJSON),
        ("start-publish [1]", ErrorCode.invalidField),
        (#"start-publish {"encoderParam":{}}"#, ErrorCode.missingField),
        (#"start-publish {"target":"rtmp://cdn/live/s"}"#, ErrorCode.invalidField),
        (#"start-publish {"target":{},"encodeParam":{}}"#, ErrorCode.invalidField),
        (#"start-publish {"target":{},"mixingConfig":[]}"#, ErrorCode.invalidField),
        ("update-publish", ErrorCode.missingField),
        ("update-publish t1", ErrorCode.missingField),
        (#"update-publish {"target":{}}"#, ErrorCode.missingField),
        ("update-publish t1 nope", ErrorCode.malformedJSON),
        (#"update-publish t1 {"taskId":"t2"}"#, ErrorCode.invalidField),
        (#"update-publish t1 {"target":5}"#, ErrorCode.invalidField),
        ("stop-publish t1 t2", ErrorCode.invalidField),
    ])
    func badPublishCommandsSayWhy(line: String, code: Int) {
        do {
            _ = try ClientCommand.parse(line)
            Issue.record("parsed \(line)")
        } catch {
            #expect(error.code == code)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func usageListsThePublishCommands() {
        for command in ["start-publish <json>", "update-publish <task> <json>", "stop-publish [task]"] {
            #expect(ClientCommand.usage.contains(command))
        }
    }

    @Test func signalingURL() throws {
        #expect(try JoinOptions.signalingURL(server: "http://127.0.0.1:7880") == "ws://127.0.0.1:7880/ws")
        #expect(try JoinOptions.signalingURL(server: "https://live.example/") == "wss://live.example/ws")
        #expect(try JoinOptions.signalingURL(server: "https://localhost:7443") == "wss://localhost:7443/ws")
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURL(server: "https://127.0.0.1:7443") }
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURL(server: "https://[::1]:7443/") }
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURL(server: "127.0.0.1:7880") }
    }

    @Test func readableEvents() {
        let line = EventPrinter.readable(["event": "onRecvCustomCmdMsg", "userId": "a", "cmdID": 1, "seq": 2, "data": "hi there"])
        #expect(line == #"onRecvCustomCmdMsg cmdID=1 data="hi there" seq=2 userId=a"#)
    }

    @Test func readablePublishMediaStreamEvents() {
        let started = EventPrinter.readable(ServerEvent.onStartPublishMediaStream(taskId: "t1", code: 0, message: "").json)
        #expect(started == #"onStartPublishMediaStream code=0 message="" taskId=t1"#)
        let pushing = EventPrinter.readable(
            ServerEvent.onCdnStreamStateChanged(taskId: "t1", cdnUrl: "rtmp://cdn/live/s", status: 2, code: 0, message: "").json)
        #expect(pushing == #"onCdnStreamStateChanged cdnUrl=rtmp://cdn/live/s code=0 message="" status=2(pushing) taskId=t1"#)
        let failed = EventPrinter.readable(
            ServerEvent.onCdnStreamStateChanged(taskId: "t1", cdnUrl: "rtmp://cdn/live/s", status: 4, code: -7201, message: "refused").json)
        #expect(failed == #"onCdnStreamStateChanged cdnUrl=rtmp://cdn/live/s code=-7201 message=refused status=4(failed) taskId=t1"#)
        // Other events keep a field called status as it is.
        #expect(EventPrinter.readable(["event": "onSomething", "status": 2]) == "onSomething status=2")
    }
}
