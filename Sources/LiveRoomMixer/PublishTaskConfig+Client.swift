import LiveRoomCore

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
        let target = try parseClientTarget(JSONFields(target, path: "target", code: MixerErrorCode.invalidPublishTarget))
        var config = PublishTaskConfig(target: target)
        if let encoderParam, encoderParam != .null {
            config.encoderParam = try parseClientEncoderParam(
                JSONFields(encoderParam, path: "encoderParam", code: MixerErrorCode.invalidVideoEncoding))
        }
        if let mixingConfig, mixingConfig != .null, target.mode.isMixing {
            config.mixingConfig = try parseClientMixingConfig(
                JSONFields(mixingConfig, path: "mixingConfig", code: MixerErrorCode.invalidLayout))
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
            config.target = try parseClientTarget(JSONFields(target, path: "target", code: MixerErrorCode.invalidPublishTarget))
        }
        if let encoderParam, encoderParam != .null {
            config.encoderParam = try parseClientEncoderParam(
                JSONFields(encoderParam, path: "encoderParam", code: MixerErrorCode.invalidVideoEncoding))
        }
        if config.target.mode.isMixing {
            if let mixingConfig, mixingConfig != .null {
                config.mixingConfig = try parseClientMixingConfig(
                    JSONFields(mixingConfig, path: "mixingConfig", code: MixerErrorCode.invalidLayout))
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
        let fields = try JSONFields(request, path: "request", code: MixerErrorCode.invalidParameter)
        guard let target = fields.value("target") else { throw fields.missing("target") }
        return try parseClient(
            target: target, encoderParam: fields.value("encoderParam"), mixingConfig: fields.value("mixingConfig"), caller: caller)
    }

    static func parseClientTarget(_ fields: JSONFields) throws(LiveRoomError) -> PublishTarget {
        let code = MixerErrorCode.invalidPublishTarget
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
            for url in try fields.objectArray("cdnUrlList", code: MixerErrorCode.invalidCdnUrl) ?? [] {
                target.cdnUrlList.append(
                    PublishCdnUrl(
                        rtmpUrl: try url.requiredString("rtmpUrl", code: MixerErrorCode.invalidCdnUrl),
                        isInternalLine: try url.bool("isInternalLine", code: MixerErrorCode.invalidCdnUrl) ?? true))
            }
        } else if let identity = try fields.fields("mixStreamIdentity", code: code) {
            target.mixStreamIdentity = try parseClientUser(identity, code: code)
        }
        return target
    }

    static func parseClientEncoderParam(_ fields: JSONFields) throws(LiveRoomError) -> StreamEncoderParam {
        let video = MixerErrorCode.invalidVideoEncoding
        let audio = MixerErrorCode.invalidAudioEncoding
        var param = StreamEncoderParam()
        param.videoEncodedWidth = try fields.int("videoEncodedWidth", code: MixerErrorCode.invalidVideoResolution) ?? 0
        param.videoEncodedHeight = try fields.int("videoEncodedHeight", code: MixerErrorCode.invalidVideoResolution) ?? 0
        param.videoEncodedFPS = try fields.int("videoEncodedFPS", code: video) ?? param.videoEncodedFPS
        param.videoEncodedGOP = try fields.int("videoEncodedGOP", code: video) ?? param.videoEncodedGOP
        param.videoEncodedKbps = try fields.int("videoEncodedKbps", code: video) ?? param.videoEncodedKbps
        param.videoEncodedCodecType = try fields.int("videoEncodedCodecType", code: MixerErrorCode.unsupportedCodec) ?? 0
        param.audioEncodedSampleRate = try fields.int("audioEncodedSampleRate", code: audio) ?? param.audioEncodedSampleRate
        param.audioEncodedChannelNum = try fields.int("audioEncodedChannelNum", code: audio) ?? param.audioEncodedChannelNum
        param.audioEncodedKbps = try fields.int("audioEncodedKbps", code: audio) ?? param.audioEncodedKbps
        param.audioEncodedCodecType = try fields.int("audioEncodedCodecType", code: MixerErrorCode.unsupportedCodec) ?? 0
        return param
    }

    static func parseClientMixingConfig(_ fields: JSONFields) throws(LiveRoomError) -> StreamMixingConfig {
        var config = StreamMixingConfig()
        config.backgroundColor = try fields.color("backgroundColor", code: MixerErrorCode.invalidBackground) ?? 0
        config.backgroundImage = try fields.string("backgroundImage", code: MixerErrorCode.invalidBackground) ?? ""
        // LiveRoom extension: TRTC's admin templates from the client API too.
        config.template =
            try fields.enumeration(
                "layoutMode", code: MixerErrorCode.invalidLayoutMode,
                numbers: [1: LayoutTemplate.float, 2: .screenShare, 3: .grid, 4: .custom],
                names: ["float": .float, "screenshare": .screenShare, "grid": .grid, "custom": .custom], prefixes: []) ?? .custom
        for layout in try fields.objectArray("videoLayoutList", code: MixerErrorCode.invalidLayout) ?? [] {
            config.videoLayoutList.append(try parseClientVideoLayout(layout))
        }
        for user in try fields.objectArray("audioMixUserList", code: MixerErrorCode.invalidAudioMixUser) ?? [] {
            config.audioMixUserList.append(
                AudioMixUser(
                    user: try parseClientUser(user, code: MixerErrorCode.invalidAudioMixUser),
                    volume: try user.int("volume", code: MixerErrorCode.invalidAudioMixUser) ?? 100))
        }
        for watermark in try fields.objectArray("watermarkList", code: MixerErrorCode.invalidWatermark) ?? [] {
            guard let rect = try watermark.rect("rect", code: MixerErrorCode.invalidLayoutRect) else { throw watermark.missing("rect") }
            config.watermarkList.append(
                Watermark(
                    watermarkUrl: try watermark.requiredString("watermarkUrl", code: MixerErrorCode.invalidWatermark), rect: rect,
                    zOrder: try watermark.int("zOrder", code: MixerErrorCode.invalidZOrder) ?? 0))
        }
        return config
    }

    static func parseClientVideoLayout(_ fields: JSONFields) throws(LiveRoomError) -> VideoLayout {
        let code = MixerErrorCode.invalidLayout
        guard let rect = try fields.rect("rect", code: MixerErrorCode.invalidLayoutRect) else { throw fields.missing("rect") }
        var layout = VideoLayout(rect: rect)
        layout.zOrder = try fields.int("zOrder", code: MixerErrorCode.invalidZOrder) ?? 0
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

    /// A `TRTCUser`: `userId` with `strRoomId`, `intRoomId` or `roomId`.
    static func parseClientUser(_ fields: JSONFields, code: Int, userIdRequired: Bool = true) throws(LiveRoomError) -> MixUser {
        let userId = try fields.string("userId", code: code) ?? ""
        if userIdRequired, userId.isEmpty {
            throw LiveRoomError(code, "\(fields.name("userId")) is missing or empty")
        }
        var roomId = try fields.string("strRoomId", code: code) ?? ""
        if roomId.isEmpty, let int = try fields.int("intRoomId", code: code), int != 0 {
            roomId = String(int)
        }
        if roomId.isEmpty, let value = fields.value("roomId") {
            if let text = value.stringValue {
                roomId = text
            } else if let int = value.intValue {
                roomId = String(int)
            } else {
                throw LiveRoomError(code, "\(fields.name("roomId")) must be a string or an integer, not \(value.typeName)")
            }
        }
        return MixUser(userId: userId, roomId: roomId)
    }
}
