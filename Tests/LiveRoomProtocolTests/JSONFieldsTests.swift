import Testing

@testable import LiveRoomProtocol

@Suite("JSONFields: every error names the field by its full path")
struct JSONFieldsTests {
    static let request: JSONValue = [
        "mixingConfig": [
            "videoLayoutList": [
                ["rect": ["left": 0, "top": 0, "width": 640, "height": 360]],
                ["rect": ["left": 0, "top": 0, "width": 320, "height": 180]],
                ["rect": ["left": 10, "top": 20, "right": "wide", "width": 0], "zOrder": 1.5, "user": .null],
            ]
        ],
        "SdkAppId": "1400000000", "UserIds": ["a", 7], "RoomId": 42, "flag": 1, "on": true,
    ]

    /// The third layout's rect, read as a task configuration reads it.
    func thirdRect(code: Int = ErrorCode.invalidParameter) throws -> JSONFields {
        let top = try JSONFields(Self.request, missingCode: ErrorCode.missingParameter, code: code)
        let layouts = try top.requiredFields("mixingConfig").objectArray("videoLayoutList")!
        return try layouts[2].requiredFields("rect")
    }

    func error(_ body: () throws(LiveRoomError) -> Void) -> LiveRoomError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func pathsRunThroughObjectsAndArrays() throws {
        let rect = try thirdRect()
        #expect(rect.path == "mixingConfig.videoLayoutList[2].rect")
        let wrongType = error { () throws(LiveRoomError) in _ = try rect.int("right") }
        #expect(wrongType == LiveRoomError(
            ErrorCode.invalidParameter, "mixingConfig.videoLayoutList[2].rect.right must be an integer, not string",
            field: "mixingConfig.videoLayoutList[2].rect.right"))
        let missing = error { () throws(LiveRoomError) in _ = try rect.requiredInt("bottom") }
        #expect(missing == LiveRoomError(
            ErrorCode.missingParameter, "missing field mixingConfig.videoLayoutList[2].rect.bottom",
            field: "mixingConfig.videoLayoutList[2].rect.bottom"))
    }

    @Test func rangesAreNamed() throws {
        let rect = try thirdRect()
        let outside = error { () throws(LiveRoomError) in _ = try rect.int("width", in: 1...1920, code: ErrorCode.invalidLayoutRect) }
        #expect(outside?.code == ErrorCode.invalidLayoutRect)
        #expect(outside?.message == "mixingConfig.videoLayoutList[2].rect.width must be 1–1920, not 0")
        #expect(try rect.int("top", in: 0...1080) == 20)
        #expect(try rect.int("absent", in: 0...1080) == nil)
        let below = error { () throws(LiveRoomError) in _ = try rect.int("width", in: 2...) }
        #expect(below?.message == "mixingConfig.videoLayoutList[2].rect.width must be at least 2, not 0")
    }

    @Test func fractionsAndNullsAndNonObjects() throws {
        let layouts = try JSONFields(Self.request).requiredFields("mixingConfig").objectArray("videoLayoutList")!
        let fraction = error { () throws(LiveRoomError) in _ = try layouts[2].int("zOrder", code: ErrorCode.invalidZOrder) }
        #expect(fraction?.code == ErrorCode.invalidZOrder)
        #expect(fraction?.message == "mixingConfig.videoLayoutList[2].zOrder must be an integer, not a fraction")
        // null is the same as absent.
        #expect(layouts[2].value("user") == nil)
        #expect(try layouts[2].fields("user") == nil)
        let notObject = error { () throws(LiveRoomError) in _ = try layouts[2].requiredFields("zOrder", code: ErrorCode.invalidLayout) }
        #expect(notObject == LiveRoomError(
            ErrorCode.invalidLayout, "mixingConfig.videoLayoutList[2].zOrder must be a JSON object, not number",
            field: "mixingConfig.videoLayoutList[2].zOrder"))
        let topLevel = error { () throws(LiveRoomError) in _ = try JSONFields([1, 2]) }
        #expect(topLevel?.code == ErrorCode.invalidField)
        #expect(topLevel?.field == nil)
    }

    @Test func childrenTakeTheCodeTheyWereReadWith() throws {
        let top = try JSONFields(Self.request, missingCode: ErrorCode.missingParameter, code: ErrorCode.invalidParameter)
        let mixing = try top.requiredFields("mixingConfig", code: ErrorCode.invalidLayout)
        let bad = error { () throws(LiveRoomError) in _ = try mixing.string("videoLayoutList") }
        #expect(bad?.code == ErrorCode.invalidLayout)
        #expect(bad?.message == "mixingConfig.videoLayoutList must be a string, not array")
        let missing = error { () throws(LiveRoomError) in _ = try mixing.requiredString("watermark") }
        #expect(missing?.code == ErrorCode.missingParameter)
    }

    @Test func integersAsTextOnlyWhereAllowed() throws {
        let strict = error { () throws(LiveRoomError) in _ = try JSONFields(Self.request).int("SdkAppId") }
        #expect(strict?.message == "SdkAppId must be an integer, not string")
        #expect(strict?.field == "SdkAppId")
        #expect(try JSONFields(Self.request, integersMayBeText: true).int("SdkAppId") == 1_400_000_000)
    }

    @Test func booleansBitsArraysAndIdentifiers() throws {
        let fields = try JSONFields(Self.request)
        #expect(try fields.bit("flag") == true)
        #expect(try fields.bit("on") == true)
        #expect(try fields.bool("on") == true)
        let strictBool = error { () throws(LiveRoomError) in _ = try fields.bool("flag") }
        #expect(strictBool?.message == "flag must be a boolean, not number")
        let array = error { () throws(LiveRoomError) in _ = try fields.stringArray("UserIds") }
        #expect(array?.message == "UserIds must be an array of strings, not array")
        #expect(try fields.identifier("RoomId") == "42")
        #expect(try fields.identifier("missing") == nil)
        let identifier = error { () throws(LiveRoomError) in _ = try fields.identifier("on") }
        #expect(identifier?.message == "on must be a string or an integer, not boolean")
        #expect(try fields.requiredObject("mixingConfig").objectValue?["videoLayoutList"] != nil)
    }
}
