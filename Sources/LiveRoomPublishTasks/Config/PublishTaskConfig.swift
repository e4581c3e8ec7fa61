import LiveRoomProtocol

/// Everything one publish media stream task does: where it publishes, how it encodes, and
/// what it mixes. Both the client API (`startPublishMediaStream`) and the admin API
/// (`StartPublishCdnStream`) parse into this.
public struct PublishTaskConfig: Sendable, Hashable, Codable {
    /// The default time a task keeps running after every input has left (admin `MaxIdleTime`).
    public static let defaultIdleTimeout = Duration.seconds(30)
    /// The admin API's `MaxIdleTime` range, in seconds.
    public static let idleTimeoutSecondsRange = 5...86400

    public var target: PublishTarget
    /// The output encoding. Relays may leave it out (the stream is passed on as published).
    public var encoderParam: StreamEncoderParam?
    /// The mix; `nil` for relays. Mixing modes without one mix every anchor with TRTC's defaults.
    public var mixingConfig: StreamMixingConfig?
    /// The relayed user for ``PublishMode/bigStreamToCdn`` and ``PublishMode/subStreamToCdn``.
    public var relaySource: MixUser?
    /// How long the task lives on after every input has left; `nil` for the server's default.
    public var idleTimeout: Duration?
    /// The robot user id of an admin task (`AgentParams.UserId`), if given.
    public var agentUserId: String?
    /// SEI the server puts into the output itself (`SeiParams`, `videoSeiParams`).
    public var seiParams: TaskSEIParams?

    public init(
        target: PublishTarget, encoderParam: StreamEncoderParam? = nil, mixingConfig: StreamMixingConfig? = nil,
        relaySource: MixUser? = nil, idleTimeout: Duration? = nil, agentUserId: String? = nil, seiParams: TaskSEIParams? = nil
    ) {
        self.target = target
        self.encoderParam = encoderParam
        self.mixingConfig = mixingConfig
        self.relaySource = relaySource
        self.idleTimeout = idleTimeout
        self.agentUserId = agentUserId
        self.seiParams = seiParams
    }

    /// The output encoding: the task's, or TRTC's defaults (a relay may leave it out; its
    /// audio is encoded with these settings).
    public var effectiveEncoderParam: StreamEncoderParam { encoderParam ?? StreamEncoderParam() }

    /// What this task is counted at against the server's encoding budget until its runner
    /// reports what it really costs (inputs decoded included; docs/mixing.md): a mix's output
    /// size times its frame rate, nothing for audio-only output. A relay passes an H.264
    /// anchor's video through but transcodes a VP8 anchor's at the anchor's size, which is not
    /// known before it starts, so it counts as the default publishing size (``relayEncodingCost``).
    public var encodingCost: Int {
        guard target.mode.isMixing else { return Self.relayEncodingCost }
        guard let encoder = encoderParam, encoder.hasVideo else { return 0 }
        return encoder.videoEncodedWidth * encoder.videoEncodedHeight * encoder.videoEncodedFPS
    }

    /// What a relay counts against the encoding budget: 540x960 at 15 fps.
    public static let relayEncodingCost = 540 * 960 * 15

    /// Whether the output carries video. Relays pass on what the source publishes, taken as audio+video.
    public var hasVideo: Bool { target.mode.isMixing ? encoderParam?.hasVideo ?? false : true }

    /// The mixing config a mixing task runs with: its own, or TRTC's default (a grid of every anchor).
    public var effectiveMixingConfig: StreamMixingConfig {
        if let mixingConfig { return mixingConfig }
        return StreamMixingConfig(template: hasVideo ? .grid : .custom)
    }

    /// Checks the whole task: target, encoding, mix, relay source.
    public func validate() throws(LiveRoomError) {
        try target.validate()
        if let encoderParam { try encoderParam.validate() }
        if target.mode.isMixing {
            guard let encoderParam else {
                throw LiveRoomError(ErrorCode.missingParameter, "encoderParam is required for mode \(target.mode.name)")
            }
            try mixingConfig?.validate(canvas: encoderParam.canvas)
        } else {
            guard let relaySource, !relaySource.userId.isEmpty else {
                throw LiveRoomError(ErrorCode.invalidRelaySource, "mode \(target.mode.name) needs the user whose stream is relayed")
            }
        }
        if let idleTimeout {
            let range = Self.idleTimeoutSecondsRange
            guard idleTimeout >= .seconds(range.lowerBound), idleTimeout <= .seconds(range.upperBound) else {
                throw LiveRoomError(ErrorCode.invalidParameter, "MaxIdleTime must be \(range.lowerBound) to \(range.upperBound) seconds")
            }
        }
    }
}
