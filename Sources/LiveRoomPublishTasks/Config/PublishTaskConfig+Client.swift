import LiveRoomProtocol

extension PublishTaskConfig {
    /// Parses the client API's `startPublishMediaStream(target, encoderParam, mixingConfig)`
    /// (and `updatePublishMediaStream`) arguments, shaped like TRTC's `TRTCPublishTarget`,
    /// `TRTCStreamEncoderParam` and `TRTCStreamMixingConfig`, and validates the result.
    ///
    /// - Parameters:
    ///   - caller: the anchor calling; relays (`bigStreamToCdn`, `subStreamToCdn`) relay the caller's own stream.
    ///   - encoderParam: `nil` or JSON null when not given (allowed for relays).
    ///   - mixingConfig: `nil` or JSON null when not given.
    public static func parseClient(
        target: JSONValue, encoderParam: JSONValue?, mixingConfig: JSONValue?, caller: MixUser
    ) throws(LiveRoomError) -> PublishTaskConfig {
        let target = try parseClientTarget(JSONFields(taskParameters: target, path: "target", code: ErrorCode.invalidPublishTarget))
        var config = PublishTaskConfig(target: target)
        if let encoderParam, encoderParam != .null {
            let fields = try JSONFields(taskParameters: encoderParam, path: "encoderParam", code: ErrorCode.invalidVideoEncoding)
            config.encoderParam = try parseClientEncoderParam(fields)
            config.seiParams = try parseClientSEIParams(fields)
        }
        if let mixingConfig, mixingConfig != .null, target.mode.isMixing {
            config.mixingConfig = try parseClientMixingConfig(
                JSONFields(taskParameters: mixingConfig, path: "mixingConfig", code: ErrorCode.invalidLayout))
        }
        if !target.mode.isMixing {
            config.relaySource = caller
        }
        try config.validate()
        return config
    }

    /// Parses `updatePublishMediaStream(taskId, target, encoderParam, mixingConfig)` against the
    /// task's current config: an argument left out (or JSON null) keeps its current value.
    /// Whether the change is allowed is for ``PublishTaskStateMachine/update(_:now:)`` to decide.
    public static func parseClientUpdate(
        target: JSONValue?, encoderParam: JSONValue?, mixingConfig: JSONValue?, caller: MixUser, current: PublishTaskConfig
    ) throws(LiveRoomError) -> PublishTaskConfig {
        var config = current
        if let target, target != .null {
            config.target = try parseClientTarget(JSONFields(taskParameters: target, path: "target", code: ErrorCode.invalidPublishTarget))
        }
        if let encoderParam, encoderParam != .null {
            let fields = try JSONFields(taskParameters: encoderParam, path: "encoderParam", code: ErrorCode.invalidVideoEncoding)
            config.encoderParam = try parseClientEncoderParam(fields)
            config.seiParams = try parseClientSEIParams(fields)
        }
        if config.target.mode.isMixing {
            if let mixingConfig, mixingConfig != .null {
                config.mixingConfig = try parseClientMixingConfig(
                    JSONFields(taskParameters: mixingConfig, path: "mixingConfig", code: ErrorCode.invalidLayout))
            }
            config.relaySource = nil
        } else {
            config.mixingConfig = nil
            config.relaySource = current.relaySource ?? caller
        }
        try config.validate()
        return config
    }

    /// Parses a client request object `{"target": …, "encoderParam": …, "mixingConfig": …}`.
    public static func parseClient(request: JSONValue, caller: MixUser) throws(LiveRoomError) -> PublishTaskConfig {
        let fields = try JSONFields(taskParameters: request, path: "request", code: ErrorCode.invalidParameter)
        guard let target = fields.value("target") else { throw fields.missing("target") }
        return try parseClient(
            target: target, encoderParam: fields.value("encoderParam"), mixingConfig: fields.value("mixingConfig"), caller: caller)
    }

    static func parseClientTarget(_ fields: JSONFields) throws(LiveRoomError) -> PublishTarget {
        let code = ErrorCode.invalidPublishTarget
        guard
            let mode = try fields.enumeration(
                "mode", code: code,
                numbers: [1: PublishMode.bigStreamToCdn, 2: .subStreamToCdn, 3: .mixStreamToCdn, 4: .mixStreamToRoom],
                names: [
                    "bigstreamtocdn": .bigStreamToCdn, "substreamtocdn": .subStreamToCdn,
                    "mixstreamtocdn": .mixStreamToCdn, "mixstreamtoroom": .mixStreamToRoom,
                ],
                prefixes: ["trtcpublishmode", "trtcpublish"])
        else { throw fields.missing("mode") }
        var target = PublishTarget(mode: mode)
        if mode.publishesToCdn {
            for url in try fields.objectArray("cdnUrlList", code: ErrorCode.invalidCdnUrl) ?? [] {
                target.cdnUrlList.append(
                    PublishCdnUrl(
                        rtmpUrl: try url.requiredString("rtmpUrl", code: ErrorCode.invalidCdnUrl),
                        isInternalLine: try url.bit("isInternalLine", code: ErrorCode.invalidCdnUrl) ?? true))
            }
        } else if let identity = try fields.fields("mixStreamIdentity", code: code) {
            target.mixStreamIdentity = try parseClientUser(identity, code: code)
        }
        return target
    }

    static func parseClientEncoderParam(_ fields: JSONFields) throws(LiveRoomError) -> StreamEncoderParam {
        let video = ErrorCode.invalidVideoEncoding
        let audio = ErrorCode.invalidAudioEncoding
        var param = StreamEncoderParam()
        param.videoEncodedWidth = try fields.int("videoEncodedWidth", code: ErrorCode.invalidVideoResolution) ?? 0
        param.videoEncodedHeight = try fields.int("videoEncodedHeight", code: ErrorCode.invalidVideoResolution) ?? 0
        param.videoEncodedFPS = try fields.int("videoEncodedFPS", code: video) ?? param.videoEncodedFPS
        param.videoEncodedGOP = try fields.int("videoEncodedGOP", code: video) ?? param.videoEncodedGOP
        param.videoEncodedKbps = try fields.int("videoEncodedKbps", code: video) ?? param.videoEncodedKbps
        param.videoEncodedCodecType = try fields.int("videoEncodedCodecType", code: ErrorCode.unsupportedCodec) ?? 0
        param.audioEncodedSampleRate = try fields.int("audioEncodedSampleRate", code: audio) ?? param.audioEncodedSampleRate
        param.audioEncodedChannelNum = try fields.int("audioEncodedChannelNum", code: audio) ?? param.audioEncodedChannelNum
        param.audioEncodedKbps = try fields.int("audioEncodedKbps", code: audio) ?? param.audioEncodedKbps
        param.audioEncodedCodecType = try fields.int("audioEncodedCodecType", code: ErrorCode.unsupportedCodec) ?? 0
        return param
    }

    /// `encoderParam.videoSeiParams` (TRTC's `TRTCStreamEncoderParam.videoSeiParams`), if given.
    static func parseClientSEIParams(_ fields: JSONFields) throws(LiveRoomError) -> TaskSEIParams? {
        guard let value = fields.value("videoSeiParams"), value != .null, value.stringValue?.isEmpty != true else { return nil }
        return try TaskSEIParams.parseClient(value, field: fields, key: "videoSeiParams")
    }

    static func parseClientMixingConfig(_ fields: JSONFields) throws(LiveRoomError) -> StreamMixingConfig {
        var config = StreamMixingConfig()
        config.backgroundColor = try fields.color("backgroundColor", code: ErrorCode.invalidBackground) ?? 0
        config.backgroundImage = try fields.string("backgroundImage", code: ErrorCode.invalidBackground) ?? ""
        // LiveRoom extension: TRTC's admin templates (and PK) from the client API too.
        config.template =
            try fields.enumeration(
                "layoutMode", code: ErrorCode.invalidLayoutMode,
                numbers: [1: LayoutTemplate.float, 2: .screenShare, 3: .grid, 4: .custom, 5: .pk],
                names: ["float": .float, "screenshare": .screenShare, "grid": .grid, "custom": .custom, "pk": .pk], prefixes: []) ?? .custom
        for layout in try fields.objectArray("videoLayoutList", code: ErrorCode.invalidLayout) ?? [] {
            config.videoLayoutList.append(try parseClientVideoLayout(layout))
        }
        for user in try fields.objectArray("audioMixUserList", code: ErrorCode.invalidAudioMixUser) ?? [] {
            config.audioMixUserList.append(
                AudioMixUser(
                    user: try parseClientUser(user, code: ErrorCode.invalidAudioMixUser),
                    volume: try user.int("volume", code: ErrorCode.invalidAudioMixUser) ?? 100))
        }
        for watermark in try fields.objectArray("watermarkList", code: ErrorCode.invalidWatermark) ?? [] {
            guard let rect = try watermark.rect("rect", code: ErrorCode.invalidLayoutRect) else { throw watermark.missing("rect") }
            config.watermarkList.append(
                Watermark(
                    watermarkUrl: try watermark.requiredString("watermarkUrl", code: ErrorCode.invalidWatermark), rect: rect,
                    zOrder: try watermark.int("zOrder", code: ErrorCode.invalidZOrder) ?? 0))
        }
        return config
    }

    static func parseClientVideoLayout(_ fields: JSONFields) throws(LiveRoomError) -> VideoLayout {
        let code = ErrorCode.invalidLayout
        guard let rect = try fields.rect("rect", code: ErrorCode.invalidLayoutRect) else { throw fields.missing("rect") }
        var layout = VideoLayout(rect: rect)
        layout.zOrder = try fields.int("zOrder", code: ErrorCode.invalidZOrder) ?? 0
        layout.fillMode =
            try fields.enumeration(
                "fillMode", code: code, numbers: [0: VideoFillMode.fill, 1: .fit],
                names: ["fill": .fill, "fit": .fit], prefixes: ["trtcvideofillmode"]) ?? .fill
        layout.backgroundColor = try fields.color("backgroundColor", code: code) ?? 0
        layout.placeHolderImage = try fields.string("placeHolderImage", code: code) ?? ""
        if let user = try fields.fields("fixedVideoUser", code: code) {
            let parsed = try parseClientUser(user, code: code, userIdRequired: false)
            // TRTC: a fixedVideoUser without a userId means "fill automatically".
            layout.fixedVideoUser = parsed.userId.isEmpty ? nil : parsed
        }
        layout.fixedVideoStreamType =
            try fields.enumeration(
                "fixedVideoStreamType", code: code, numbers: [0: MixStreamType.big, 1: .small, 2: .sub],
                names: ["big": .big, "small": .small, "sub": .sub], prefixes: ["trtcvideostreamtype"]) ?? .big
        return layout
    }

    /// A `TRTCUser`: `userId` with `intRoomId` (the numeric room; 0 is not set), `strRoomId` or
    /// `roomId` (a number for a numeric room, a string for a string room). As in TRTC, `intRoomId`
    /// wins when both it and `strRoomId` are set. No room means the task's own.
    static func parseClientUser(_ fields: JSONFields, code: Int, userIdRequired: Bool = true) throws(LiveRoomError) -> MixUser {
        let userId = try fields.string("userId", code: code) ?? ""
        if userIdRequired, userId.isEmpty {
            throw fields.invalid("userId", "is missing or empty", code: code)
        }
        if let number = try roomNumber(fields, "intRoomId", code: code), number != 0 {
            return MixUser(userId: userId, room: .number(number))
        }
        if let strRoomId = try fields.string("strRoomId", code: code), !strRoomId.isEmpty {
            return MixUser(userId: userId, room: .string(strRoomId))
        }
        if fields.value("roomId")?.intValue != nil {
            let number = try roomNumber(fields, "roomId", code: code) ?? 0
            return number == 0 ? MixUser(userId: userId) : MixUser(userId: userId, room: .number(number))
        }
        return MixUser(userId: userId, room: .string(try fields.identifier("roomId", code: code) ?? ""))
    }

    /// An integer room id field, 0 (not set) to 4294967295.
    private static func roomNumber(_ fields: JSONFields, _ key: String, code: Int) throws(LiveRoomError) -> UInt32? {
        guard let int = try fields.int(key, code: code) else { return nil }
        guard let number = UInt32(exactly: int) else {
            throw fields.invalid(key, "must be 1–4294967295 (0: not set), not \(int)", code: code)
        }
        return number
    }
}
