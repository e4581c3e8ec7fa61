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
    private let onEvent: @Sendable (Event) -> Void
    private let requestKeyframe: @Sendable (MixUser) -> Void
    private let log: @Sendable (String) -> Void
    private let roomOutput: RoomOutput?
    private let roomStream: RoomStream?

    // The inbox, guarded by `condition`.
    private let condition = NSCondition()
    private var inboxPackets: [(MixUser, VideoCodec?, RTPPacket)] = []
    private var inboxConfig: PublishTaskConfig?
    private var inboxAnchors: [MixAnchor]?
    private var inboxConnections: [(url: String, open: Bool)] = []
    private var keyframeWanted = false
    private var stopRequested = false
    private var counters = Statistics()

    /// Checks and pins every RTMP destination before each connection.
    private let egress: EgressResolver
    /// Loads the config's images.
    private let imageLoader: ImageLoader

    // Owned by the task's thread once it starts.
    /// A keyframe was asked for and the next video frame will be one.
    private var keyframeDue = false
    private var config: PublishTaskConfig
    private var anchors: [MixAnchor] = []
    private var inputs: [MixUser: MixInput] = [:]
    private var publishers: [String: RTMPPublisher] = [:]
    /// URLs to open once the video track is known (a relay before its first keyframe).
    private var waitingURLs: [String] = []
    private var video: VideoPipeline
    private var audioMixer: AudioMixer
    private let aac: AACEncoder
    /// A relayed RTP timestamp and the output time it maps to.
    private var relayClock: (rtpTimestamp: UInt32, milliseconds: Int64)?
    /// Anchors' SEI messages for the next output frame (of a mix or a transcoded relay).
    private var pendingSEI: [TaggedSEIMessage] = []
    /// When the task's own SEI messages last went out.
    private var lastPassThrough: ContinuousClock.Instant?
    private var lastLayoutVolume: ContinuousClock.Instant?
    /// The most anchors' SEI messages waiting for an output frame, and put on one.
    static let maxPendingSEI = 32
    static let maxSEIPerFrame = 8
    private let start = ContinuousClock.now
    /// Each mixed user's volume by the current layout; nil when the config, the anchors or a
    /// picture's size changed since it was worked out.
    private var mixVolumes: [MixUser: Int]?
    private var nextVideo: ContinuousClock.Instant
    private var nextAudioFrame: Int64 = 0

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

    private func post(_ change: (PublishTaskRunner) -> Void) {
        condition.lock()
        change(self)
        condition.signal()
        condition.unlock()
    }

    // MARK: The task's thread

    private func run() {
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
        }
        for publisher in publishers.values { publisher.stop() }
        publishers.removeAll()
    }

    /// When the thread must next wake for output.
    private func nextDue() -> ContinuousClock.Instant {
        let audioDue = start.advanced(by: .milliseconds(nextAudioFrame * Int64(AACEncoder.samplesPerFrame) * 1000 / Int64(audioMixer.sampleRate)))
        switch video {
        case .none: return audioDue
        default: return min(audioDue, nextVideo)
        }
    }

    private var frameInterval: Duration {
        .nanoseconds(1_000_000_000 / Int64(max(1, config.effectiveEncoderParam.videoEncodedFPS)))
    }

    private func milliseconds(since instant: ContinuousClock.Instant) -> Int64 {
        start.duration(to: instant).ticks(rate: 1000)
    }

    private func reconfigure(_ newConfig: PublishTaskConfig) {
        mixVolumes = nil
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
    private func switchVideoPipeline() {
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
    private func announceVideoTrack() {
        guard let track = videoTrack else { return }
        for publisher in publishers.values { publisher.changeVideoTrack(track) }
    }

    private func updateAnchors(_ newAnchors: [MixAnchor]) {
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
    private func dropInputsNotPresent() {
        let present = Set(anchors.map { $0.user.resolved(in: roomId) })
        for user in inputs.keys where !present.contains(user) { inputs[user] = nil }
    }

    private func receive(_ packets: [(MixUser, VideoCodec?, RTPPacket)], now: ContinuousClock.Instant) {
        var decoded = 0
        var errors = 0
        var keyframeRequests = Set<MixUser>()
        let relaySource = config.target.mode.isMixing ? nil : config.relaySource?.resolved(in: roomId)
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
                    if relaySource == nil || relaySource == user { queueSEI(frame.sei) }
                    // Decoded when the next output frame draws it (or now, when too many wait).
                    let result = input.queue(frame)
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
    private func queueSEI(_ messages: [TaggedSEIMessage]) {
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
    private func seiForOutput(isKeyframe: Bool, now: ContinuousClock.Instant, canvas: MixSize) -> [TaggedSEIMessage] {
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
    private func layoutRegions(canvas: MixSize) -> [SEILayoutRegion] {
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
    private static func inserting(_ messages: [TaggedSEIMessage], into frame: EncodedVideoFrame) -> EncodedVideoFrame {
        guard !messages.isEmpty else { return frame }
        var frame = frame
        frame.data = H264SEI.inserting(H264SEI.nalUnit(messages), into: frame.data)
        return frame
    }

    private func input(for user: MixUser) -> MixInput? {
        if let input = inputs[user] { return input }
        guard inputs.count < StreamMixingConfig.maxInputs,
            let input = try? MixInput(user: user, outputRate: audioMixer.sampleRate, outputChannels: audioMixer.channels)
        else { return nil }
        inputs[user] = input
        return input
    }

    // MARK: Output

    private func produceAudio(until now: ContinuousClock.Instant) {
        let rate = Int64(audioMixer.sampleRate)
        let samples = Int64(AACEncoder.samplesPerFrame)
        while start.advanced(by: .milliseconds(nextAudioFrame * samples * 1000 / rate)) <= now {
            let pts = nextAudioFrame * samples
            nextAudioFrame += 1
            let volumes: [MixUser: Int]
            if config.target.mode.isMixing {
                volumes = mixVolumes ?? Dictionary(
                    currentLayout(canvas: MixSize(width: 0, height: 0)).audio.map { ($0.user, $0.volume) }, uniquingKeysWith: { first, _ in first })
                mixVolumes = volumes
            } else {
                volumes = config.relaySource.map { [$0.resolved(in: roomId): 100] } ?? [:]
            }
            var mixInputs: [AudioMixer.Input] = []
            for input in inputs.values {
                // Every input's queue is drained at the output pace, mixed or not.
                guard let frame = input.takeAudio(count: Int(samples), pts: pts), let volume = volumes[input.user] else { continue }
                mixInputs.append(AudioMixer.Input(frame: frame, volume: volume))
            }
            do {
                let mixed = try audioMixer.mix(mixInputs, pts: pts)
                if let roomStream, let roomOutput {
                    let packets = try roomStream.audioPackets(mixed)
                    if !packets.isEmpty { roomOutput(packets.map { ($0, .audio) }) }
                }
                if !publishers.isEmpty {
                    for encoded in try aac.encode(mixed) {
                        let timestamp = encoded.ptsMilliseconds
                        for publisher in publishers.values { publisher.write(audio: encoded, timestampMs: timestamp) }
                    }
                }
                count { $0.audioFrames += 1 }
            } catch {
                count { $0.encodeErrors += 1 }
            }
        }
    }

    private func produceVideo(now: ContinuousClock.Instant, forceKeyframe: Bool) {
        let interval = frameInterval
        // Behind by more than a frame: skip the missed ticks instead of bunching them.
        var skipped = 0
        while nextVideo.advanced(by: interval) <= now {
            nextVideo = nextVideo.advanced(by: interval)
            skipped += 1
        }
        let timestamp = milliseconds(since: nextVideo)
        nextVideo = nextVideo.advanced(by: interval)
        if skipped > 0 { count { $0.skippedVideoFrames += skipped } }
        switch video {
        case .none, .passthrough:
            break
        case .mix(let compositor, let encoder):
            compose(into: compositor)
            encode(compositor, with: encoder, timestamp: timestamp, forceKeyframe: forceKeyframe)
        case .transcodeRelay(let compositor, let encoder):
            guard let source = config.relaySource?.resolved(in: roomId), let input = inputs[source] else { break }
            decodeQueued(input)
            guard let picture = input.picture else { break }
            if compositor == nil || encoder == nil {
                startTranscodedRelay(size: VideoSize(width: picture.width & ~1, height: picture.height & ~1))
            }
            guard case .transcodeRelay(let compositor?, let encoder?) = video else { break }
            try? compositor.draw(picture, into: PixelRect(x: 0, y: 0, width: compositor.width, height: compositor.height))
            encode(compositor, with: encoder, timestamp: timestamp, forceKeyframe: forceKeyframe)
        }
        // Inputs not drawn are decoded too, so their decoders stay in step.
        for input in inputs.values { decodeQueued(input) }
    }

    /// Decodes an input's queued frames; one that fails asks its publisher for a keyframe.
    private func decodeQueued(_ input: MixInput) {
        guard input.hasQueuedFrames else { return }
        let size = input.picture.map { VideoSize(width: $0.width, height: $0.height) }
        let result = input.decodeQueued()
        if input.picture.map({ VideoSize(width: $0.width, height: $0.height) }) != size { mixVolumes = nil }
        if result.failed > 0 { requestKeyframe(input.user) }
        count {
            $0.decodedFrames += result.decoded
            $0.decodeErrors += result.failed
        }
    }

    private func encode(_ compositor: VideoCompositor, with encoder: H264Encoder, timestamp: Int64, forceKeyframe: Bool) {
        do {
            let frames = try encoder.encode(compositor.frame(pts: timestamp * 90), forceKeyframe: forceKeyframe)
            for encoded in frames {
                let sei = seiForOutput(isKeyframe: encoded.isKeyframe, now: .now, canvas: MixSize(width: encoder.width, height: encoder.height))
                let frame = Self.inserting(sei, into: encoded)
                for publisher in publishers.values { publisher.write(video: frame, timestampMs: timestamp) }
                if let roomStream, let roomOutput {
                    roomOutput(roomStream.videoPackets(frame, parameterSets: encoder.parameterSets, timestampMs: timestamp).map { ($0, .video) })
                }
            }
            count { $0.videoFrames += 1 }
        } catch {
            count { $0.encodeErrors += 1 }
        }
    }

    /// The layout now, with each input's decoded picture size.
    private func currentLayout(canvas: MixSize) -> MixFrameLayout {
        let sized = anchors.map { anchor -> MixAnchor in
            var anchor = anchor
            if let picture = inputs[anchor.user.resolved(in: roomId)]?.picture {
                anchor.videoSize = MixSize(width: picture.width, height: picture.height)
            }
            return anchor
        }
        let excluded: Set<MixUser> = config.target.mixStreamIdentity.map { [$0] } ?? []
        return MixLayoutEngine.compose(config: config.effectiveMixingConfig, canvas: canvas, anchors: sized, taskRoomId: roomId, excluding: excluded)
    }

    /// Draws the layout. Each input's queued frames are decoded just before its picture is
    /// drawn; when that changes a picture's size, the layout is worked out again and drawn anew.
    private func compose(into compositor: VideoCompositor) {
        // An input's first picture decides what the layout shows for it: decode it first.
        for input in inputs.values where input.picture == nil { decodeQueued(input) }
        let layout = currentLayout(canvas: MixSize(width: compositor.width, height: compositor.height))
        if !draw(layout, into: compositor) {
            draw(currentLayout(canvas: MixSize(width: compositor.width, height: compositor.height)), into: compositor)
        }
    }

    /// Draws `layout`; returns false when a picture decoded on the way has another size than
    /// the layout was made for.
    @discardableResult
    private func draw(_ layout: MixFrameLayout, into compositor: VideoCompositor) -> Bool {
        var sizesHeld = true
        compositor.fill(YUVColor(rgb: layout.backgroundColor))
        if let background = image(layout.backgroundImage) {
            try? compositor.draw(background, into: PixelRect(x: 0, y: 0, width: compositor.width, height: compositor.height))
        }
        for item in layout.items {
            let rect = PixelRect(item.rect)
            if let color = item.backgroundColor { try? compositor.fill(rect, color: YUVColor(rgb: color)) }
            switch item.content {
            case .video(let user, _, let placement):
                guard let input = inputs[user] else { break }
                let size = input.picture.map { MixSize(width: $0.width, height: $0.height) }
                decodeQueued(input)
                if let picture = input.picture {
                    if size != MixSize(width: picture.width, height: picture.height) { sizesHeld = false }
                    try? compositor.draw(picture, crop: PixelRect(placement.source), into: PixelRect(placement.destination))
                }
            case .color(let color):
                try? compositor.fill(rect, color: YUVColor(rgb: color))
            case .image(let url):
                if let picture = image(url) {
                    try? compositor.draw(picture, into: rect)
                } else if case .layout = item.origin {
                    // A placeholder image that cannot be loaded: the layout's colour stands in.
                    try? compositor.fill(rect, color: YUVColor(rgb: 0))
                }
            }
        }
        return sizesHeld
    }

    /// An image once it is loaded (off this thread, by the server's image rules); nil until
    /// then or when it cannot be used, which the owner hears once.
    private func image(_ url: String) -> VideoFrame? {
        guard !url.isEmpty else { return nil }
        return imageLoader.image(url) { [onEvent] error in onEvent(.imageUnavailable(url: url, error: error)) }
    }

    // MARK: Relays

    /// Passes an H.264 access unit of the relayed user on without re-encoding.
    private func pass(_ frame: MixInput.EncodedFrame, now: ContinuousClock.Instant) {
        guard case .passthrough(let track) = video else { return }
        if track == nil {
            guard frame.isKeyframe, let sets = AnnexB.parameterSets(in: frame.data), let size = try? VideoSize(keyframe: frame.data, codec: .h264) else {
                return
            }
            video = .passthrough(RTMPPublisher.VideoTrack(width: size.width, height: size.height, fps: config.effectiveEncoderParam.videoEncodedFPS, parameterSets: sets))
            announceVideoTrack()
            openWaitingURLs()
        }
        let timestamp = relayTimestamp(of: frame, arrival: milliseconds(since: now))
        let canvas = videoTrack.map { MixSize(width: $0.width, height: $0.height) } ?? MixSize(width: 0, height: 0)
        let encoded = Self.inserting(
            seiForOutput(isKeyframe: frame.isKeyframe, now: now, canvas: canvas),
            into: EncodedVideoFrame(codec: .h264, data: frame.data, isKeyframe: frame.isKeyframe, pts: timestamp * 90))
        for publisher in publishers.values { publisher.write(video: encoded, timestampMs: timestamp) }
        count { $0.videoFrames += 1 }
    }

    /// A relayed frame's time: its RTP timestamp's distance from a reference frame, so the
    /// CDN sees the sender's spacing rather than the network's jitter. The reference moves to
    /// the arrival time when the two drift a second apart (a republish, a clock jump).
    private func relayTimestamp(of frame: MixInput.EncodedFrame, arrival: Int64) -> Int64 {
        if let clock = relayClock {
            let fromReference = clock.milliseconds + Int64(Int32(bitPattern: frame.rtpTimestamp &- clock.rtpTimestamp)) / 90
            if abs(fromReference - arrival) < 1000 { return fromReference }
        }
        relayClock = (frame.rtpTimestamp, arrival)
        return arrival
    }

    private func startTranscodedRelay(size: VideoSize) {
        // The task's rate, GOP and bitrate; without a bitrate, about 0.15 bit per pixel of the relayed size.
        var param = config.effectiveEncoderParam
        (param.videoEncodedWidth, param.videoEncodedHeight) = (size.width, size.height)
        guard let compositor = try? VideoCompositor(width: size.width, height: size.height),
            let encoder = try? H264Encoder(
                width: size.width, height: size.height, fps: param.videoEncodedFPS, bitrateKbps: param.effectiveVideoKbps,
                gopSeconds: param.videoEncodedGOP, globalHeader: true)
        else {
            count { $0.encodeErrors += 1 }
            return
        }
        video = .transcodeRelay(compositor, encoder)
        announceVideoTrack()
        openWaitingURLs()
    }

    /// Whether the FLV video track is known (it is not for a relay before its first frame).
    private var videoTrackKnown: Bool {
        switch video {
        case .none, .mix, .transcodeRelay(_, _?), .passthrough(_?): true
        case .transcodeRelay(_, nil), .passthrough(nil): false
        }
    }

    /// The FLV video track; nil for audio-only output.
    private var videoTrack: RTMPPublisher.VideoTrack? {
        switch video {
        case .none, .transcodeRelay(_, nil): return nil
        case .mix(_, let encoder), .transcodeRelay(_, let encoder?):
            return encoder.parameterSets.map { RTMPPublisher.VideoTrack(width: encoder.width, height: encoder.height, fps: encoder.fps, parameterSets: $0) }
        case .passthrough(let track):
            return track
        }
    }

    // MARK: RTMP connections

    private func open(_ url: String) {
        if let publisher = publishers[url] {
            publisher.reconnect()
            return
        }
        guard videoTrackKnown else {
            // A relay's video track is known at its first frame: the URL opens then.
            if !waitingURLs.contains(url) { waitingURLs.append(url) }
            if let source = config.relaySource { requestKeyframe(source.resolved(in: roomId)) }
            return
        }
        let audio = RTMPPublisher.AudioTrack(sampleRate: aac.sampleRate, channels: aac.channels, audioSpecificConfig: aac.audioSpecificConfig)
        do {
            publishers[url] = try RTMPPublisher(
                url: url, video: videoTrack, audio: audio, destination: egress.destination(for:),
                onStateChange: { [weak self] state in self?.publisherChanged(url: url, state: state) })
        } catch {
            onEvent(.rtmpFailed(url: url, message: "\(error)"))
        }
    }

    private func openWaitingURLs() {
        let urls = waitingURLs
        waitingURLs.removeAll()
        urls.forEach(open)
    }

    private func close(_ url: String) {
        waitingURLs.removeAll { $0 == url }
        guard let publisher = publishers.removeValue(forKey: url) else { return }
        // stop() flushes and may block on a slow server: not on the mixing thread.
        Thread.detachNewThread { publisher.stop() }
    }

    /// Called on a publisher's thread.
    private func publisherChanged(url: String, state: RTMPPublisher.State) {
        switch state {
        case .pushing:
            // The new connection starts at a keyframe: make one now rather than at the next GOP.
            condition.lock()
            keyframeWanted = true
            condition.unlock()
            onEvent(.rtmpConnected(url: url))
        case .failed(let error as EgressResolver.Refused):
            _ = error
            onEvent(.rtmpRefused(url: url))
        case .failed(let error):
            onEvent(.rtmpFailed(url: url, message: "\(error)"))
        case .connecting, .stopped:
            break
        }
    }

    private func count(_ change: (inout Statistics) -> Void) {
        condition.lock()
        change(&counters)
        condition.unlock()
    }
}

extension PixelRect {
    init(_ rect: MixRect) {
        self.init(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
    }
}
