import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HummingbirdWSClient
import LiveRoomAuth
import LiveRoomProtocol
import Logging
import Synchronization
import TestTools
import Testing

/// A client that sends hand-made frames must get errors, and nobody else may notice.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SignalingRobustnessTests {
    /// Sends `frames` on a raw WebSocket, collects what comes back until the server closes or
    /// `frames` run out and a short wait passes.
    static func exchange(_ url: String, frames: [String], settle: Duration = .milliseconds(500)) async throws -> (events: [JSONValue], close: WebSocketCloseFrame?) {
        let received = Locked<[JSONValue]>([])
        let logger = Logger(label: "raw-client")
        let wsURL = url.replacingOccurrences(of: "http://", with: "ws://") + "/ws"
        let close = try await WebSocketClient.connect(url: wsURL, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message, let value = try? JSONValue.parse(text) {
                            received.withLock { $0.append(value) }
                        }
                    }
                }
                for frame in frames {
                    try await outbound.write(.text(frame))
                }
                try await Task.sleep(for: settle)
                group.cancelAll()
            }
        }
        return (received.withLock { $0 }, close)
    }

    @Test func garbageGetsErrorsAndOthersNoticeNothing() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let viewer = try await server.entered("viewer", in: scope)

        let frames = [
            "{this is not json",
            "[1,2,3]",
            #"{"type":"teleport"}"#,
            #"{"no":"type"}"#,
            #"{"type":"acceptMic"}"#,
            #"{"type":"switchRole","role":42}"#,
            #"{"type":"enterRoom","sdkAppId":"abc"}"#,
            #"{"type":"sendCustomCmdMsg","cmdID":1,"data":"x"}"#,  // not in a room yet
            #"{"type":"buyProduct","itemNumber":1}"#,  // not in a room yet: the purchase path checks the seat
        ]
        let (events, _) = try await Self.exchange(server.url, frames: frames)
        let codes = events.compactMap { $0["errCode"]?.intValue }
        #expect(codes == [
            ErrorCode.malformedJSON, ErrorCode.invalidField, ErrorCode.unknownRequest, ErrorCode.missingField,
            ErrorCode.missingField, ErrorCode.invalidField, ErrorCode.invalidField, ErrorCode.notInRoom, ErrorCode.notInRoom,
        ])
        #expect(events.allSatisfy { $0["event"] == "onError" && !($0["errMsg"]?.stringValue ?? "").isEmpty })

        // Inside a room too: garbage after entering does not disturb the room.
        let sig = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "rogue", time: Int64(Date().timeIntervalSince1970), expire: 600).encoded()
        let enter = RoomRequest.enterRoom(EnterRoomParams(sdkAppId: TestServer.sdkAppId, userId: "rogue", userSig: sig, strRoomId: "room1", role: .anchor)).json.jsonText
        let (inRoom, _) = try await Self.exchange(server.url, frames: [enter, "{{{{", #"{"type":"endMic","userId":7}"#])
        #expect(inRoom.first?["event"] == "onEnterRoom")
        #expect(inRoom.compactMap { $0["errCode"]?.intValue } == [ErrorCode.malformedJSON, ErrorCode.invalidField])

        host.send("custom 1 after the garbage")
        try await viewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "after the garbage" }
        #expect(viewer.events(named: "onError").isEmpty)
        #expect(host.events(named: "onError").isEmpty)
    }

    @Test func oversizeFrameClosesOnlyThatConnection() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let viewer = try await server.entered("viewer", in: scope)

        let huge = #"{"type":"sendCustomCmdMsg","cmdID":1,"data":""# + String(repeating: "z", count: 70 * 1024) + #""}"#
        let (_, close) = try await Self.exchange(server.url, frames: [huge], settle: .seconds(2))
        #expect(close?.closeCode == .messageTooLarge, "close frame: \(String(describing: close))")

        host.send("custom 1 still fine")
        try await viewer.waitForEvent("onRecvCustomCmdMsg") { $0["data"] == "still fine" }
    }

    @Test func aConnectionThatNeverEntersARoomIsClosedAtTheLoginDeadline() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--login-timeout", "1"])
        let viewer = try await server.entered("viewer", in: scope)

        // Sends nothing, or only what does not enter a room.
        let (events, close) = try await Self.exchange(server.url, frames: [#"{"type":"requestMic"}"#], settle: .seconds(3))
        #expect(close?.closeCode == .policyViolation, "close frame: \(String(describing: close))")
        #expect(events.compactMap { $0["errCode"]?.intValue } == [ErrorCode.notInRoom, ErrorCode.loginTimeout], "\(events)")

        // A client that entered in time stays past the deadline.
        try await Task.sleep(for: .seconds(1))
        _ = try await server.entered("host", role: "anchor", in: scope)
        try await viewer.waitForEvent("onRemoteUserEnterRoom") { $0["userId"] == "host" }
    }
}

/// The admin REST API with TRTC's names, driven through `liveroom admin` and raw HTTP.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AdminEndToEndTests {
    @Test func describeMessageRemoveDismiss() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        let host = try await server.entered("host", role: "anchor", in: scope)
        let v1 = try await server.entered("v1", in: scope)
        let v2 = try await server.entered("v2", in: scope)

        let (described, status) = try await server.admin("DescribeRoom", ["RoomId": "room1"], in: scope)
        #expect(status == 0)
        let users = described["Response"]?["UserList"]?.arrayValue ?? []
        #expect(users.compactMap { $0["UserId"]?.stringValue } == ["host", "v1", "v2"])
        #expect(users.first?["Role"] == "anchor")
        #expect(described["Response"]?["RequestId"]?.stringValue?.isEmpty == false)

        // A backend operator pushes a product pop-up as an IM group message.
        let popup = #"{"cmd":"item_popup_msg","msg":{"itemNumber":2,"itemPrice":59.9,"itemTitle":"Mug","itemUrl":"https://shop.example/2"}}"#
        let (sent, _) = try await server.admin(
            "v4/group_open_http_svc/send_group_msg",
            ["GroupId": "room1", "Random": 42, "MsgPriority": "High", "MsgBody": [["MsgType": "TIMCustomElem", "MsgContent": ["Data": .string(popup)]]]],
            in: scope)
        #expect(sent["ActionStatus"] == "OK")
        #expect(sent["ErrorCode"] == 0)
        for client in [host, v1, v2] {
            let message = try await client.waitForEvent("onRecvCustomCmdMsg")
            #expect(message["userId"] == "administrator")
            #expect(message["data"]?.stringValue == popup)
        }
        let (noGroup, _) = try await server.admin(
            "v4/group_open_http_svc/send_group_msg",
            ["GroupId": "nope", "MsgBody": [["MsgType": "TIMCustomElem", "MsgContent": ["Data": "x"]]]], in: scope)
        #expect(noGroup["ActionStatus"] == "FAIL")
        #expect(noGroup["ErrorCode"] == 10010)

        let (removed, _) = try await server.admin("RemoveUserByStrRoomId", ["RoomId": "room1", "UserIds": ["v1"]], in: scope)
        #expect(removed["Response"]?["Error"] == nil)
        try await v1.waitForEvent("onExitRoom") { $0["reason"] == 1 }
        #expect(try await v1.waitForExit() == 0)

        let (dismissed, _) = try await server.admin("DismissRoomByStrRoomId", ["RoomId": "room1"], in: scope)
        #expect(dismissed["Response"]?["Error"] == nil)
        try await host.waitForEvent("onExitRoom") { $0["reason"] == 2 }
        try await v2.waitForEvent("onExitRoom") { $0["reason"] == 2 }

        // The history keeps the room, now finished.
        let (history, _) = try await server.admin("DescribeRoomInfo", [:], in: scope)
        let room = history["Response"]?["RoomList"]?.arrayValue?.first
        #expect(room?["RoomString"] == "room1")
        #expect(room?["IsFinished"] == true)
        #expect(room?["DestroyReason"] == "dismissed")
    }

    @Test func badParametersGetCodes() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        func code(_ action: String, _ body: JSONValue) async throws -> String? {
            try await server.admin(action, body, in: scope).0["Response"]?["Error"]?["Code"]?.stringValue
        }
        #expect(try await code("DismissRoomByStrRoomId", ["RoomId": "ghost"]) == "FailedOperation.RoomNotExist")
        #expect(try await code("DismissRoomByStrRoomId", ["RoomId": ""]) == "InvalidParameter.RoomId")
        #expect(try await code("DismissRoomByStrRoomId", ["RoomId": 5]) == "InvalidParameter.RoomId")
        #expect(try await code("DismissRoomByStrRoomId", ["SdkAppId": 1, "RoomId": "r"]) == "InvalidParameter.SdkAppId")
        #expect(try await code("RemoveUserByStrRoomId", ["RoomId": "r", "UserIds": .array((0..<11).map { .string("u\($0)") })]) == "InvalidParameter.UserIds")
        #expect(try await code("RemoveUserByStrRoomId", ["RoomId": "r", "UserIds": "u1"]) == "InvalidParameter.UserIds")
        #expect(try await code("LaunchRocket", [:]) == "InvalidAction")
    }

    @Test func credentialsAreChecked() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope)
        func post(_ query: String, body: String = "{}") async throws -> (Int, JSONValue) {
            var request = URLRequest(url: URL(string: server.url + "/v1/DescribeRoom?" + query)!)
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as! HTTPURLResponse).statusCode, try JSONValue.parse(String(decoding: data, as: UTF8.self)))
        }
        let now = Int64(Date().timeIntervalSince1970)
        let adminSig = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "administrator", time: now, expire: 600).encoded()
        let userSig = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: TestServer.secretKey, identifier: "alice", time: now, expire: 600).encoded()
        let forged = UserSig.make(sdkAppId: TestServer.sdkAppId, secretKey: "guess", identifier: "administrator", time: now, expire: 600).encoded()

        let (missing, missingBody) = try await post("sdkappid=\(TestServer.sdkAppId)&identifier=administrator")
        #expect(missing == 401)
        #expect(missingBody["Response"]?["Error"]?["Message"]?.stringValue?.contains("usersig") == true)
        let (notAdmin, notAdminBody) = try await post("sdkappid=\(TestServer.sdkAppId)&identifier=alice&usersig=\(userSig)")
        #expect(notAdmin == 403)
        #expect(notAdminBody["Response"]?["Error"]?["Message"]?.stringValue?.contains("administrator") == true)
        let (bad, _) = try await post("sdkappid=\(TestServer.sdkAppId)&identifier=administrator&usersig=\(forged)")
        #expect(bad == 403)
        let (wrongApp, _) = try await post("sdkappid=1&identifier=administrator&usersig=\(adminSig)")
        #expect(wrongApp == 403)
        let (ok, okBody) = try await post("sdkappid=\(TestServer.sdkAppId)&identifier=administrator&usersig=\(adminSig)", body: "{not json")
        #expect(ok == 200)
        #expect(okBody["Response"]?["Error"]?["Code"] == "InvalidParameter.JsonParseError")
    }
}
