import Foundation
import LiveRoomProtocol
import Testing

@testable import LiveRoomClientKit

@Suite struct ClientCommandTests {
    /// `liveroom join --help` prints the table as written: the argument parser wraps any line
    /// over 80 columns, which breaks the table's columns.
    @Test func theCommandTableFitsIn80Columns() {
        let long = ClientCommand.usage.split(separator: "\n").map(String.init).filter { $0.count > 80 }
        #expect(long.isEmpty, "\(long)")
    }

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

    @Test func seiCommandsParse() throws {
        func sei(_ text: String, _ repeatCount: Int = 1) -> ClientCommand { .sendSEI(data: Array(text.utf8), repeatCount: repeatCount) }
        #expect(try ClientCommand.parse("sei hello") == sei("hello"))
        #expect(try ClientCommand.parse("sei hello  world ") == sei("hello  world"))
        #expect(try ClientCommand.parse("sei hello world 5") == sei("hello world", 5))
        #expect(try ClientCommand.parse(#"sei {"product": "A1", "price": 42}  30"#) == sei(#"{"product": "A1", "price": 42}"#, 30))
        #expect(try ClientCommand.parse("sei\tprice\t1") == sei("price", 1))
        // A text that ends in a number takes it as the repeat count; a lone number is the text.
        #expect(try ClientCommand.parse("sei price 42 1") == sei("price 42"))
        #expect(try ClientCommand.parse("sei 42") == sei("42"))
        // The limit is in bytes: 500 two-byte characters make 1000.
        #expect(try ClientCommand.parse("sei " + String(repeating: "é", count: 500)) == sei(String(repeating: "é", count: 500)))
        #expect(try ClientCommand.parse("sei " + String(repeating: "a", count: 1000) + " 2") == sei(String(repeating: "a", count: 1000), 2))

        #expect(try ClientCommand.parse("sei-hex 4c52") == .sendSEI(data: [0x4C, 0x52], repeatCount: 1))
        #expect(try ClientCommand.parse("sei-hex 4C 52 00 fF 3") == .sendSEI(data: [0x4C, 0x52, 0x00, 0xFF], repeatCount: 3))
        #expect(try ClientCommand.parse("sei-hex 00000001") == .sendSEI(data: [0, 0, 0, 1], repeatCount: 1))
        let thousand = String(repeating: "a5", count: 1000)
        #expect(try ClientCommand.parse("sei-hex \(thousand) 30") == .sendSEI(data: Array(repeating: 0xA5, count: 1000), repeatCount: 30))
    }

    @Test(arguments: [
        "sei", "sei ", "sei-hex", "sei 1000 bytes plus 0",
        "sei hello 0", "sei hello 31", "sei hello -1", "sei hello 1000",
        "sei " + String(repeating: "a", count: 1001), "sei " + String(repeating: "€", count: 334) + " 1",
        "sei-hex 4c5", "sei-hex zz", "sei-hex 0x4c", "sei-hex 4c-52", "sei-hex 4c 0", "sei-hex 4c 31",
        "sei-hex " + String(repeating: "ab", count: 1001),
    ])
    func badSEICommandsAreRefusedWithTheSEICode(line: String) {
        do {
            let command = try ClientCommand.parse(line)
            Issue.record("parsed \(line.prefix(40)) as \(String(describing: command).prefix(80))")
        } catch {
            #expect(error.code == ErrorCode.invalidSEIMessage)
            #expect(!error.message.isEmpty)
        }
    }

    /// Fullwidth digits (U+FF10–FF19, U+FF21–FF26, U+FF41–FF46) are `Character.isHexDigit`, but
    /// `UInt8(_:radix:)` reads only ASCII: such a line must be refused, not end the process.
    @Test func fullwidthHexDigitsAreRefusedWithoutACrash() async {
        await #expect(processExitsWith: .success) {
            for line in ["sei-hex ａａ", "sei-hex ４２", "sei-hex 4c５２ 2"] {
                do {
                    _ = try ClientCommand.parse(line)
                    exit(1)
                } catch let error as LiveRoomError {
                    if error.code != ErrorCode.invalidSEIMessage { exit(2) }
                } catch {
                    exit(3)
                }
            }
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

    @Test func severalServersAreTriedInTheirOrder() throws {
        #expect(
            try JoinOptions.signalingURLs(server: "http://10.0.0.1:7880, http://10.0.0.2:7880/,ws://10.0.0.3:7880")
                == ["ws://10.0.0.1:7880/ws", "ws://10.0.0.2:7880/ws", "ws://10.0.0.3:7880/ws"])
        #expect(try JoinOptions.signalingURLs(server: "http://127.0.0.1:7880") == ["ws://127.0.0.1:7880/ws"])
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURLs(server: "http://a:1,,http://b:1") }
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURLs(server: "http://a:1,") }
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURLs(server: "http://a:1,b:1") }
        let many = Array(repeating: "http://a:1", count: JoinOptions.maxServers + 1).joined(separator: ",")
        #expect(throws: LiveRoomError.self) { try JoinOptions.signalingURLs(server: many) }
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

@Suite struct ShopCommandTests {
    @Test func buyTakesAnItemAQuantityAndARequestId() throws {
        #expect(try ClientCommand.parse("buy 3") == .request(.room(.buyProduct(itemNumber: 3, quantity: 1, requestId: nil))))
        #expect(try ClientCommand.parse("buy 3 2") == .request(.room(.buyProduct(itemNumber: 3, quantity: 2, requestId: nil))))
        #expect(try ClientCommand.parse("buy 3 2 order-7") == .request(.room(.buyProduct(itemNumber: 3, quantity: 2, requestId: "order-7"))))
        for line in ["buy", "buy tea", "buy 3 two", "buy 3 2 a b"] {
            #expect(throws: LiveRoomError.self, "\(line)") { try ClientCommand.parse(line) }
        }
    }

    @Test func productCommandsBecomeAdminCalls() throws {
        let add = try ClientCommand.productAdminCall(#"add {"itemNumber":1,"title":"Tea"}"#, room: .string("shop"))
        #expect(add.action == "AddProduct" && add.body == ["RoomId": "shop", "Product": ["itemNumber": 1, "title": "Tea"]])
        let edit = try ClientCommand.productAdminCall(#"edit 1 {"stock":5,"version":2}"#, room: .number(7))
        #expect(edit.action == "ModifyProduct" && edit.body == ["RoomId": 7, "ItemNumber": 1, "Changes": ["stock": 5, "version": 2]])
        #expect(try ClientCommand.productAdminCall("remove 4", room: .string("shop")).body == ["RoomId": "shop", "ItemNumber": 4])
        #expect(try ClientCommand.productAdminCall("list", room: .string("shop")).action == "DescribeProducts")
        #expect(throws: LiveRoomError.self) { try ClientCommand.productAdminCall("sell 4", room: .string("shop")) }
    }
}
