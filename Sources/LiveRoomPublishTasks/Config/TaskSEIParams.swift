import Foundation
import LiveRoomProtocol
import LiveRoomWire

/// SEI the server itself puts into a task's output (TRTC's `McuSeiParams` of
/// `StartPublishCdnStream`, and the client API's `videoSeiParams`): fixed pass-through content,
/// and a layout-and-volume message naming each anchor's rect in the mix and its audio level.
public struct TaskSEIParams: Sendable, Hashable, Codable {
    /// When a task SEI message goes out.
    public struct Schedule: Sendable, Hashable, Codable {
        /// Milliseconds between messages; 0 puts one on every frame.
        public var intervalMilliseconds: Int
        /// Also on every keyframe, so a player that joins at one sees it at once.
        public var followIdr: Bool

        public init(intervalMilliseconds: Int = 1000, followIdr: Bool = false) {
            self.intervalMilliseconds = intervalMilliseconds
            self.followIdr = followIdr
        }
    }

    /// `PassThrough`: these bytes with this payload type (and UUID for type 5).
    public struct PassThrough: Sendable, Hashable, Codable {
        public var message: SEIMessage
        public var schedule: Schedule
    }

    /// `LayoutVolume`: a JSON message (see ``layoutVolumeJSON``) with `AppData` in it.
    public struct LayoutVolume: Sendable, Hashable, Codable {
        public var appData: String
        public var payloadType: Int
        public var uuid: [UInt8]?
        public var schedule: Schedule
    }

    public var passThrough: PassThrough?
    public var layoutVolume: LayoutVolume?

    public init(passThrough: PassThrough? = nil, layoutVolume: LayoutVolume? = nil) {
        self.passThrough = passThrough
        self.layoutVolume = layoutVolume
    }

    public static let intervalRange = 0...60_000
    public static let maxAppDataLength = 512

    /// Reads the admin API's `SeiParams` (`LayoutVolume`, `PassThrough`).
    static func parseAdmin(_ fields: JSONFields) throws(LiveRoomError) -> TaskSEIParams {
        var params = TaskSEIParams()
        if let layout = try fields.fields("LayoutVolume", code: ErrorCode.invalidSEIParams) {
            let (payloadType, uuid) = try payload(layout, type: "PayloadType", uuid: "PayloadUuid", defaultType: SEIMessage.defaultPayloadType)
            let appData = try layout.string("AppData", code: ErrorCode.invalidSEIParams) ?? ""
            guard appData.utf8.count <= maxAppDataLength else {
                throw layout.invalid("AppData", "is at most \(maxAppDataLength) bytes, not \(appData.utf8.count)", code: ErrorCode.invalidSEIParams)
            }
            params.layoutVolume = LayoutVolume(
                appData: appData, payloadType: payloadType, uuid: uuid, schedule: try schedule(layout, interval: "Interval", followIdr: "FollowIdr"))
        }
        if let pass = try fields.fields("PassThrough", code: ErrorCode.invalidSEIParams) {
            params.passThrough = try passThrough(pass, content: "PayloadContent", type: "PayloadType", uuid: "PayloadUuid", interval: "Interval", followIdr: "FollowIdr")
        }
        return params
    }

    /// Reads the client API's `encoderParam.videoSeiParams`: a JSON string (as TRTC's SDK
    /// takes it) or object with `payloadContent`, `payloadType`, `payloadUuid`, `interval`, `followIdr`.
    static func parseClient(_ value: JSONValue, field: JSONFields, key: String) throws(LiveRoomError) -> TaskSEIParams {
        var object = value
        if let text = value.stringValue {
            do {
                object = try JSONValue.parse(text)
            } catch {
                throw field.invalid(key, "must be JSON like {\"payloadContent\":\"…\",\"payloadType\":242}", code: ErrorCode.invalidSEIParams)
            }
        }
        let fields = try JSONFields(taskParameters: object, path: field.name(key), code: ErrorCode.invalidSEIParams)
        return TaskSEIParams(
            passThrough: try passThrough(fields, content: "payloadContent", type: "payloadType", uuid: "payloadUuid", interval: "interval", followIdr: "followIdr"))
    }

    private static func passThrough(
        _ fields: JSONFields, content: String, type: String, uuid: String, interval: String, followIdr: String
    ) throws(LiveRoomError) -> PassThrough {
        let text = try fields.requiredString(content, code: ErrorCode.invalidSEIParams)
        guard !text.isEmpty, text.utf8.count <= SEIMessage.maxDataLength else {
            throw fields.invalid(content, "must hold 1-\(SEIMessage.maxDataLength) bytes, not \(text.utf8.count)", code: ErrorCode.invalidSEIParams)
        }
        let (payloadType, uuidBytes) = try payload(fields, type: type, uuid: uuid, defaultType: nil)
        return PassThrough(
            message: SEIMessage(payloadType: payloadType, uuid: uuidBytes, data: Array(text.utf8)),
            schedule: try schedule(fields, interval: interval, followIdr: followIdr))
    }

    /// The payload type (5 or 100–254 but 244) and, for 5, the UUID as 32 hex digits.
    private static func payload(_ fields: JSONFields, type: String, uuid: String, defaultType: Int?) throws(LiveRoomError) -> (Int, [UInt8]?) {
        let payloadType: Int
        if let given = try fields.int(type, code: ErrorCode.invalidSEIParams) {
            payloadType = given
        } else if let defaultType {
            payloadType = defaultType
        } else {
            throw fields.missing(type)
        }
        guard SEIMessage.isAllowedPayloadType(payloadType) else {
            throw fields.invalid(type, "must be 5 or 100-254 except 244, not \(payloadType)", code: ErrorCode.invalidSEIParams)
        }
        guard payloadType == 5 else { return (payloadType, nil) }
        guard let text = try fields.string(uuid, code: ErrorCode.invalidSEIParams) else {
            if defaultType != nil { return (5, SEIMessage.defaultUUID) }
            throw fields.missing(uuid)
        }
        let digits = Array(text)
        guard digits.count == 32, digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
            throw fields.invalid(uuid, "must be 32 hex digits, not \(text.quoted)", code: ErrorCode.invalidSEIParams)
        }
        return (5, stride(from: 0, to: 32, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! })
    }

    private static func schedule(_ fields: JSONFields, interval: String, followIdr: String) throws(LiveRoomError) -> Schedule {
        let milliseconds = try fields.int(interval, in: intervalRange, code: ErrorCode.invalidSEIParams) ?? 1000
        let follow: Bool
        if let value = fields.value(followIdr), let bool = value.boolValue {
            follow = bool
        } else {
            follow = try fields.bit(followIdr, code: ErrorCode.invalidSEIParams) ?? false
        }
        return Schedule(intervalMilliseconds: milliseconds, followIdr: follow)
    }
}

/// One anchor in a layout-and-volume SEI message.
public struct SEILayoutRegion: Sendable, Hashable, Codable {
    public var userId: String
    public var rect: MixRect
    public var zOrder: Int
    /// The anchor's audio level now, 0–100.
    public var volume: Int

    public init(userId: String, rect: MixRect, zOrder: Int, volume: Int) {
        self.userId = userId
        self.rect = rect
        self.zOrder = zOrder
        self.volume = volume
    }
}

extension TaskSEIParams.LayoutVolume {
    /// The message's JSON, as TRTC's and Agora's mix SEI shape it: `{"app_data", "canvas":
    /// {"w","h"}, "regions": [{"uid","x","y","w","h","zorder","volume"}], "ts"}` (ts: ms since 1970).
    public func message(canvas: MixSize, regions: [SEILayoutRegion], unixMilliseconds: Int64) -> SEIMessage {
        let json: JSONValue = [
            "app_data": .string(appData),
            "canvas": ["w": .number(Double(canvas.width)), "h": .number(Double(canvas.height))],
            "regions": .array(regions.map { region in
                [
                    "uid": .string(region.userId), "x": .number(Double(region.rect.x)), "y": .number(Double(region.rect.y)),
                    "w": .number(Double(region.rect.width)), "h": .number(Double(region.rect.height)),
                    "zorder": .number(Double(region.zOrder)), "volume": .number(Double(region.volume)),
                ]
            }),
            "ts": .number(Double(unixMilliseconds)),
        ]
        return SEIMessage(payloadType: payloadType, uuid: payloadType == 5 ? (uuid ?? SEIMessage.defaultUUID) : nil, data: Array(json.jsonText.utf8))
    }
}
