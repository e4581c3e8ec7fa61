import LiveRoomAdmin
import LiveRoomProtocol
import Testing

@Suite struct AdminRequestTests {
    static let appId: UInt64 = 1_400_000_123
    static let now = 1_800_000_000

    static func parse(_ action: String, _ body: String) throws(CloudAPIError) -> AdminRequest {
        try AdminRequest.parse(action: action, body: body, sdkAppId: appId, now: now)
    }

    static func refusal(_ action: String, _ body: String) -> CloudAPIError? {
        do {
            _ = try parse(action, body)
            return nil
        } catch {
            return error
        }
    }

    @Test func unknownActionsBadBodiesAndOtherAppsAreRefusedWithNames() {
        #expect(Self.refusal("Nope\n", "{}")?.code == "InvalidAction")
        #expect(Self.refusal("Nope\n", "{}")?.message.contains("\n") == false)
        #expect(Self.refusal("DescribeRoom", "{not json")?.code == "InvalidParameter.JsonParseError")
        #expect(Self.refusal("DescribeRoom", "[1]")?.code == "InvalidParameter")
        #expect(Self.refusal("DescribeRoom", #"{"RoomId":"r"}"#)?.code == "MissingParameter")
        #expect(Self.refusal("DescribeRoom", #"{"SdkAppId":1,"RoomId":"r"}"#)?.code == "InvalidParameter.SdkAppId")
        #expect(Self.refusal("DescribeRoom", #"{"SdkAppId":"1400000123"}"#)?.code == "InvalidParameter.RoomId")
        #expect(Self.refusal("RemoveUserByStrRoomId", #"{"SdkAppId":1400000123,"RoomId":"r","UserIds":[]}"#)?.code == "InvalidParameter.UserIds")
        let eleven = (0..<11).map { "\"u\($0)\"" }.joined(separator: ",")
        #expect(Self.refusal("RemoveUserByStrRoomId", #"{"SdkAppId":1400000123,"RoomId":"r","UserIds":[\#(eleven)]}"#)?.code == "InvalidParameter.UserIds")
    }

    /// The room a call's live state is about, so that a cluster carries it out on the room's home.
    @Test func callsAboutALiveRoomNameIt() throws {
        let app = #""SdkAppId":1400000123"#
        #expect(try Self.parse("DismissRoom", "{\(app),\"RoomId\":7}").liveRoom == .number(7))
        #expect(try Self.parse("RemoveUserByStrRoomId", "{\(app),\"RoomId\":\"r\",\"UserIds\":[\"u\"]}").liveRoom == .string("r"))
        #expect(try Self.parse("DescribeRoom", "{\(app),\"RoomId\":\"r\"}").liveRoom == .string("r"))
        #expect(try Self.parse("RemoveProduct", "{\(app),\"RoomId\":\"r\",\"ItemNumber\":1}").liveRoom == .string("r"))
        // Calls on stored state only, and those naming an order, name no room to forward to.
        #expect(try Self.parse("DescribeProducts", "{\(app),\"RoomId\":\"r\"}").liveRoom == nil)
        #expect(try Self.parse("DescribeOrders", "{\(app),\"RoomId\":\"r\"}").liveRoom == nil)
        #expect(try Self.parse("CancelOrder", "{\(app),\"OrderId\":\"o1\"}").liveRoom == nil)
        #expect(try Self.parse("DescribeRoomInfo", "{\(app)}").liveRoom == nil)
    }

    @Test func describeRoomInfoNumbersAreRangeChecked() throws {
        let huge = "9223372036854775807"
        for (field, value) in [("EndTime", huge), ("StartTime", "-1"), ("PageNumber", "100001"), ("PageSize", "0"), ("PageSize", "101")] {
            #expect(Self.refusal("DescribeRoomInfo", #"{"SdkAppId":1400000123,"\#(field)":\#(value)}"#)?.code == "InvalidParameter.\(field)", "\(field)")
        }
        #expect(Self.refusal("DescribeRoomInfo", #"{"SdkAppId":1400000123,"StartTime":10,"EndTime":9}"#)?.code == "InvalidParameter.StartTime")
        guard case .describeRoomInfo(let start, let end, let page, let size, let room) = try Self.parse("DescribeRoomInfo", #"{"SdkAppId":1400000123}"#) else {
            Issue.record("not DescribeRoomInfo")
            return
        }
        #expect(start == Self.now - 86_400 && end == Self.now && page == 0 && size == 100 && room == nil)
    }

    @Test func dismissRoomAndRemoveUserNameANumericRoom() throws {
        guard case .dismissRoom(let dismissed) = try Self.parse("DismissRoom", #"{"SdkAppId":1400000123,"RoomId":123}"#) else {
            Issue.record("not DismissRoom")
            return
        }
        #expect(dismissed == .number(123))
        // Integers may come as decimal text, as in other Tencent Cloud calls.
        guard case .dismissRoom(let asText) = try Self.parse("DismissRoom", #"{"SdkAppId":1400000123,"RoomId":"4294967295"}"#) else {
            Issue.record("not DismissRoom")
            return
        }
        #expect(asText == .number(4_294_967_295))
        guard case .removeUsers(let room, let userIds) = try Self.parse("RemoveUser", #"{"SdkAppId":1400000123,"RoomId":123,"UserIds":["a","b"]}"#) else {
            Issue.record("not RemoveUser")
            return
        }
        #expect(room == .number(123) && userIds == ["a", "b"])
        // The string actions keep naming the string room, even one that reads as a number.
        guard case .dismissRoom(let string) = try Self.parse("DismissRoomByStrRoomId", #"{"SdkAppId":1400000123,"RoomId":"123"}"#) else {
            Issue.record("not DismissRoomByStrRoomId")
            return
        }
        #expect(string == .string("123") && string.key != dismissed.key)
    }

    @Test func aNumericRoomIdIsRangeChecked() {
        for value in ["0", "-1", "4294967296", "1.5", #""abc""#, #""""#, "true"] {
            for action in ["DismissRoom", "RemoveUser"] {
                let error = Self.refusal(action, #"{"SdkAppId":1400000123,"RoomId":\#(value),"UserIds":["a"]}"#)
                #expect(error?.code == "InvalidParameter.RoomId", "\(action) \(value): \(String(describing: error))")
            }
        }
        #expect(Self.refusal("DismissRoom", #"{"SdkAppId":1400000123}"#)?.code == "InvalidParameter.RoomId")
        #expect(Self.refusal("RemoveUser", #"{"SdkAppId":1400000123,"RoomId":5,"UserIds":[]}"#)?.code == "InvalidParameter.UserIds")
        #expect(Self.refusal("DismissRoom", #"{"SdkAppId":1400000123,"RoomId":0}"#)?.message.contains("1–4294967295") == true)
    }

    @Test func describeCallsTellTheRoomKindByRoomIdsJSONType() throws {
        guard case .describeRoom(let numeric) = try Self.parse("DescribeRoom", #"{"SdkAppId":1400000123,"RoomId":123}"#),
            case .describeRoom(let string) = try Self.parse("DescribeRoom", #"{"SdkAppId":1400000123,"RoomId":"123"}"#),
            case .describeRoomInfo(_, _, _, _, let history) = try Self.parse("DescribeRoomInfo", #"{"SdkAppId":1400000123,"RoomId":7}"#)
        else {
            Issue.record("not DescribeRoom / DescribeRoomInfo")
            return
        }
        #expect(numeric == .number(123) && string == .string("123") && history == .number(7))
        #expect(Self.refusal("DescribeRoom", #"{"SdkAppId":1400000123,"RoomId":-3}"#)?.code == "InvalidParameter.RoomId")
        #expect(Self.refusal("DescribeRoomInfo", #"{"SdkAppId":1400000123,"RoomId":""}"#)?.code == "InvalidParameter.RoomId")
    }

    @Test func taskErrorsCarryTheCloudNameAndLiveRoomsCode() {
        let error = Self.refusal("StopPublishCdnStream", #"{"SdkAppId":1400000123}"#)
        #expect(error?.code.hasPrefix("MissingParameter") == true, "\(String(describing: error))")
        #expect(error?.message.hasPrefix("\(ErrorCode.missingParameter):") == true, "\(String(describing: error))")
    }

    @Test func groupMessagesAreReadWithIMCodes() throws {
        let message = try GroupMessage(#"{"GroupId":"r","MsgPriority":"High","MsgBody":[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"hi"}}]}"#)
        #expect(message.groupId == "r" && message.datas == ["hi"] && message.priority == .high)
        for (body, code) in [("{", 10004), (#"{"GroupId":""}"#, 10015), (#"{"GroupId":"r","MsgBody":[]}"#, 10004),
                             (#"{"GroupId":"r","MsgBody":[{"MsgType":"TIMTextElem"}]}"#, 10004)] {
            #expect(throws: LiveRoomError.self) { try GroupMessage(body) }
            do { _ = try GroupMessage(body) } catch { #expect(error.code == code, "\(body)") }
        }
    }
}

@Suite struct ShopAdminRequestTests {
    static func parse(_ action: String, _ body: String) throws(CloudAPIError) -> AdminRequest {
        try AdminRequestTests.parse(action, #"{"SdkAppId":1400000123"# + (body == "{}" ? "" : ",") + body.dropFirst())
    }

    static func refusal(_ action: String, _ body: String) -> String? {
        do {
            _ = try parse(action, body)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func catalogueAndOrderActionsParse() throws {
        guard case .addProduct(.string("shop"), let product) = try Self.parse("AddProduct", #"{"RoomId":"shop","Product":{"itemNumber":1}}"#) else {
            Issue.record("AddProduct")
            return
        }
        #expect(product == ["itemNumber": 1])
        guard case .modifyProduct(.number(7), 2, let changes) = try Self.parse("ModifyProduct", #"{"RoomId":7,"ItemNumber":"2","Changes":{"version":1}}"#) else {
            Issue.record("ModifyProduct")
            return
        }
        #expect(changes == ["version": 1])
        guard case .describeOrders(.string("shop"), "paid", 0, 100) = try Self.parse("DescribeOrders", #"{"RoomId":"shop","State":"paid"}"#) else {
            Issue.record("DescribeOrders")
            return
        }
        guard case .confirmOrder("abc") = try Self.parse("ConfirmOrder", #"{"OrderId":"abc"}"#) else {
            Issue.record("ConfirmOrder")
            return
        }
        guard case .describePKBattles(.string("shop"), 20) = try Self.parse("DescribePKBattles", #"{"RoomId":"shop"}"#) else {
            Issue.record("DescribePKBattles")
            return
        }
    }

    @Test(arguments: [
        ("AddProduct", #"{"RoomId":"shop"}"#, "MissingParameter"),
        ("AddProduct", #"{"RoomId":"shop","Product":[1]}"#, "InvalidParameter.Product"),
        ("ModifyProduct", #"{"RoomId":"shop","Changes":{}}"#, "MissingParameter"),
        ("RemoveProduct", #"{"ItemNumber":1}"#, "InvalidParameter.RoomId"),
        ("DescribeOrders", #"{"RoomId":"shop","State":"stolen"}"#, "InvalidParameter.State"),
        ("DescribeOrders", #"{"RoomId":"shop","Limit":1001}"#, "InvalidParameter.Limit"),
        ("DescribeOrders", #"{"RoomId":"shop","Offset":-1}"#, "InvalidParameter.Offset"),
        ("ConfirmOrder", #"{}"#, "MissingParameter"),
        ("CancelOrder", #"{"OrderId":""}"#, "InvalidParameter.OrderId"),
        ("DescribePKBattles", #"{"RoomId":"shop","Limit":0}"#, "InvalidParameter.Limit"),
        ("DescribePKBattles", #"{"RoomId":"shop","Limit":101}"#, "InvalidParameter.Limit"),
        ("DescribePKBattles", #"{"Limit":5}"#, "InvalidParameter.RoomId"),
    ])
    func badCallsAreRefusedWithTheirNames(action: String, body: String, code: String) {
        #expect(Self.refusal(action, body) == code, "\(action) \(body)")
    }
}
