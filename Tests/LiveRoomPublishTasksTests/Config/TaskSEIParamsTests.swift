import Foundation
import LiveRoomProtocol
import LiveRoomWire
import Testing

@testable import LiveRoomPublishTasks

@Suite("Task SEI parameters (SeiParams, videoSeiParams) and the layout-and-volume message")
struct TaskSEIParamsTests {
    /// `StartPublishCdnStream` of a relay with `seiParams` (JSON text) as `SeiParams`.
    static func adminStart(_ seiParams: String) throws -> PublishTaskConfig {
        try AdminPublishCdnStreamRequest.parseStart(json("""
            {"RoomId": "room1",
             "SingleSubscribeParams": {"UserMediaStream": {"UserInfo": {"UserId": "anchor"}, "StreamType": 0}},
             "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/anchor"}],
             "SeiParams": \(seiParams)}
            """)).config
    }

    /// The e-commerce guide's mixing request with `videoSeiParams` (JSON text) in its `encoderParam`.
    static func clientStart(videoSeiParams: String) throws -> PublishTaskConfig {
        let request = guideMixRequest.replacingOccurrences(of: #""videoEncodedKbps": 1300"#, with: #""videoEncodedKbps": 1300, "videoSeiParams": "# + videoSeiParams)
        #expect(request != guideMixRequest)
        return try PublishTaskConfig.parseClient(request: json(request), caller: caller)
    }

    static let uuidText = "0123456789abcdefFEDCBA9876543210"
    static let uuid: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10]

    // MARK: Admin API

    @Test func adminLayoutVolumeAndPassThrough() throws {
        let config = try Self.adminStart("""
            {"LayoutVolume": {"AppData": "shop42", "PayloadType": 100, "Interval": 500, "FollowIdr": 1},
             "PassThrough": {"PayloadContent": "hello CDN", "PayloadType": 5, "PayloadUuid": "\(Self.uuidText)", "Interval": 0, "FollowIdr": true}}
            """)
        let sei = try #require(config.seiParams)
        #expect(sei.layoutVolume == TaskSEIParams.LayoutVolume(
            appData: "shop42", payloadType: 100, uuid: nil, schedule: .init(intervalMilliseconds: 500, followIdr: true)))
        #expect(sei.passThrough == TaskSEIParams.PassThrough(
            message: SEIMessage(payloadType: 5, uuid: Self.uuid, data: Array("hello CDN".utf8)), schedule: .init(intervalMilliseconds: 0, followIdr: true)))
    }

    @Test func adminDefaults() throws {
        let layout = try #require(try Self.adminStart(#"{"LayoutVolume": {}}"#).seiParams)
        #expect(layout.passThrough == nil)
        #expect(layout.layoutVolume == TaskSEIParams.LayoutVolume(
            appData: "", payloadType: 242, uuid: nil, schedule: .init(intervalMilliseconds: 1000, followIdr: false)))
        // LayoutVolume with type 5 and no UUID takes LiveRoom's.
        let five = try #require(try Self.adminStart(#"{"LayoutVolume": {"PayloadType": 5}}"#).seiParams?.layoutVolume)
        #expect(five.payloadType == 5 && five.uuid == SEIMessage.defaultUUID)
        let pass = try #require(try Self.adminStart(#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 242}}"#).seiParams)
        #expect(pass.layoutVolume == nil)
        #expect(pass.passThrough?.message == SEIMessage(payloadType: 242, data: [0x78]))
        #expect(pass.passThrough?.schedule == TaskSEIParams.Schedule(intervalMilliseconds: 1000, followIdr: false))
        #expect(try Self.adminStart("{}").seiParams == TaskSEIParams())
        // Limits at their edges.
        #expect(try Self.adminStart(#"{"LayoutVolume": {"Interval": 60000, "PayloadType": 254}}"#).seiParams?.layoutVolume?.schedule.intervalMilliseconds == 60000)
        let longest = String(repeating: "é", count: 500)
        #expect(try Self.adminStart(#"{"PassThrough": {"PayloadContent": "\#(longest)", "PayloadType": 100}}"#).seiParams?.passThrough?.message.data.count == 1000)
        #expect(try Self.adminStart(#"{"LayoutVolume": {"AppData": "\#(String(repeating: "a", count: 512))"}}"#).seiParams?.layoutVolume?.appData.count == 512)
    }

    @Test(arguments: [
        (#"{"LayoutVolume": {"PayloadType": 244}}"#, "SeiParams.LayoutVolume.PayloadType"),
        (#"{"LayoutVolume": {"PayloadType": 99}}"#, "SeiParams.LayoutVolume.PayloadType"),
        (#"{"LayoutVolume": {"PayloadType": 255}}"#, "SeiParams.LayoutVolume.PayloadType"),
        (#"{"LayoutVolume": {"PayloadType": 0}}"#, "SeiParams.LayoutVolume.PayloadType"),
        (#"{"LayoutVolume": {"PayloadType": "242"}}"#, "SeiParams.LayoutVolume.PayloadType"),
        (#"{"LayoutVolume": {"Interval": -1}}"#, "SeiParams.LayoutVolume.Interval"),
        (#"{"LayoutVolume": {"Interval": 60001}}"#, "SeiParams.LayoutVolume.Interval"),
        (#"{"LayoutVolume": {"Interval": 1.5}}"#, "SeiParams.LayoutVolume.Interval"),
        (#"{"LayoutVolume": {"FollowIdr": 2}}"#, "SeiParams.LayoutVolume.FollowIdr"),
        (#"{"LayoutVolume": {"AppData": 7}}"#, "SeiParams.LayoutVolume.AppData"),
        (#"{"LayoutVolume": "shop"}"#, "SeiParams.LayoutVolume"),
        (#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 244}}"#, "SeiParams.PassThrough.PayloadType"),
        (#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 242, "Interval": 100000}}"#, "SeiParams.PassThrough.Interval"),
        (#"{"PassThrough": {"PayloadContent": "", "PayloadType": 242}}"#, "SeiParams.PassThrough.PayloadContent"),
        (#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 5, "PayloadUuid": "0123"}}"#, "SeiParams.PassThrough.PayloadUuid"),
        (#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 5, "PayloadUuid": "0123456789abcdef0123456789abcdeg"}}"#, "SeiParams.PassThrough.PayloadUuid"),
        (#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 5, "PayloadUuid": "0123456789abcdef0123456789abcdef0"}}"#, "SeiParams.PassThrough.PayloadUuid"),
        (#""LayoutVolume""#, "SeiParams"),
    ])
    func badAdminParamsNameTheField(params: String, field: String) {
        expectError(ErrorCode.invalidSEIParams, field) { _ = try Self.adminStart(params) }
    }

    @Test func adminParamsTooLong() {
        let content = String(repeating: "a", count: 1001)
        expectError(ErrorCode.invalidSEIParams, "SeiParams.PassThrough.PayloadContent", "1001") {
            _ = try Self.adminStart(#"{"PassThrough": {"PayloadContent": "\#(content)", "PayloadType": 242}}"#)
        }
        expectError(ErrorCode.invalidSEIParams, "SeiParams.LayoutVolume.AppData", "513") {
            _ = try Self.adminStart(#"{"LayoutVolume": {"AppData": "\#(String(repeating: "a", count: 513))"}}"#)
        }
    }

    @Test func passThroughNeedsItsContentTypeAndForType5AUUID() {
        expectError(ErrorCode.missingParameter, "SeiParams.PassThrough.PayloadUuid") {
            _ = try Self.adminStart(#"{"PassThrough": {"PayloadContent": "x", "PayloadType": 5}}"#)
        }
        expectError(ErrorCode.missingParameter, "SeiParams.PassThrough.PayloadType") {
            _ = try Self.adminStart(#"{"PassThrough": {"PayloadContent": "x"}}"#)
        }
        expectError(ErrorCode.missingParameter, "SeiParams.PassThrough.PayloadContent") {
            _ = try Self.adminStart(#"{"PassThrough": {"PayloadType": 242}}"#)
        }
    }

    /// Fullwidth digits are `Character.isHexDigit`, but `UInt8(_:radix:)` reads only ASCII: a
    /// PayloadUuid of them must be refused (-7236), not end the server.
    @Test func fullwidthUUIDDigitsAreRefusedWithoutACrash() async {
        await #expect(processExitsWith: .success) {
            let uuid = String(repeating: "ａ", count: 32)
            do {
                _ = try AdminPublishCdnStreamRequest.parseStart(json("""
                    {"RoomId": "room1",
                     "SingleSubscribeParams": {"UserMediaStream": {"UserInfo": {"UserId": "anchor"}, "StreamType": 0}},
                     "PublishCdnParams": [{"PublishCdnUrl": "rtmp://push.example.com/live/anchor"}],
                     "SeiParams": {"PassThrough": {"PayloadContent": "x", "PayloadType": 5, "PayloadUuid": "\(uuid)"}}}
                    """))
                exit(1)
            } catch let error as LiveRoomError {
                if error.code != ErrorCode.invalidSEIParams { exit(2) }
            } catch {
                exit(3)
            }
        }
    }

    // MARK: Client API

    @Test func clientVideoSeiParamsAsTextOrObject() throws {
        let expected = TaskSEIParams(passThrough: TaskSEIParams.PassThrough(
            message: SEIMessage(payloadType: 5, uuid: Self.uuid, data: Array("{\"shop\":1}".utf8)),
            schedule: .init(intervalMilliseconds: 2000, followIdr: true)))
        let object = #"{"payloadContent": "{\"shop\":1}", "payloadType": 5, "payloadUuid": "\#(Self.uuidText)", "interval": 2000, "followIdr": true}"#
        #expect(try Self.clientStart(videoSeiParams: object).seiParams == expected)
        // TRTC's SDK takes it as a JSON string.
        let text = JSONValue.string(object).jsonText
        #expect(try Self.clientStart(videoSeiParams: text).seiParams == expected)
        // Defaults, and nothing for an empty string or null.
        let plain = try Self.clientStart(videoSeiParams: #"{"payloadContent": "hi", "payloadType": 242}"#).seiParams
        #expect(plain == TaskSEIParams(passThrough: .init(message: SEIMessage(data: [0x68, 0x69]), schedule: .init(intervalMilliseconds: 1000, followIdr: false))))
        #expect(try Self.clientStart(videoSeiParams: #""""#).seiParams == nil)
        #expect(try Self.clientStart(videoSeiParams: "null").seiParams == nil)
    }

    @Test(arguments: [
        (#"{"payloadContent": "hi", "payloadType": 244}"#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams.payloadType"),
        (#"{"payloadContent": "hi", "payloadType": 99}"#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams.payloadType"),
        (#"{"payloadContent": "hi", "payloadType": 255}"#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams.payloadType"),
        (#"{"payloadContent": "hi", "payloadType": 242, "interval": -5}"#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams.interval"),
        (#"{"payloadContent": "hi", "payloadType": 5, "payloadUuid": "abc"}"#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams.payloadUuid"),
        (#"{"payloadContent": "hi", "payloadType": 5}"#, ErrorCode.missingParameter, "encoderParam.videoSeiParams.payloadUuid"),
        (#"{"payloadContent": "", "payloadType": 242}"#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams.payloadContent"),
        (#""{not json""#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams"),
        (#""[1, 2]""#, ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams"),
        ("42", ErrorCode.invalidSEIParams, "encoderParam.videoSeiParams"),
    ])
    func badClientParamsNameTheField(params: String, code: Int, field: String) {
        expectError(code, field) { _ = try Self.clientStart(videoSeiParams: params) }
    }

    // MARK: The layout-and-volume message

    @Test func layoutVolumeMessageIsTheDocumentedJSON() throws {
        let layout = TaskSEIParams.LayoutVolume(appData: "shop42", payloadType: 100, uuid: nil, schedule: .init())
        let message = layout.message(
            canvas: MixSize(width: 540, height: 960),
            regions: [
                SEILayoutRegion(userId: "anchor", rect: MixRect(x: 0, y: 0, width: 540, height: 960), zOrder: 0, volume: 73),
                SEILayoutRegion(userId: "guest \"2\"", rect: MixRect(x: 400, y: 250, width: 135, height: 240), zOrder: 1, volume: 0),
            ],
            unixMilliseconds: 1_700_000_000_123)
        #expect(message.payloadType == 100)
        #expect(message.uuid == nil)
        let parsed = try JSONValue.parse(String(decoding: message.data, as: UTF8.self))
        let expected = try json("""
            {"app_data": "shop42", "canvas": {"w": 540, "h": 960}, "ts": 1700000000123,
             "regions": [{"uid": "anchor", "x": 0, "y": 0, "w": 540, "h": 960, "zorder": 0, "volume": 73},
                         {"uid": "guest \\"2\\"", "x": 400, "y": 250, "w": 135, "h": 240, "zorder": 1, "volume": 0}]}
            """)
        #expect(parsed == expected)
        #expect(message.data.count <= SEIMessage.maxDataLength)

        // Type 5 gets the configured UUID, or LiveRoom's; no regions is an empty list.
        let typed = TaskSEIParams.LayoutVolume(appData: "", payloadType: 5, uuid: Self.uuid, schedule: .init())
        #expect(typed.message(canvas: MixSize(width: 16, height: 16), regions: [], unixMilliseconds: 0).uuid == Self.uuid)
        let untyped = TaskSEIParams.LayoutVolume(appData: "", payloadType: 5, uuid: nil, schedule: .init())
        let empty = untyped.message(canvas: MixSize(width: 16, height: 16), regions: [], unixMilliseconds: 0)
        #expect(empty.uuid == SEIMessage.defaultUUID)
        #expect(try JSONValue.parse(String(decoding: empty.data, as: UTF8.self))["regions"] == .array([]))
    }
}
