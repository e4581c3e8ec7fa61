import Testing

@testable import LiveRoomProtocol

@Suite struct ServerEventTests {
    /// One of every case, each as the server encodes it.
    static let everyEvent: [(ServerEvent, String)] = [
        (.onEnterRoom(result: 12), #"{"event":"onEnterRoom","result":12}"#),
        (.onEnterRoom(result: -3320, errMsg: "bad sig"), #"{"errMsg":"bad sig","event":"onEnterRoom","result":-3320}"#),
        (.onExitRoom(reason: 1), #"{"event":"onExitRoom","reason":1}"#),
        (.onRemoteUserEnterRoom(userId: "a"), #"{"event":"onRemoteUserEnterRoom","userId":"a"}"#),
        (.onRemoteUserLeaveRoom(userId: "a", reason: 3), #"{"event":"onRemoteUserLeaveRoom","reason":3,"userId":"a"}"#),
        (.onSwitchRole(errCode: 0, errMsg: "", role: .anchor), #"{"errCode":0,"errMsg":"","event":"onSwitchRole","role":"anchor"}"#),
        (.onMicRequest(userId: "fan"), #"{"event":"onMicRequest","userId":"fan"}"#),
        (.onMicRequestResult(userId: "host", accepted: true, reason: ""), #"{"accepted":true,"event":"onMicRequestResult","reason":"","userId":"host"}"#),
        (.onMicInvitation(userId: "host"), #"{"event":"onMicInvitation","userId":"host"}"#),
        (.onMicInvitationResult(userId: "fan", accepted: false, reason: "busy"), #"{"accepted":false,"event":"onMicInvitationResult","reason":"busy","userId":"fan"}"#),
        (.onRecvCustomCmdMsg(userId: "a", cmdID: 1, seq: 2, data: "d"), #"{"cmdID":1,"data":"d","event":"onRecvCustomCmdMsg","seq":2,"userId":"a"}"#),
        (.onPublishAnswer(sdp: "v=0\r\n"), #"{"event":"onPublishAnswer","sdp":"v=0\r\n"}"#),
        (.onSubscribeAnswer(userId: "host", sdp: "v=0\r\n"), #"{"event":"onSubscribeAnswer","sdp":"v=0\r\n","userId":"host"}"#),
        (.onIceRestartAnswer(userId: "host", sdp: "v=0\r\n"), #"{"event":"onIceRestartAnswer","sdp":"v=0\r\n","userId":"host"}"#),
        (.onIceRestartAnswer(userId: nil, sdp: "v=0\r\n"), #"{"event":"onIceRestartAnswer","sdp":"v=0\r\n"}"#),
        (.onUserVideoAvailable(userId: "host", available: true), #"{"available":true,"event":"onUserVideoAvailable","userId":"host"}"#),
        (.onUserAudioAvailable(userId: "host", available: false), #"{"available":false,"event":"onUserAudioAvailable","userId":"host"}"#),
        (.onStartPublishMediaStream(taskId: "t1", code: 0, message: "ok"), #"{"code":0,"event":"onStartPublishMediaStream","message":"ok","taskId":"t1"}"#),
        (.onUpdatePublishMediaStream(taskId: "t1", code: -7223, message: "resolution"), #"{"code":-7223,"event":"onUpdatePublishMediaStream","message":"resolution","taskId":"t1"}"#),
        (.onStopPublishMediaStream(taskId: "", code: 0, message: "ok"), #"{"code":0,"event":"onStopPublishMediaStream","message":"ok","taskId":""}"#),
        (.onCdnStreamStateChanged(taskId: "t1", cdnUrl: "rtmp://cdn/live/s", status: 4, code: -7228, message: "refused"),
         #"{"cdnUrl":"rtmp://cdn/live/s","code":-7228,"event":"onCdnStreamStateChanged","message":"refused","status":4,"taskId":"t1"}"#),
        (.onProductList(products: [["itemNumber": 1]], offset: 100, total: 101), #"{"event":"onProductList","offset":100,"products":[{"itemNumber":1}],"total":101}"#),
        (.onProductResult(request: "addProduct", itemNumber: 1, code: 0, message: "ok", product: ["itemNumber": 1]),
         #"{"code":0,"event":"onProductResult","itemNumber":1,"message":"ok","product":{"itemNumber":1},"request":"addProduct"}"#),
        (.onProductResult(request: "removeProduct", itemNumber: 2, code: -7301, message: "none", product: nil),
         #"{"code":-7301,"event":"onProductResult","itemNumber":2,"message":"none","request":"removeProduct"}"#),
        (.onProductChanged(products: [["itemNumber": 1]], removed: [2, 3]), #"{"event":"onProductChanged","products":[{"itemNumber":1}],"removed":[2,3]}"#),
        (.onPopProduct(itemNumber: 1, code: 0, message: "ok", data: "{}"), #"{"code":0,"data":"{}","event":"onPopProduct","itemNumber":1,"message":"ok"}"#),
        (.onPopUpChanged(userId: "host", itemNumber: 1, data: "{}"), #"{"data":"{}","event":"onPopUpChanged","itemNumber":1,"userId":"host"}"#),
        (.onShopOwners(owners: ["fan", "host"]), #"{"event":"onShopOwners","owners":["fan","host"]}"#),
        (
            .onBuyResult(itemNumber: 1, quantity: 2, code: 0, message: "ok", orderId: "o1", stockLeft: 98, requestId: "r1"),
            #"{"code":0,"event":"onBuyResult","itemNumber":1,"message":"ok","orderId":"o1","quantity":2,"requestId":"r1","stockLeft":98}"#
        ),
        (
            .onBuyResult(itemNumber: 1, quantity: 1, code: -7310, message: "item 1 is sold out", orderId: nil, stockLeft: nil, requestId: nil),
            #"{"code":-7310,"event":"onBuyResult","itemNumber":1,"message":"item 1 is sold out","quantity":1}"#
        ),
        (
            .onProductSold(sales: [ProductSale(itemNumber: 1, quantity: 40, stockLeft: 60)]),
            #"{"event":"onProductSold","sales":[{"itemNumber":1,"quantity":40,"stockLeft":60}]}"#
        ),
        (.onConnectOtherRoom(userId: "b", errCode: 0, errMsg: ""), #"{"errCode":0,"errMsg":"","event":"onConnectOtherRoom","userId":"b"}"#),
        (.onDisconnectOtherRoom(errCode: -102042, errMsg: "you have no PK link"), #"{"errCode":-102042,"errMsg":"you have no PK link","event":"onDisconnectOtherRoom"}"#),
        (.onUpdateOtherRoomForwardMode(errCode: 0, errMsg: ""), #"{"errCode":0,"errMsg":"","event":"onUpdateOtherRoomForwardMode"}"#),
        (.onPKRequest(userId: "a", room: .number(7), timeoutSec: 30), #"{"event":"onPKRequest","roomId":7,"timeoutSec":30,"userId":"a"}"#),
        (.onPKAllowList(rooms: [.string("b"), .number(7)]), #"{"event":"onPKAllowList","rooms":[{"strRoomId":"b"},{"roomId":7}]}"#),
        (.onPKBattle(name: "onPKBattleStarted", fields: ["battleId": "pk-1"]), #"{"battleId":"pk-1","event":"onPKBattleStarted"}"#),
        (.onPKBattle(name: "onPKBattleScore", fields: ["battleId": "pk-1"]), #"{"battleId":"pk-1","event":"onPKBattleScore"}"#),
        (.onPKBattle(name: "onPKBattleEnded", fields: ["battleId": "pk-1"]), #"{"battleId":"pk-1","event":"onPKBattleEnded"}"#),
        (.onError(errCode: -7101, errMsg: "m", requestType: "x"), #"{"errCode":-7101,"errMsg":"m","event":"onError","requestType":"x"}"#),
        (.onError(errCode: -7001, errMsg: "enter a room first", requestType: nil), #"{"errCode":-7001,"errMsg":"enter a room first","event":"onError"}"#),
    ]

    @Test func everyEventRoundTripsBothWays() throws {
        #expect(Set(Self.everyEvent.map(\.0.name)) == Set(ServerEvent.names))
        for (event, text) in Self.everyEvent {
            #expect(event.json.jsonText == text)
            #expect(try ServerEvent.parse(text) == event)
            #expect(try ServerEvent.parse(event.json) == event)
        }
    }

    @Test func fieldsAnEventDoesNotHaveAreIgnored() throws {
        #expect(try ServerEvent.parse(#"{"event":"onExitRoom","reason":0,"since":"v2"}"#) == .onExitRoom(reason: 0))
    }

    @Test(arguments: [
        ("{not json", ErrorCode.malformedJSON, "not valid JSON"),
        (#"["onExitRoom"]"#, ErrorCode.invalidField, "JSON object"),
        (#"{"reason":0}"#, ErrorCode.missingField, "missing field event"),
        (#"{"event":"onStatistics"}"#, ErrorCode.unknownRequest, "onStatistics"),
        (#"{"event":"onExitRoom"}"#, ErrorCode.missingField, "missing field reason"),
        (#"{"event":"onExitRoom","reason":"gone"}"#, ErrorCode.invalidField, "reason must be an integer, not string"),
        (#"{"event":"onSwitchRole","errCode":0,"errMsg":"","role":"king"}"#, ErrorCode.invalidField, "role"),
        (#"{"event":"onUserVideoAvailable","userId":"a","available":1}"#, ErrorCode.invalidField, "available must be a boolean"),
    ])
    func badEventsNameTheProblem(text: String, code: Int, fragment: String) {
        do {
            _ = try ServerEvent.parse(text)
            Issue.record("parsed \(text)")
        } catch {
            #expect(error.code == code)
            #expect(error.message.contains(fragment), "\(error.message)")
        }
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

