import Foundation
import LiveRoomProtocol

/// The admin API's `StartPublishCdnStream` and `UpdatePublishCdnStream` parameters, in TRTC's
/// shapes, read into a ``PublishTaskConfig``.
///
/// - `WithTranscoding` 0 relays `SingleSubscribeParams`' stream; 1 mixes, to
///   `PublishCdnParams` or, with `FeedBackRoomParams`, back into a room.
/// - `VideoParams` left out means audio-only output; `LayoutParams.MixLayoutMode` 1–5 picks
///   the float, screen-share, grid, custom or PK template.
/// - On update, every top-level parameter (and every field of `AudioParams` and
///   `VideoParams`) that is left out keeps its current value.
public struct AdminPublishCdnStreamRequest: Sendable {
    /// `SdkAppId`, when given.
    public var sdkAppId: Int?
    /// The key (``RoomID/key``) of the room `RoomId` names, as `RoomIdType` says; start only.
    public var roomId: String
    /// `RoomIdType`: 0 integer room, 1 string room (LiveRoom's default when left out). A user's
    /// `RoomId` without its own `RoomIdType` is read with this one.
    public var roomIdType: Int
    /// `TaskId`; update only.
    public var taskId: String
    /// `SequenceNumber`; update only.
    public var sequenceNumber: Int?
    let fields: JSONFields

    /// Parses `StartPublishCdnStream`'s parameters and the task they describe.
    public static func parseStart(_ params: JSONValue) throws(LiveRoomError) -> (request: AdminPublishCdnStreamRequest, config: PublishTaskConfig) {
        let fields = try JSONFields(taskParameters: params, code: ErrorCode.invalidParameter)
        var request = try AdminPublishCdnStreamRequest(fields: fields)
        guard !request.roomId.isEmpty else { throw fields.missing("RoomId") }
        request.taskId = ""
        var config = PublishTaskConfig(target: PublishTarget(mode: .mixStreamToCdn), encoderParam: StreamEncoderParam())
        try request.apply(to: &config, isStart: true)
        try Self.withAdminNames { () throws(LiveRoomError) in try config.validate() }
        return (request, config)
    }

    /// Parses `UpdatePublishCdnStream`'s `TaskId` and `SequenceNumber`; the changes are applied by ``applied(to:)``.
    public static func parseUpdate(_ params: JSONValue) throws(LiveRoomError) -> AdminPublishCdnStreamRequest {
        let fields = try JSONFields(taskParameters: params, code: ErrorCode.invalidParameter)
        let request = try AdminPublishCdnStreamRequest(fields: fields)
        guard !request.taskId.isEmpty else { throw fields.missing("TaskId") }
        guard let sequence = request.sequenceNumber else { throw fields.missing("SequenceNumber") }
        guard sequence >= 0 else {
            throw LiveRoomError(ErrorCode.invalidParameter, "SequenceNumber must not be negative")
        }
        return request
    }

    /// Parses `StopPublishCdnStream`'s `TaskId`.
    public static func parseStopTaskId(_ params: JSONValue) throws(LiveRoomError) -> String {
        let fields = try JSONFields(taskParameters: params, code: ErrorCode.invalidParameter)
        let taskId = try fields.string("TaskId", code: ErrorCode.invalidParameter) ?? ""
        guard !taskId.isEmpty else { throw fields.missing("TaskId") }
        return taskId
    }

    private init(fields: JSONFields) throws(LiveRoomError) {
        let code = ErrorCode.invalidParameter
        self.fields = fields
        sdkAppId = try fields.int("SdkAppId", code: code)
        roomIdType = try Self.roomIdType(fields, default: 1)
        roomId = try Self.room(fields, roomIdType: roomIdType)?.key ?? ""
        taskId = try fields.string("TaskId", code: code) ?? ""
        sequenceNumber = try fields.int("SequenceNumber", code: code)
    }

    /// The room ``roomId`` names.
    public var room: RoomID { RoomID(key: roomId) }

    /// The task `current` becomes with this update's parameters, validated.
    public func applied(to current: PublishTaskConfig) throws(LiveRoomError) -> PublishTaskConfig {
        var config = current
        try apply(to: &config, isStart: false)
        try Self.withAdminNames { () throws(LiveRoomError) in try config.validate() }
        return config
    }

    private func apply(to config: inout PublishTaskConfig, isStart: Bool) throws(LiveRoomError) {
        let code = ErrorCode.invalidParameter
        if let agent = try fields.fields("AgentParams", code: code) {
            config.agentUserId = try agent.string("UserId", code: code)
            if let seconds = try agent.int("MaxIdleTime", code: code) {
                config.idleTimeout = .seconds(seconds)
            }
        }
        try applyMode(to: &config, isStart: isStart)
        if let list = try fields.objectArray("PublishCdnParams", code: ErrorCode.invalidPublishTarget) {
            config.target.cdnUrlList = []
            for entry in list {
                config.target.cdnUrlList.append(
                    PublishCdnUrl(
                        rtmpUrl: try entry.requiredString("PublishCdnUrl", code: ErrorCode.invalidCdnUrl),
                        isInternalLine: try entry.bit("IsTencentCdn", code: ErrorCode.invalidCdnUrl) ?? true))
            }
        }
        if !config.target.mode.publishesToCdn { config.target.cdnUrlList = [] }
        if let audio = try fields.fields("AudioParams", code: ErrorCode.invalidAudioEncoding) {
            try applyAudio(audio, to: &config)
        }
        if let video = try fields.fields("VideoParams", code: ErrorCode.invalidVideoEncoding) {
            try applyVideo(video, to: &config, isStart: isStart)
        }
        if let sei = try fields.fields("SeiParams", code: ErrorCode.invalidSEIParams) {
            config.seiParams = try TaskSEIParams.parseAdmin(sei)
        }
    }

    /// `WithTranscoding`, `SingleSubscribeParams` and `FeedBackRoomParams` decide the mode.
    private func applyMode(to config: inout PublishTaskConfig, isStart: Bool) throws(LiveRoomError) {
        let code = ErrorCode.invalidParameter
        let single = try fields.fields("SingleSubscribeParams", code: ErrorCode.invalidRelaySource)
        let feedBack = try fields.objectArray("FeedBackRoomParams", code: ErrorCode.invalidPublishTarget)
        var transcoding = try fields.int("WithTranscoding", code: code)
        if let value = transcoding, value != 0, value != 1 {
            throw LiveRoomError(code, "WithTranscoding must be 0 (relay one stream) or 1 (mix), not \(value)")
        }
        if transcoding == nil {
            if isStart {
                transcoding = single != nil ? 0 : 1
            } else if single != nil || feedBack != nil {
                transcoding = config.target.mode.isMixing ? 1 : 0
            } else {
                return
            }
        }
        if transcoding == 0 {
            if let single {
                let stream = try single.requiredFields("UserMediaStream", code: ErrorCode.invalidRelaySource)
                let (user, streamType) = try Self.userMediaStream(stream, code: ErrorCode.invalidRelaySource, roomIdType: roomIdType)
                guard let user else { throw stream.missing("UserInfo") }
                config.relaySource = user
                config.target.mode = streamType == .sub ? .subStreamToCdn : .bigStreamToCdn
            } else if config.relaySource == nil {
                throw LiveRoomError(ErrorCode.invalidRelaySource, "WithTranscoding 0 relays one stream: SingleSubscribeParams is required")
            } else if config.target.mode.isMixing {
                config.target.mode = .bigStreamToCdn
            }
            config.mixingConfig = nil
            config.target.mixStreamIdentity = nil
        } else {
            config.relaySource = nil
            if let feedBack, !feedBack.isEmpty {
                guard feedBack.count == 1 else {
                    throw LiveRoomError(
                        ErrorCode.invalidPublishTarget, "FeedBackRoomParams has \(feedBack.count) rooms; LiveRoom publishes a mix into one room per task")
                }
                let room = feedBack[0]
                let userId = try room.string("UserId", code: ErrorCode.invalidPublishTarget) ?? ""
                guard !userId.isEmpty else { throw room.missing("UserId") }
                config.target.mode = .mixStreamToRoom
                let robotRoom = try Self.room(room, roomIdType: Self.roomIdType(room, default: roomIdType))
                config.target.mixStreamIdentity = MixUser(userId: userId, roomId: robotRoom?.key ?? "")
            } else if feedBack != nil || config.target.mode != .mixStreamToRoom {
                config.target.mode = .mixStreamToCdn
                config.target.mixStreamIdentity = nil
            }
            if config.mixingConfig == nil { config.mixingConfig = Self.defaultMixing }
        }
    }

    private func applyAudio(_ audio: JSONFields, to config: inout PublishTaskConfig) throws(LiveRoomError) {
        let code = ErrorCode.invalidAudioEncoding
        var param = config.encoderParam ?? StreamEncoderParam()
        if let encode = try audio.fields("AudioEncode", code: code) {
            param.audioEncodedSampleRate = try encode.requiredInt("SampleRate", code: code)
            param.audioEncodedChannelNum = try encode.requiredInt("Channel", code: code)
            param.audioEncodedKbps = try encode.requiredInt("BitRate", code: code)
            param.audioEncodedCodecType = try encode.int("Codec", code: ErrorCode.unsupportedCodec) ?? 0
        }
        config.encoderParam = param
        guard config.target.mode.isMixing else { return }
        var mixing = config.mixingConfig ?? Self.defaultMixing
        if let list = try audio.objectArray("SubscribeAudioList", code: ErrorCode.invalidAudioMixUser) {
            var users: [AudioMixUser] = []
            for entry in list {
                let user = try Self.userInfo(entry.requiredFields("UserInfo", code: ErrorCode.invalidAudioMixUser), code: ErrorCode.invalidAudioMixUser, roomIdType: roomIdType)
                // LiveRoom extension: a per-user Volume (0–100).
                users.append(AudioMixUser(user: user, volume: try entry.int("Volume", code: ErrorCode.invalidAudioMixUser) ?? 100))
            }
            mixing.audioMixUserList = users
        }
        if let list = try audio.objectArray("UnSubscribeAudioList", code: ErrorCode.invalidAudioMixUser) {
            var users: [MixUser] = []
            for entry in list {
                users.append(try Self.userInfo(entry.requiredFields("UserInfo", code: ErrorCode.invalidAudioMixUser), code: ErrorCode.invalidAudioMixUser, roomIdType: roomIdType))
            }
            mixing.audioExcludeUserList = users
        }
        config.mixingConfig = mixing
    }

    private func applyVideo(_ video: JSONFields, to config: inout PublishTaskConfig, isStart: Bool) throws(LiveRoomError) {
        let code = ErrorCode.invalidVideoEncoding
        var param = config.encoderParam ?? StreamEncoderParam()
        if let encode = try video.fields("VideoEncode", code: code) {
            param.videoEncodedWidth = try encode.requiredInt("Width", code: ErrorCode.invalidVideoResolution)
            param.videoEncodedHeight = try encode.requiredInt("Height", code: ErrorCode.invalidVideoResolution)
            param.videoEncodedFPS = try encode.requiredInt("Fps", code: code)
            param.videoEncodedKbps = try encode.requiredInt("BitRate", code: code)
            param.videoEncodedGOP = try encode.requiredInt("Gop", code: code)
        } else if isStart {
            throw video.missing("VideoEncode")
        }
        config.encoderParam = param
        guard config.target.mode.isMixing else { return }
        var mixing = config.mixingConfig ?? Self.defaultMixing
        if let color = try video.color("BackGroundColor", code: ErrorCode.invalidBackground) {
            mixing.backgroundColor = color
        }
        if let image = try video.string("BackgroundImageUrl", code: ErrorCode.invalidBackground) {
            mixing.backgroundImage = image
        }
        if let layout = try video.fields("LayoutParams", code: ErrorCode.invalidLayout) {
            try Self.applyLayoutParams(layout, to: &mixing, roomIdType: roomIdType)
        }
        if let list = try video.objectArray("WaterMarkList", code: ErrorCode.invalidWatermark) {
            mixing.watermarkList = []
            for entry in list {
                let type = try entry.int("WaterMarkType", code: ErrorCode.invalidWatermark) ?? 0
                guard type == 0 else {
                    throw entry.invalid("WaterMarkType", "\(type) is not supported; only 0 (image) is", code: ErrorCode.invalidWatermark)
                }
                let image = try entry.requiredFields("WaterMarkImage", code: ErrorCode.invalidWatermark)
                let rect = MixRect(
                    x: try image.requiredInt("LocationX", code: ErrorCode.invalidLayoutRect),
                    y: try image.requiredInt("LocationY", code: ErrorCode.invalidLayoutRect),
                    width: try image.requiredInt("WaterMarkWidth", code: ErrorCode.invalidLayoutRect),
                    height: try image.requiredInt("WaterMarkHeight", code: ErrorCode.invalidLayoutRect))
                mixing.watermarkList.append(
                    Watermark(
                        watermarkUrl: try image.requiredString("WaterMarkUrl", code: ErrorCode.invalidWatermark), rect: rect,
                        zOrder: try image.int("ZOrder", code: ErrorCode.invalidZOrder) ?? 0))
            }
        }
        config.mixingConfig = mixing
    }

    private static func applyLayoutParams(_ layout: JSONFields, to mixing: inout StreamMixingConfig, roomIdType: Int) throws(LiveRoomError) {
        let code = ErrorCode.invalidLayout
        if let mode = try layout.int("MixLayoutMode", code: ErrorCode.invalidLayoutMode) {
            guard let template = LayoutTemplate(rawValue: mode) else {
                throw layout.invalid("MixLayoutMode", "\(mode) is not 1 (float), 2 (screen share), 3 (grid), 4 (custom) or 5 (pk)", code: ErrorCode.invalidLayoutMode)
            }
            mixing.template = template
        }
        if let hold = try layout.int("PureAudioHoldPlaceMode", code: code) {
            guard hold == 0 || hold == 1 else {
                throw layout.invalid("PureAudioHoldPlaceMode", "must be 0 or 1, not \(hold)", code: code)
            }
            mixing.pureAudioHoldsPlace = hold == 1
        }
        if let fillMode = try renderModeFill(layout, "RenderMode") {
            mixing.templateFillMode = fillMode
        }
        if let maxUser = try layout.fields("MaxVideoUser", code: code) {
            let stream = try maxUser.requiredFields("UserMediaStream", code: code)
            let (user, streamType) = try userMediaStream(stream, code: code, roomIdType: roomIdType)
            mixing.templateMainUser = user
            mixing.templateMainStreamType = streamType
        }
        if let list = try layout.objectArray("MixLayoutList", code: code) {
            var layouts: [VideoLayout] = []
            for entry in list {
                var user: MixUser?
                var streamType = MixStreamType.big
                if let stream = try entry.fields("UserMediaStream", code: code) {
                    (user, streamType) = try userMediaStream(stream, code: code, roomIdType: roomIdType)
                }
                let rect = MixRect(
                    x: try entry.int("LocationX", code: ErrorCode.invalidLayoutRect) ?? 0,
                    y: try entry.int("LocationY", code: ErrorCode.invalidLayoutRect) ?? 0,
                    width: try entry.int("ImageWidth", code: ErrorCode.invalidLayoutRect) ?? 0,
                    height: try entry.int("ImageHeight", code: ErrorCode.invalidLayoutRect) ?? 0)
                layouts.append(
                    VideoLayout(
                        rect: rect, zOrder: try entry.int("ZOrder", code: ErrorCode.invalidZOrder) ?? 0,
                        fillMode: try renderModeFill(entry, "RenderMode") ?? .fill,
                        backgroundColor: try entry.color("BackGroundColor", code: code) ?? 0,
                        placeHolderImage: try entry.string("BackgroundImageUrl", code: code) ?? "",
                        fixedVideoUser: user, fixedVideoStreamType: streamType))
            }
            mixing.videoLayoutList = layouts
        }
    }

    /// The client API's field names in validation messages and the admin API's in their place.
    static let adminFieldNames: [(String, String)] = [
        ("target.cdnUrlList", "PublishCdnParams"), (".rtmpUrl", ".PublishCdnUrl"),
        ("target.mixStreamIdentity.userId", "FeedBackRoomParams.UserId"),
        ("mixingConfig.videoLayoutList", "VideoParams.LayoutParams.MixLayoutList"),
        ("mixingConfig.watermarkList", "VideoParams.WaterMarkList"), (".watermarkUrl", ".WaterMarkImage.WaterMarkUrl"),
        ("mixingConfig.audioMixUserList", "AudioParams.SubscribeAudioList"), (".volume", ".Volume"),
        ("mixingConfig", "VideoParams"), (".zOrder", ".ZOrder"), (".rect ", " "),
        ("encoderParam.videoEncodedWidth", "VideoParams.VideoEncode.Width"), ("encoderParam.videoEncodedHeight", "VideoParams.VideoEncode.Height"),
        ("encoderParam.videoEncodedFPS", "VideoParams.VideoEncode.Fps"), ("encoderParam.videoEncodedGOP", "VideoParams.VideoEncode.Gop"),
        ("encoderParam.videoEncodedKbps", "VideoParams.VideoEncode.BitRate"), ("encoderParam size", "VideoParams.VideoEncode size"),
        ("encoderParam.audioEncodedSampleRate", "AudioParams.AudioEncode.SampleRate"),
        ("encoderParam.audioEncodedChannelNum", "AudioParams.AudioEncode.Channel"),
        ("encoderParam.audioEncodedKbps", "AudioParams.AudioEncode.BitRate"),
        ("encoderParam.audioEncodedCodecType", "AudioParams.AudioEncode.Codec"),
    ]

    /// Runs a validation, rewriting the field names of its error into the admin API's.
    static func withAdminNames(_ body: () throws(LiveRoomError) -> Void) throws(LiveRoomError) {
        do {
            try body()
        } catch {
            var message = error.message
            for (client, admin) in adminFieldNames {
                message = message.replacingOccurrences(of: client, with: admin)
            }
            throw LiveRoomError(error.code, message)
        }
    }

    /// A new admin mix: the grid template, audio-only anchors take no place (`PureAudioHoldPlaceMode` 0).
    static let defaultMixing = StreamMixingConfig(template: .grid, pureAudioHoldsPlace: false)

    /// Admin `RenderMode`: 0 crop to fill, 1 stretch, 2 fit with bars.
    private static func renderModeFill(_ fields: JSONFields, _ key: String) throws(LiveRoomError) -> VideoFillMode? {
        switch try fields.int(key, code: ErrorCode.invalidLayout) {
        case nil: return nil
        case 0: return .fill
        case 1: return .stretch
        case 2: return .fit
        case let mode?:
            throw fields.invalid(key, "\(mode) is not 0 (crop), 1 (stretch) or 2 (fit with bars)", code: ErrorCode.invalidLayout)
        }
    }

    /// A `UserMediaStream`: the user (`nil` when `UserInfo` or its `UserId` is left out) and `StreamType` (0 camera, 1 screen).
    private static func userMediaStream(_ stream: JSONFields, code: Int, roomIdType: Int) throws(LiveRoomError) -> (MixUser?, MixStreamType) {
        let type = try stream.int("StreamType", code: code) ?? 0
        guard type == 0 || type == 1 else {
            throw stream.invalid("StreamType", "must be 0 (camera) or 1 (screen share), not \(type)", code: code)
        }
        var user: MixUser?
        if let info = try stream.fields("UserInfo", code: code), (try info.string("UserId", code: code) ?? "") != "" {
            user = try userInfo(info, code: code, roomIdType: roomIdType)
        }
        return (user, type == 1 ? .sub : .big)
    }

    /// A `MixUserInfo`: `UserId`, `RoomId`, `RoomIdType` (`roomIdType`, the request's, when left out).
    private static func userInfo(_ info: JSONFields, code: Int, roomIdType: Int) throws(LiveRoomError) -> MixUser {
        let userId = try info.string("UserId", code: code) ?? ""
        guard !userId.isEmpty else {
            throw info.invalid("UserId", "is missing or empty", code: code)
        }
        let room = try room(info, roomIdType: Self.roomIdType(info, default: roomIdType))
        return MixUser(userId: userId, roomId: room?.key ?? "")
    }

    /// `RoomIdType`: 0 integer room, 1 string room; `default` when left out.
    private static func roomIdType(_ fields: JSONFields, default: Int) throws(LiveRoomError) -> Int {
        let type = try fields.int("RoomIdType", code: ErrorCode.invalidParameter) ?? `default`
        guard type == 0 || type == 1 else {
            throw fields.invalid("RoomIdType", "must be 0 (integer room) or 1 (string room), not \(type)", code: ErrorCode.invalidParameter)
        }
        return type
    }

    /// The room `RoomId` names: with `roomIdType` 0 the integer room (1–4294967295, a number or
    /// its digits), with 1 the string room. Nil when `RoomId` is left out or empty.
    private static func room(_ fields: JSONFields, roomIdType: Int) throws(LiveRoomError) -> RoomID? {
        guard let text = try fields.identifier("RoomId", code: ErrorCode.invalidParameter), !text.isEmpty else { return nil }
        guard roomIdType == 0 else { return .string(text) }
        guard let number = UInt32(text), number != 0, String(number) == text else {
            throw fields.invalid("RoomId", "must be an integer room id 1–4294967295 with RoomIdType 0, not \(text.quoted)", code: ErrorCode.invalidParameter)
        }
        return .number(number)
    }
}
