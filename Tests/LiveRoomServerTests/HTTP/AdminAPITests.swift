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
}
