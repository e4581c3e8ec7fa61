import LiveRoomProtocol
import LiveRoomStore
import Testing

@testable import LiveRoomServer

@Suite struct AdminAPITests {
    /// The `Error.Code` of an admin answer, nil when it succeeded.
    static func errorCode(_ answer: JSONValue) -> String? {
        answer["Response"]?["Error"]?["Code"]?.stringValue
    }

    @Test func describeRoomInfoRefusesNumbersThatWouldOverflow() async throws {
        let harness = try await HubHarness()
        let admin = AdminAPI(hub: harness.hub, store: try RoomStore(), sdkAppId: HubHarness.appId)
        let huge = "9223372036854775807"
        // Each of these used to trap in `Int64(time) * 1000` or `PageNumber * PageSize`.
        for (field, value) in [("EndTime", huge), ("StartTime", "-\(huge)"), ("PageNumber", huge), ("StartTime", "9223372036854775")] {
            let answer = await admin.call("DescribeRoomInfo", body: "{\"SdkAppId\": \(HubHarness.appId), \"\(field)\": \(value)}")
            #expect(Self.errorCode(answer) == "InvalidParameter.\(field)", "\(field)=\(value): \(answer.jsonText)")
        }
        // In range, the same call answers.
        let answer = await admin.call("DescribeRoomInfo", body: "{\"SdkAppId\": \(HubHarness.appId), \"PageNumber\": 100000, \"EndTime\": 4102444800}")
        #expect(Self.errorCode(answer) == nil, "\(answer.jsonText)")
        #expect(answer["Response"]?["Total"]?.intValue == 0)
    }

    @Test func numericAndStringRoomsAreDescribedAndDismissedApart() async throws {
        let h = try await HubHarness()
        let admin = AdminAPI(hub: h.hub, store: try RoomStore(), sdkAppId: HubHarness.appId)
        func call(_ action: String, _ roomId: JSONValue) async -> JSONValue {
            await admin.call(action, body: JSONValue.object(["SdkAppId": .number(Double(HubHarness.appId)), "RoomId": roomId]).jsonText)
        }
        func users(_ answer: JSONValue) -> [String] {
            answer["Response"]?["UserList"]?.arrayValue?.compactMap { $0["UserId"]?.stringValue } ?? []
        }
        let host = try await h.entered("host", role: .anchor, roomNumber: 123)
        _ = try await h.entered("other", role: .anchor, room: "123")

        // A numeric room is described by number, with its RoomId a number; the string room by string.
        let numeric = await call("DescribeRoom", 123)
        #expect(numeric["Response"]?["RoomId"] == 123 && users(numeric) == ["host"], "\(numeric.jsonText)")
        let string = await call("DescribeRoom", "123")
        #expect(string["Response"]?["RoomId"] == "123" && users(string) == ["other"], "\(string.jsonText)")
        // The numeric room's internal key names no string room.
        #expect(Self.errorCode(await call("DescribeRoom", .string(RoomID.number(123).key))) == "FailedOperation.RoomNotExist")
        #expect(Self.errorCode(await call("DismissRoomByStrRoomId", .string(RoomID.number(123).key))) == "FailedOperation.RoomNotExist")

        let dismissed = await call("DismissRoom", 123)
        #expect(Self.errorCode(dismissed) == nil, "\(dismissed.jsonText)")
        #expect(try await host.next("onExitRoom")["reason"] == 2)
        let gone = await call("DescribeRoom", 123)
        #expect(Self.errorCode(gone) == "FailedOperation.RoomNotExist" && gone["Response"]?["Error"]?["Message"] == "room 123 does not exist", "\(gone.jsonText)")
        #expect(users(await call("DescribeRoom", "123")) == ["other"], "the string room stays")
        let removeMissing = await admin.call("RemoveUser", body: #"{"SdkAppId": \#(HubHarness.appId), "RoomId": 123, "UserIds": ["host"]}"#)
        #expect(Self.errorCode(removeMissing) == "FailedOperation.RoomNotExist")
    }
}
