import LiveRoomProtocol

/// The life of one publish media stream task, as a pure state machine: each event returns
/// the actions for the task runner to execute (open and close RTMP connections, report
/// states, schedule timers, reconfigure or stop the mixer). Time is passed in.
///
/// - Every CDN URL connects on its own. A failed or dropped connection is retried after
///   ``Configuration/retryInterval``, up to ``Configuration/retryCount`` times in a row;
///   then that URL is reported failed, and when every URL has failed the task stops.
/// - When the inputs present drop to zero, the task stops after its idle timeout unless
///   someone comes back first.
/// - An update keeps the connections: it may change layout, inputs, bitrate, frame rate
///   and URLs, but not the output resolution, audio-only ↔ audio+video, the audio format,
///   or CDN ↔ room publishing.
public struct PublishTaskStateMachine: Sendable {
    /// Retry and idle settings.
    public struct Configuration: Sendable, Hashable {
        /// Retries of a failed RTMP connection before the URL is given up.
        public var retryCount: Int
        /// The wait before each retry.
        public var retryInterval: Duration
        /// How long a task lives on with no input present, unless its config sets one.
        public var idleTimeout: Duration

        public init(retryCount: Int = 5, retryInterval: Duration = .milliseconds(1000), idleTimeout: Duration = PublishTaskConfig.defaultIdleTimeout) {
            self.retryCount = retryCount
            self.retryInterval = retryInterval
            self.idleTimeout = idleTimeout
        }
    }

    /// What the task runner does.
    public enum Action: Sendable, Hashable {
        /// Start the relay or mixing pipeline with this config.
        case startOutput(PublishTaskConfig)
        /// Open an RTMP connection to the URL and report back with `rtmpConnected` or `rtmpFailed`.
        case connect(url: String)
        /// Close the RTMP connection to the URL.
        case disconnect(url: String)
        /// Report a URL's new state (`onCdnStreamStateChanged`).
        case reportState(url: String, CdnStreamState)
        /// Call ``PublishTaskStateMachine/timerFired(now:)`` at `at`: a retry of `url` is due.
        case scheduleRetry(url: String, at: ContinuousClock.Instant)
        /// Call ``PublishTaskStateMachine/timerFired(now:)`` at `at`: the idle time runs out.
        case scheduleIdleStop(at: ContinuousClock.Instant)
        /// Reconfigure the running pipeline (layout, inputs, encoder settings, SEI) on the same connections.
        case applyConfig(PublishTaskConfig)
        /// Stop the pipeline; the task is over and can be forgotten.
        case stopOutput(PublishTaskStopReason)
    }

    enum URLState: Sendable, Hashable {
        case connecting(attempt: Int)
        case pushing
        case waitingRetry(attempt: Int, at: ContinuousClock.Instant)
        case failed(message: String)

        var isFailed: Bool {
            if case .failed = self { return true }
            return false
        }
    }

    enum State: Sendable, Hashable {
        case idle
        case running
        case stopped(PublishTaskStopReason)
    }

    public let configuration: Configuration
    public private(set) var config: PublishTaskConfig
    private var state: State = .idle
    private var urls: [(url: String, state: URLState)] = []
    private var idleDeadline: ContinuousClock.Instant?

    public init(config: PublishTaskConfig, configuration: Configuration = Configuration()) {
        self.config = config
        self.configuration = configuration
    }

    /// The task has ended (stopped, failed, idle, dismissed).
    public var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// Why the task ended, once it has.
    public var stopReason: PublishTaskStopReason? {
        if case .stopped(let reason) = state { return reason }
        return nil
    }

    /// The state of each CDN URL, in the task's order.
    public var cdnStreamStates: [(url: String, state: CdnStreamState)] {
        urls.map { entry in
            let reported: CdnStreamState =
                switch entry.state {
                case .connecting(0): .connecting
                case .connecting(let attempt), .waitingRetry(let attempt, _): .reconnecting(attempt: attempt)
                case .pushing: .pushing
                case .failed(let message): .failed(message: message)
                }
            return (entry.url, isStopped ? .stopped : reported)
        }
    }

    /// The idle time of this task: its config's, or the configuration's default.
    public var idleTimeout: Duration { config.idleTimeout ?? configuration.idleTimeout }

    /// Starts the task: the pipeline, then every URL. With no input present the idle time starts running.
    public mutating func start(presentUserCount: Int, now: ContinuousClock.Instant) -> [Action] {
        guard state == .idle else { return [] }
        state = .running
        var actions: [Action] = [.startOutput(config)]
        for url in config.target.cdnUrlList.map(\.rtmpUrl) {
            urls.append((url, .connecting(attempt: 0)))
            actions += [.connect(url: url), .reportState(url: url, .connecting)]
        }
        actions += inputsChanged(presentUserCount: presentUserCount, now: now)
        return actions
    }

    /// An RTMP connection is up.
    public mutating func rtmpConnected(url: String) -> [Action] {
        guard state == .running, let index = urls.firstIndex(where: { $0.url == url }) else { return [] }
        guard case .connecting = urls[index].state else { return [] }
        urls[index].state = .pushing
        return [.reportState(url: url, .pushing)]
    }

    /// An RTMP connection failed to open or dropped: schedule a retry, or give the URL up
    /// after the last one (and stop the task when no URL is left).
    public mutating func rtmpFailed(url: String, message: String, now: ContinuousClock.Instant) -> [Action] {
        guard state == .running, let index = urls.firstIndex(where: { $0.url == url }) else { return [] }
        let attempt: Int
        switch urls[index].state {
        case .connecting(let previous): attempt = previous + 1
        case .pushing: attempt = 1
        case .waitingRetry, .failed: return []
        }
        guard attempt <= configuration.retryCount else {
            let reason = "\(url): \(message) (gave up after \(configuration.retryCount) retries)"
            urls[index].state = .failed(message: reason)
            var actions: [Action] = [.reportState(url: url, .failed(message: reason))]
            if urls.allSatisfy({ $0.state.isFailed }) {
                actions += stopTask(.failed(message: reason))
            }
            return actions
        }
        let due = now.advanced(by: configuration.retryInterval)
        urls[index].state = .waitingRetry(attempt: attempt, at: due)
        return [.reportState(url: url, .reconnecting(attempt: attempt)), .scheduleRetry(url: url, at: due)]
    }

    /// The server's egress policy refused a URL's destination: it fails at once, without retries.
    public mutating func rtmpRefused(url: String) -> [Action] {
        guard state == .running, let index = urls.firstIndex(where: { $0.url == url }), !urls[index].state.isFailed else { return [] }
        urls[index].state = .failed(message: EgressPolicy.refusal)
        var actions: [Action] = [.reportState(url: url, .refused)]
        if urls.allSatisfy({ $0.state.isFailed }) {
            actions += stopTask(.failed(message: "\(url): \(EgressPolicy.refusal)"))
        }
        return actions
    }

    /// The number of the task's inputs present changed. At zero the idle time starts; above zero it is cancelled.
    public mutating func inputsChanged(presentUserCount: Int, now: ContinuousClock.Instant) -> [Action] {
        guard state == .running else { return [] }
        if presentUserCount > 0 {
            idleDeadline = nil
            return []
        }
        guard idleDeadline == nil else { return [] }
        let deadline = now.advanced(by: idleTimeout)
        idleDeadline = deadline
        return [.scheduleIdleStop(at: deadline)]
    }

    /// A timer scheduled by this machine fired (early or stale timers do nothing).
    public mutating func timerFired(now: ContinuousClock.Instant) -> [Action] {
        guard state == .running else { return [] }
        if let idleDeadline, idleDeadline <= now {
            return stopTask(.idleTimeout)
        }
        var actions: [Action] = []
        for index in urls.indices {
            if case .waitingRetry(let attempt, let due) = urls[index].state, due <= now {
                urls[index].state = .connecting(attempt: attempt)
                actions.append(.connect(url: urls[index].url))
            }
        }
        return actions
    }

    /// The room was dismissed: the task stops.
    public mutating func roomDismissed() -> [Action] {
        stopTask(.roomDismissed)
    }

    /// `stopPublishMediaStream` / `StopPublishCdnStream`.
    public mutating func stop() -> [Action] {
        stopTask(.requested)
    }

    /// Applies an update on the same connections: URLs added are connected, URLs removed
    /// disconnected, URLs that had failed are tried again, and the pipeline is reconfigured.
    /// Throws, changing nothing, for changes that would break the stream.
    public mutating func update(_ newConfig: PublishTaskConfig, now: ContinuousClock.Instant) throws(LiveRoomError) -> [Action] {
        if case .stopped = state {
            throw LiveRoomError(ErrorCode.taskNotFound, "the task has stopped; start a new one")
        }
        try Self.checkUpdate(from: config, to: newConfig)
        config = newConfig
        guard state == .running else { return [] }
        var actions: [Action] = [.applyConfig(newConfig)]
        let newURLs = newConfig.target.cdnUrlList.map(\.rtmpUrl)
        for entry in urls where !newURLs.contains(entry.url) {
            if !entry.state.isFailed { actions.append(.disconnect(url: entry.url)) }
            actions.append(.reportState(url: entry.url, .stopped))
        }
        var next: [(url: String, state: URLState)] = []
        for url in newURLs {
            if let existing = urls.first(where: { $0.url == url }), !existing.state.isFailed {
                next.append(existing)
            } else {
                next.append((url, .connecting(attempt: 0)))
                actions += [.connect(url: url), .reportState(url: url, .connecting)]
            }
        }
        urls = next
        return actions
    }

    /// Refuses updates that would break the published stream, as TRTC does.
    public static func checkUpdate(from old: PublishTaskConfig, to new: PublishTaskConfig) throws(LiveRoomError) {
        if old.target.mode.publishesToCdn != new.target.mode.publishesToCdn {
            throw LiveRoomError(
                ErrorCode.publishModeChange,
                "an update cannot change the mode from \(old.target.mode.name) to \(new.target.mode.name); stop the task and start a new one")
        }
        if old.hasVideo != new.hasVideo {
            throw LiveRoomError(
                ErrorCode.mediaKindChange,
                "an update cannot switch between audio-only and audio+video output (\(old.hasVideo ? "audio+video" : "audio-only") → \(new.hasVideo ? "audio+video" : "audio-only")); stop the task and start a new one")
        }
        // A relay's audio is encoded with its encoder parameters (or the defaults) too, so a
        // relay that becomes a mix keeps its audio format; its picture size may change.
        let oldParam = old.effectiveEncoderParam, newParam = new.effectiveEncoderParam
        if old.target.mode.isMixing, new.target.mode.isMixing, oldParam.hasVideo, oldParam.canvas != newParam.canvas {
            throw LiveRoomError(
                ErrorCode.resolutionChange,
                "an update cannot change the output resolution (\(oldParam.canvas) → \(newParam.canvas)); keep videoEncodedWidth and videoEncodedHeight, or stop the task and start a new one")
        }
        if oldParam.audioEncodedSampleRate != newParam.audioEncodedSampleRate || oldParam.audioEncodedChannelNum != newParam.audioEncodedChannelNum
            || oldParam.audioEncodedCodecType != newParam.audioEncodedCodecType
        {
            throw LiveRoomError(
                ErrorCode.audioFormatChange,
                "an update cannot change the audio format (\(oldParam.audioEncodedSampleRate) Hz × \(oldParam.audioEncodedChannelNum) → \(newParam.audioEncodedSampleRate) Hz × \(newParam.audioEncodedChannelNum), codec \(oldParam.audioEncodedCodecType) → \(newParam.audioEncodedCodecType))")
        }
    }

    private mutating func stopTask(_ reason: PublishTaskStopReason) -> [Action] {
        switch state {
        case .stopped: return []
        case .idle:
            state = .stopped(reason)
            return []
        case .running:
            break
        }
        state = .stopped(reason)
        idleDeadline = nil
        var actions: [Action] = []
        for entry in urls where !entry.state.isFailed {
            actions += [.disconnect(url: entry.url), .reportState(url: entry.url, .stopped)]
        }
        actions.append(.stopOutput(reason))
        return actions
    }
}
