import Crypto
import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomProtocol
import Testing

@testable import LiveRoomWebhooks

/// Webhook bodies: TRTC's field names and values for each event type, exact bytes.
@Suite struct WebhookBodyTests {
    let at: Int64 = 1_700_000_000_456
    let now: Int64 = 1_700_000_001_789

    func text(_ event: WebhookEvent) -> String {
        String(decoding: event.body(callbackTs: 1_700_000_002_000, uniqueId: 42), as: UTF8.self)
    }

    func object(_ event: WebhookEvent) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(event.body(callbackTs: 1, uniqueId: 7))) as? [String: Any])
    }

    @Test func enterRoomIsTRTCsShapeByteForByte() {
        let events = WebhookEvents.events(from: [.userEntered(roomId: "shop1", userId: "alice", role: .anchor, at: at)], now: now)
        #expect(events.count == 1)
        #expect(
            text(events[0])
                == #"{"EventGroupId":1,"EventType":103,"CallbackTs":1700000002000,"EventInfo":{"RoomId":"shop1","EventTs":1700000000,"UniqueId":42,"UserId":"alice","Role":20,"TerminalType":0,"UserType":0}}"#)
    }

    @Test func aNumericRoomsIdIsANumber() {
        let events = WebhookEvents.events(from: [.userEntered(roomId: RoomID.number(123).key, userId: "bob", role: .audience, at: at)], now: now)
        #expect(
            text(events[0])
                == #"{"EventGroupId":1,"EventType":103,"CallbackTs":1700000002000,"EventInfo":{"RoomId":123,"EventTs":1700000000,"UniqueId":42,"UserId":"bob","Role":21,"TerminalType":0,"UserType":0}}"#)
        // A string room whose id is digits stays a string.
        let digits = WebhookEvents.events(from: [.userEntered(roomId: "123", userId: "bob", role: .audience, at: at)], now: now)
        #expect(text(digits[0]).contains(#""RoomId":"123""#))
    }

    @Test func everyRoomEventType() throws {
        let records: [RoomRecord] = [
            .roomCreated(roomId: "r", at: at),
            .userEntered(roomId: "r", userId: "host", role: .anchor, at: at),
            .roleChanged(roomId: "r", userId: "fan", role: .anchor, at: at),
            .userLeft(roomId: "r", userId: "fan", at: at, reason: "exit"),
            .userLeft(roomId: "r", userId: "a", at: at, reason: "disconnected"),
            .userLeft(roomId: "r", userId: "b", at: at, reason: "removed"),
            .userLeft(roomId: "r", userId: "c", at: at, reason: "dismissed"),
            .userLeft(roomId: "r", userId: "d", at: at, reason: "replaced"),
            .roomDissolved(roomId: "r", at: at, reason: "empty"),
            .roomDissolved(roomId: "r", at: at, reason: "dismissed"),
        ]
        let events = WebhookEvents.events(from: records, now: now)
        #expect(events.map(\.type) == [101, 103, 105, 104, 104, 104, 104, 104, 102, 102])
        #expect(events.allSatisfy { $0.group == 1 && $0.roomKey == "r" && $0.at == at })
        let infos = try events.map { try #require(try object($0)["EventInfo"] as? [String: Any]) }
        #expect(infos[0]["UserId"] as? String == "host", "the creator is the user whose entering made the room")
        #expect(infos[2]["UserId"] as? String == "fan" && infos[2]["Role"] as? Int == 20)
        #expect(infos[3...7].map { $0["Reason"] as? Int } == [1, 2, 3, 4, 5])
        #expect(infos[8]["Reason"] as? Int == 1 && infos[9]["Reason"] as? Int == 2)
        #expect(infos.allSatisfy { $0["EventTs"] as? Int == 1_700_000_000 && $0["UniqueId"] as? Int == 7 })
        #expect(infos[1]["Reason"] == nil, "only exits and dismissals carry a reason")
    }

    @Test func mediaEventsStartAndStopEachKind() throws {
        let events = WebhookEvents.events(
            from: [
                .mediaChanged(roomId: "r", userId: "host", video: true, audio: true),
                .mediaChanged(roomId: "r", userId: "host", video: false, audio: nil),
                .mediaChanged(roomId: "r", userId: "host", video: nil, audio: false),
            ], now: now)
        #expect(events.map(\.type) == [201, 203, 202, 204])
        #expect(events.allSatisfy { $0.group == 2 && $0.at == now })
        let info = try #require(try object(events[0])["EventInfo"] as? [String: Any])
        #expect(info["UserId"] as? String == "host" && info["Role"] as? Int == 20 && info["EventTs"] as? Int == 1_700_000_001)
    }

    @Test func pkLinksGoToBothRooms() throws {
        let link = PKLink(caller: PKEnd(roomId: "a", userId: "hostA"), callee: PKEnd(roomId: RoomID.number(9).key, userId: "hostB"), since: at)
        let events = WebhookEvents.events(from: [.pkLinked(link, onlyRoom: nil), .pkUnlinked(link, onlyRoom: nil)], now: now)
        #expect(events.map(\.type) == [100301, 100301, 100302, 100302])
        #expect(events.map(\.roomKey) == ["a", "*9", "a", "*9"])
        #expect(events.allSatisfy { $0.group == 1003 })
        #expect(
            text(events[0])
                == #"{"EventGroupId":1003,"EventType":100301,"CallbackTs":1700000002000,"EventInfo":{"RoomId":"a","EventTs":1700000001,"UniqueId":42,"UserId":"hostA","OtherRoomId":9,"OtherUserId":"hostB","Caller":true}}"#)
        #expect(text(events[1]).contains(#""RoomId":9,"#) && text(events[1]).contains(#""OtherRoomId":"a","OtherUserId":"hostA","Caller":false"#))
    }

    @Test func cdnStateCommerceAndBattles() throws {
        let cdn = WebhookEvents.cdnStreamStateChanged(roomKey: "r", taskId: "t1", url: "rtmp://x/live/s", status: 2, code: 0, message: "pushing", at: at)
        #expect(
            text(cdn)
                == #"{"EventGroupId":1001,"EventType":100101,"CallbackTs":1700000002000,"EventInfo":{"RoomId":"r","EventTs":1700000000,"UniqueId":42,"TaskId":"t1","CdnUrl":"rtmp://x/live/s","Status":2,"Code":0,"Message":"pushing"}}"#)
        var order = Order(
            orderId: "o1", roomId: "r", itemNumber: 3, userId: "fan", quantity: 2, amount: Money(minorUnits: 1998, currency: "EUR"), state: .reserved,
            requestId: nil, createdAt: at, expiresAt: at + 900_000, updatedAt: at)
        var types: [Int] = []
        for state in Order.State.allCases {
            order.state = state
            types.append(WebhookEvents.order(order, at: at).type)
        }
        #expect(types == [100201, 100202, 100203, 100204])
        order.state = .paid
        #expect(
            text(WebhookEvents.order(order, at: at))
                == #"{"EventGroupId":1002,"EventType":100202,"CallbackTs":1700000002000,"EventInfo":{"RoomId":"r","EventTs":1700000000,"UniqueId":42,"OrderId":"o1","UserId":"fan","ItemNumber":3,"Quantity":2,"AmountMinor":1998,"Currency":"EUR","State":"paid"}}"#)
        #expect(WebhookEvents.productSoldOut(roomKey: "r", itemNumber: 3, at: at).type == 100205)

        var battle = PKBattle(
            battleId: "b1", rooms: [.init(roomId: "a", userId: "hostA"), .init(roomId: "b", userId: "hostB")], startedAt: at, endsAt: at + 60_000)
        let started = WebhookEvents.battleStarted(battle, at: at)
        #expect(started.map(\.type) == [100303, 100303] && started.map(\.roomKey) == ["a", "b"])
        battle.results = [.init(roomId: "a", units: 5, amounts: [:]), .init(roomId: "b", units: 2, amounts: [:])]
        battle.winnerRoomId = "a"
        let ended = WebhookEvents.battleEnded(battle, at: at)
        #expect(text(ended[0]).hasSuffix(#""BattleId":"b1","UserId":"hostA","Units":5,"WinnerRoomId":"a","Won":true}}"#), "\(text(ended[0]))")
        #expect(text(ended[1]).hasSuffix(#""BattleId":"b1","UserId":"hostB","Units":2,"WinnerRoomId":"a","Won":false}}"#))
    }

    @Test func stringsAreEscaped() throws {
        let hostile = "a\"b\\c\nd\u{1}e\u{2028}é"
        let event = WebhookEvent(roomKey: "r", group: 1, type: 103, at: at, fields: [WebhookField("UserId", .string(hostile))])
        #expect(text(event).contains(#""UserId":"a\"b\\c\nd\u0001e\u2028é""#))
        let info = try #require(try object(event)["EventInfo"] as? [String: Any])
        #expect(info["UserId"] as? String == hostile)
    }
}

@Suite struct WebhookSignatureTests {
    @Test func signIsBase64OfHMACSHA256OfTheBody() {
        // RFC 4231 test case 2.
        #expect(WebhookSignature.sign(Array("what do ya want for nothing?".utf8), key: "Jefe") == "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=")
        // A webhook body, as Python's hmac and base64 sign it (docs/webhooks.md).
        let body = #"{"EventGroupId":1,"EventType":103,"CallbackTs":1700000000123,"EventInfo":{"RoomId":"shop1","EventTs":1700000000,"UniqueId":42,"UserId":"alice","Role":20,"TerminalType":0,"UserType":0}}"#
        #expect(WebhookSignature.sign(Array(body.utf8), key: "abc123XYZ") == "wYUTniqaast2MVgVqrChc85W3/4CTxM2hsWJjbHMKDQ=")
    }

    @Test func base64PadsLikeTheStandard() {
        for length in 0..<8 {
            let bytes = (0..<length).map { UInt8($0 * 37 & 0xFF) }
            #expect(WebhookSignature.base64(bytes) == Data(bytes).base64EncodedString())
        }
    }

    @Test func keysAreOneTo32LettersAndDigits() {
        #expect(WebhookSignature.isValidKey("a"))
        #expect(WebhookSignature.isValidKey(String(repeating: "Z9", count: 16)))
        #expect(!WebhookSignature.isValidKey(""))
        #expect(!WebhookSignature.isValidKey(String(repeating: "a", count: 33)))
        #expect(!WebhookSignature.isValidKey("with space"))
        #expect(!WebhookSignature.isValidKey("dash-ed"))
        #expect(!WebhookSignature.isValidKey("ünï"))
    }
}

@Suite struct WebhookBackoffTests {
    @Test func halfASecondDoublingToFiveWithJitterOnlyShortening() {
        let backoff = WebhookBackoff()
        #expect((1...7).map { backoff.delay(afterFailures: $0, random: 0) } == [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5),
        ])
        #expect(backoff.delay(afterFailures: 1, random: 1) == .milliseconds(400))
        #expect(backoff.delay(afterFailures: 10, random: 0.5) == .milliseconds(4500))
        #expect(backoff.delay(afterFailures: 1_000_000, random: 0) == .seconds(5), "no overflow however long it fails")
        #expect(backoff.delay(afterFailures: 0, random: 7) == .milliseconds(400), "inputs are clamped")
    }
}
