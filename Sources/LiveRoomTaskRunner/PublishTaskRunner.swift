import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomWire
import NIOCore

/// Runs the media of one publish media stream task on its own thread: decodes the inputs,
/// composes the layout, encodes H.264 and AAC, and pushes FLV to every RTMP URL.
///
/// The task's ``PublishTaskStateMachine`` decides; the runner executes. The server calls
/// ``connect(url:)``, ``disconnect(url:)``, ``apply(_:)``, ``setAnchors(_:)`` and ``stop()``;
/// the runner reports each RTMP connection's fate through `onEvent`. None of these calls
/// block: they queue work for the task's thread, so a slow task or a dead CDN never holds
/// up the media port or another task.
///
/// - Mixing tasks draw a frame every 1/fps seconds and mix 1024 audio samples every
///   1024/rate seconds, whether or not anyone is present, so the CDN stream runs on while
///   co-hosts come and go. Timestamps come from that schedule and stay continuous across
///   updates and reconnects.
/// - A relay of an H.264 publisher passes the access units on without re-encoding; a VP8
///   publisher is decoded and encoded to H.264 at its own size. Audio is always Opus → AAC.
public final class PublishTaskRunner: @unchecked Sendable {
    /// What the runner reports to the state machine.
    public enum Event: Sendable, Hashable {
        case rtmpConnected(url: String)
        case rtmpFailed(url: String, message: String)
        /// The egress policy refused the URL's destination.
        case rtmpRefused(url: String)
        /// An image of the config cannot be used (-7235); the placeholder colour is drawn instead.
        case imageUnavailable(url: String, error: LiveRoomError)
        /// What the task costs the encoding budget, in pixels a second (``EncodingMeter``): the
        /// pixels it encodes plus those its inputs decode, weighted. A relay reports at its first
        /// frame (nothing for an H.264 anchor passed through; a VP8 anchor's size at the task's
        /// rate, encoded and decoded), then, like a mix, after every 2 s in which its cost moved
        /// by more than a tenth.
        case encoding(pixelsPerSecond: Int)
    }

    /// Where a ``PublishMode/mixStreamToRoom`` task's mix goes: RTP packets (H.264 and
    /// Opus, unprotected) handed to the media port as a local publisher of the room.
    public typealias RoomOutput = @Sendable ([(packet: [UInt8], kind: RoomOutputKind)]) -> Void

    public enum RoomOutputKind: Sendable { case audio, video }

    /// Counters since the task started.
    public struct Statistics: Sendable, Hashable {
        public var videoFrames = 0
        public var audioFrames = 0
        /// Video ticks skipped because the thread fell behind.
        public var skippedVideoFrames = 0
        public var inputPackets = 0
        public var decodedFrames = 0
        public var decodeErrors = 0
        public var encodeErrors = 0
        /// SEI messages put into the output: anchors' and the task's own.
        public var seiInserted = 0
        /// Anchors' SEI messages not passed on (over a sender's limits, or too many waiting).
        public var seiDropped = 0
    }

    public let taskId: String
    public let roomId: String
    let onEvent: @Sendable (Event) -> Void
    let requestKeyframe: @Sendable (MixUser) -> Void
    let log: @Sendable (String) -> Void
    let roomOutput: RoomOutput?
    let roomStream: RoomStream?

    // The inbox, guarded by `condition`.
    let condition = NSCondition()
    var inboxPackets: [(MixUser, VideoCodec?, RTPPacket)] = []
    var inboxConfig: PublishTaskConfig?
    var inboxAnchors: [MixAnchor]?
    var inboxConnections: [(url: String, open: Bool)] = []
    var keyframeWanted = false
    var stopRequested = false
    var counters = Statistics()

    /// Checks and pins every RTMP destination before each connection.
    let egress: EgressResolver
    /// Loads the config's images.
    let imageLoader: ImageLoader

    // Owned by the task's thread once it starts.
    /// A keyframe was asked for and the next video frame will be one.
    var keyframeDue = false
    var config: PublishTaskConfig
    var anchors: [MixAnchor] = []
    var inputs: [MixUser: MixInput] = [:]
    var publishers: [String: RTMPPublisher] = [:]
    /// URLs to open once the video track is known (a relay before its first keyframe).
    var waitingURLs: [String] = []
    var video: VideoPipeline
    var audioMixer: AudioMixer
    let aac: AACEncoder
    /// A relayed RTP timestamp and the output time it maps to.
    var relayClock: (rtpTimestamp: UInt32, milliseconds: Int64)?
    /// Anchors' SEI messages for the next output frame (of a mix or a transcoded relay).
    var pendingSEI: [TaggedSEIMessage] = []
    /// When the task's own SEI messages last went out.
    var lastPassThrough: ContinuousClock.Instant?
    var lastLayoutVolume: ContinuousClock.Instant?
    /// The most anchors' SEI messages waiting for an output frame, and put on one.
    static let maxPendingSEI = 32
    static let maxSEIPerFrame = 8
    let start = ContinuousClock.now
    /// Each mixed user's volume by the current layout; nil when the config, the anchors or a
    /// picture's size changed since it was worked out.
    var mixVolumes: [MixUser: Int]?
    var nextVideo: ContinuousClock.Instant
    /// When the output frame being drawn is drawn: inputs decode the frames due by then.
    var drawTime: ContinuousClock.Instant?
    var nextAudioFrame: Int64 = 0
    var meter: EncodingMeter

    /// How video gets from the inputs to H.264.
    enum VideoPipeline {
        /// Audio-only output.
        case none
        /// Compose the canvas and encode it.
        case mix(VideoCompositor, H264Encoder)
        /// A relay of VP8: waits for the first picture to size the encoder, then encodes it.
        case transcodeRelay(VideoCompositor?, H264Encoder?)
        /// A relay of H.264: waits for the first keyframe for the parameter sets, then passes access units on.
        case passthrough(RTMPPublisher.VideoTrack?)
    }

    /// The video pipeline a config starts with: a mix's encoder now, a relay's at its first frame.
    static func videoPipeline(for config: PublishTaskConfig) throws -> VideoPipeline {
        guard config.target.mode.isMixing else { return .passthrough(nil) }
        let param = config.effectiveEncoderParam
        guard param.hasVideo else { return .none }
        let compositor = try VideoCompositor(width: param.videoEncodedWidth, height: param.videoEncodedHeight)
        let encoder = try H264Encoder(
            width: param.videoEncodedWidth, height: param.videoEncodedHeight, fps: param.videoEncodedFPS,
            bitrateKbps: param.effectiveVideoKbps, gopSeconds: param.videoEncodedGOP, globalHeader: true)
        return .mix(compositor, encoder)
    }

    /// Builds the encoders for `config` (so a bad config fails here, not later) and starts the thread.
    /// - Parameters:
    ///   - onEvent: RTMP connections that came up or failed; called on other threads.
    ///   - requestKeyframe: ask an input's publisher for a keyframe.
    ///   - egress: where RTMP connections may go; refused URLs fail at once.
    ///   - images: loads placeholder, background and watermark images.
    public init(
        taskId: String, roomId: String, config: PublishTaskConfig,
        onEvent: @escaping @Sendable (Event) -> Void, requestKeyframe: @escaping @Sendable (MixUser) -> Void,
        roomOutput: RoomOutput? = nil, egress: EgressResolver = EgressResolver(policy: EgressPolicy()),
        images: ImageLoader = ImageLoader(directory: nil, egress: EgressResolver(policy: EgressPolicy())), log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        self.egress = egress
        self.imageLoader = images
        self.taskId = taskId
        self.roomId = roomId
        self.config = config
        self.onEvent = onEvent
        self.requestKeyframe = requestKeyframe
        self.roomOutput = roomOutput
        self.log = log
        roomStream = roomOutput == nil ? nil : try RoomStream(mediaStart: start)
        let param = config.effectiveEncoderParam
        aac = try AACEncoder(sampleRate: param.audioEncodedSampleRate, channels: param.audioEncodedChannelNum, bitrateKbps: param.audioEncodedKbps)
        audioMixer = AudioMixer(sampleRate: param.audioEncodedSampleRate, channels: param.audioEncodedChannelNum, samplesPerFrame: AACEncoder.samplesPerFrame)
        video = try Self.videoPipeline(for: config)
        nextVideo = start
        meter = EncodingMeter(start: start)
        let thread = Thread { [self] in run() }
        thread.name = "publish-task-\(taskId)"
        thread.start()
    }

    // MARK: Calls from the server (any thread)

    /// An RTP packet of an input (decrypted and parsed by the media port, which hands the
    /// parsed form on). Video packets carry their codec.
    public func receive(from user: MixUser, videoCodec: VideoCodec?, packet: RTPPacket) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopRequested, inboxPackets.count < 4096 else { return }
        inboxPackets.append((user, videoCodec, packet))
    }

    /// The publishing anchors present, in join order, with what they publish.
    public func setAnchors(_ anchors: [MixAnchor]) {
        post { $0.inboxAnchors = anchors }
    }

    /// A new config from an update (already checked by the state machine).
    public func apply(_ config: PublishTaskConfig) {
        post { $0.inboxConfig = config }
    }

    /// Opens an RTMP connection to `url`, or opens it again after a failure.
    public func connect(url: String) {
        post { $0.inboxConnections.append((url, true)) }
    }

    /// Closes the connection to `url`.
    public func disconnect(url: String) {
        post { $0.inboxConnections.append((url, false)) }
    }

    /// A subscriber of the room output needs a keyframe.
    public func requestOutputKeyframe() {
        post { $0.keyframeWanted = true }
    }

    /// Ends the task: the thread closes every connection and exits. Does not wait.
    public func stop() {
        post { $0.stopRequested = true }
    }

    public var statistics: Statistics {
        condition.lock()
        defer { condition.unlock() }
        return counters
    }

    func post(_ change: (PublishTaskRunner) -> Void) {
        condition.lock()
        change(self)
        condition.signal()
        condition.unlock()
    }

    // MARK: The task's thread

    func run() {
        while true {
            condition.lock()
            let due = nextDue()
            while !stopRequested && inboxConnections.isEmpty && inboxConfig == nil && inboxAnchors == nil && ContinuousClock.now < due {
                let wait = ContinuousClock.now.duration(to: due)
                _ = condition.wait(until: Date(timeIntervalSinceNow: wait.inSeconds))
            }
            if stopRequested {
                condition.unlock()
                break
            }
            let packets = inboxPackets
            inboxPackets.removeAll(keepingCapacity: true)
            let newConfig = inboxConfig
            let newAnchors = inboxAnchors
            let connections = inboxConnections
            inboxConfig = nil
            inboxAnchors = nil
            inboxConnections.removeAll()
            let forceKeyframe = keyframeWanted
            keyframeWanted = false
            condition.unlock()

            if let newConfig { reconfigure(newConfig) }
            if let newAnchors { updateAnchors(newAnchors) }
            for connection in connections {
                if connection.open { open(connection.url) } else { close(connection.url) }
            }
            let now = ContinuousClock.now
            receive(packets, now: now)
            if forceKeyframe, case .passthrough = video, let source = config.relaySource { requestKeyframe(source.resolved(in: roomId)) }
            produceAudio(until: now)
            // A keyframe asked for between two video frames goes into the next one.
            keyframeDue = keyframeDue || forceKeyframe
            if now >= nextVideo {
                produceVideo(now: now, forceKeyframe: keyframeDue)
                keyframeDue = false
            }
            if now >= meter.windowEnd { measureCost(now: now) }
        }
        for publisher in publishers.values { publisher.stop() }
        publishers.removeAll()
    }

    /// When the thread must next wake for output.
    func nextDue() -> ContinuousClock.Instant {
        let audioDue = start.advanced(by: .milliseconds(nextAudioFrame * Int64(AACEncoder.samplesPerFrame) * 1000 / Int64(audioMixer.sampleRate)))
        switch video {
        case .none: return audioDue
        default: return min(audioDue, nextVideo)
        }
    }

    var frameInterval: Duration {
        .nanoseconds(1_000_000_000 / Int64(max(1, config.effectiveEncoderParam.videoEncodedFPS)))
    }

    func milliseconds(since instant: ContinuousClock.Instant) -> Int64 {
        start.duration(to: instant).ticks(rate: 1000)
    }

    func reconfigure(_ newConfig: PublishTaskConfig) {
        mixVolumes = nil
        // The state machine counts an updated task by its estimate until the runner reports again.
        meter = EncodingMeter(start: .now)
        let wasMixing = config.target.mode.isMixing
        config = newConfig
        imageLoader.keep(only: newConfig.mixingConfig?.imageURLs ?? [])
        if newConfig.target.mode.isMixing != wasMixing {
            switchVideoPipeline()
        } else if case .mix(_, let encoder) = video, newConfig.effectiveEncoderParam.effectiveVideoKbps != encoder.bitrateKbps {
            encoder.setBitrate(kbps: newConfig.effectiveEncoderParam.effectiveVideoKbps)
        }
        dropInputsNotPresent()
    }

    /// A relay became a mix or a mix a relay: the same connections carry the new picture
    /// after a new sequence header.
    func switchVideoPipeline() {
        // Audio-only output stays audio-only (the state machine refuses that change).
        if case .none = video { return }
        do {
            video = try Self.videoPipeline(for: config)
        } catch {
            log("the new video pipeline cannot start: \(error)")
            count { $0.encodeErrors += 1 }
            video = .none
        }
        // A mix's track is known now; a relay's at the relayed user's next keyframe.
        announceVideoTrack()
        if let source = config.relaySource, !config.target.mode.isMixing { requestKeyframe(source.resolved(in: roomId)) }
    }

    /// Tells the open connections about a new video track.
    func announceVideoTrack() {
        guard let track = videoTrack else { return }
        for publisher in publishers.values { publisher.changeVideoTrack(track) }
    }

    func updateAnchors(_ newAnchors: [MixAnchor]) {
        mixVolumes = nil
        anchors = newAnchors
        dropInputsNotPresent()
        // A relayed user who publishes no video: the output is audio-only.
        if case .passthrough(nil) = video, let source = config.relaySource?.resolved(in: roomId),
            let anchor = anchors.first(where: { $0.user.resolved(in: roomId) == source }), !anchor.hasVideo
        {
            video = .none
            openWaitingURLs()
        }
    }

    /// Frees the decoders of users who left.
    func dropInputsNotPresent() {
        let present = Set(anchors.map { $0.user.resolved(in: roomId) })
        for user in inputs.keys where !present.contains(user) { inputs[user] = nil }
    }

    /// The user a relay passes on; nil for a mix.
    var relayedUser: MixUser? { config.target.mode.isMixing ? nil : config.relaySource?.resolved(in: roomId) }

    func receive(_ packets: [(MixUser, VideoCodec?, RTPPacket)], now: ContinuousClock.Instant) {
        var decoded = 0
        var errors = 0
        var keyframeRequests = Set<MixUser>()
        let relaySource = relayedUser
        for (user, codec, packet) in packets {
            guard let input = input(for: user) else { continue }
            guard let codec else {
                input.receiveAudio(Array(buffer: packet.payload))
                continue
            }
            for result in input.receiveVideo(packet, codec: codec, now: now) {
                switch result {
                case .requestKeyframe:
                    keyframeRequests.insert(user)
                case .frame(let frame):
                    if relaySource == user, frame.codec == .vp8, case .passthrough(nil) = video {
                        // FLV carries no VP8: this relay transcodes.
                        video = .transcodeRelay(nil, nil)
                    }
                    if relaySource == user, case .passthrough = video {
                        // The relayed access unit keeps its own SEI.
                        pass(frame, now: now)
                        continue
                    }
                    // Decoded when the next output frame draws it (or now, when too many wait);
                    // its SEI goes out with that frame.
                    let result = input.queue(frame)
                    if relaySource == nil || relaySource == user { queueSEI(result.sei) }
                    decoded += result.decoded
                    errors += result.failed
                    if result.failed > 0 { keyframeRequests.insert(user) }
                }
            }
        }
        for input in inputs.values where input.tick(now: now) { keyframeRequests.insert(input.user) }
        keyframeRequests.forEach(requestKeyframe)
        condition.lock()
        counters.inputPackets += packets.count
        counters.decodedFrames += decoded
        counters.decodeErrors += errors
        condition.unlock()
    }

    /// Keeps an input frame's SEI for the next output frame, which is the first to show it.
    func queueSEI(_ messages: [TaggedSEIMessage]) {
        guard !messages.isEmpty else { return }
        pendingSEI += messages
        if pendingSEI.count > Self.maxPendingSEI {
            let dropped = pendingSEI.count - Self.maxPendingSEI
            pendingSEI.removeFirst(dropped)
            count { $0.seiDropped += dropped }
        }
    }

    /// The SEI messages of the next output frame: anchors' messages waiting, then the task's
    /// own that are due (by their interval, or on a keyframe when they follow IDR frames).
    func seiForOutput(isKeyframe: Bool, now: ContinuousClock.Instant, canvas: MixSize) -> [TaggedSEIMessage] {
        var messages = Array(pendingSEI.prefix(Self.maxSEIPerFrame))
        pendingSEI.removeFirst(messages.count)
        func due(_ schedule: TaskSEIParams.Schedule, last: ContinuousClock.Instant?) -> Bool {
            guard let last else { return true }
            return (schedule.followIdr && isKeyframe) || now - last >= .milliseconds(schedule.intervalMilliseconds)
        }
        if let passThrough = config.seiParams?.passThrough, due(passThrough.schedule, last: lastPassThrough) {
            lastPassThrough = now
            messages.append(TaggedSEIMessage(message: passThrough.message))
        }
        if let layoutVolume = config.seiParams?.layoutVolume, due(layoutVolume.schedule, last: lastLayoutVolume) {
            lastLayoutVolume = now
            let message = layoutVolume.message(
                canvas: canvas, regions: layoutRegions(canvas: canvas), unixMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
            messages.append(TaggedSEIMessage(message: message))
        }
        if !messages.isEmpty { count { $0.seiInserted += messages.count } }
        return messages
    }

    /// Each anchor's place in the output and its audio level now: the mix's video items, or
    /// the relayed user over the whole picture.
    func layoutRegions(canvas: MixSize) -> [SEILayoutRegion] {
        if !config.target.mode.isMixing, let source = config.relaySource?.resolved(in: roomId) {
            return [SEILayoutRegion(
                userId: source.userId, rect: MixRect(x: 0, y: 0, width: canvas.width, height: canvas.height), zOrder: 0,
                volume: inputs[source]?.audioLevel ?? 0)]
        }
        return currentLayout(canvas: canvas).items.compactMap { item in
            guard case .video(let user, _, _) = item.content else { return nil }
            return SEILayoutRegion(userId: user.userId, rect: item.rect, zOrder: item.zOrder, volume: inputs[user]?.audioLevel ?? 0)
        }
    }

    /// `frame` with `messages` in an SEI NAL unit before its first slice.
    static func inserting(_ messages: [TaggedSEIMessage], into frame: EncodedVideoFrame) -> EncodedVideoFrame {
        guard !messages.isEmpty else { return frame }
        var frame = frame
        frame.data = H264SEI.inserting(H264SEI.nalUnit(messages), into: frame.data)
        return frame
    }

    func input(for user: MixUser) -> MixInput? {
        if let input = inputs[user] { return input }
        guard inputs.count < StreamMixingConfig.maxInputs,
            let input = try? MixInput(user: user, outputRate: audioMixer.sampleRate, outputChannels: audioMixer.channels)
        else { return nil }
        inputs[user] = input
        return input
    }
}

extension PixelRect {
    init(_ rect: MixRect) {
        self.init(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
    }
}
