import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomRTP
import LiveRoomWire
import Synchronization

/// What `liveroom play` is told.
public struct PlayOptions: Sendable {
    public var url: String
    /// Stop after this long; nil plays until the stream ends for good.
    public var duration: Duration?
    /// Copy what is received into this file (format from its name: .flv, .mkv, .mp4, .ts).
    public var record: String?
    /// Report SEI messages of this payload type only; nil reports every type.
    public var seiPayloadType: Int?
    /// Reconnection after the stream breaks, as the push side retries (TRTC's and Alibaba's 5 a second apart).
    public var retryCount: Int
    public var retryInterval: Duration
    /// How long opening or waiting for the next packet may take before the stream counts as broken.
    public var timeout: Duration
    /// Add the frame code (``FrameCodeSource``) each SEI message came on to `onReceiveSeiMessage`.
    public var frameCodes = false

    public init(
        url: String, duration: Duration? = nil, record: String? = nil, seiPayloadType: Int? = nil, retryCount: Int = 5,
        retryInterval: Duration = .seconds(1), timeout: Duration = .seconds(10)
    ) {
        self.url = url
        self.duration = duration
        self.record = record
        self.seiPayloadType = seiPayloadType
        self.retryCount = retryCount
        self.retryInterval = retryInterval
        self.timeout = timeout
    }
}

/// Counts of a playback for `onStatistics`, per window. Pure.
struct PlaybackStatistics {
    private(set) var framesDecoded = 0
    private(set) var framesDropped = 0
    private var windowFrames = 0
    private var windowVideoBytes = 0
    private var windowAudioBytes = 0
    private var windowStart: ContinuousClock.Instant
    var size: VideoSize?
    /// The latest latency from a tagged SEI message's send time, ms.
    var latencyMilliseconds: Int64?

    init(now: ContinuousClock.Instant) {
        windowStart = now
    }

    mutating func video(bytes: Int, decoded: Int, failed: Bool) {
        windowVideoBytes += bytes
        windowFrames += decoded
        framesDecoded += decoded
        if failed { framesDropped += 1 }
    }

    mutating func audio(bytes: Int) {
        windowAudioBytes += bytes
    }

    /// The onStatistics event for the window ending `now`, which starts the next.
    mutating func event(now: ContinuousClock.Instant) -> JSONValue {
        let seconds = max(0.001, (now - windowStart).inSeconds)
        var event: [String: JSONValue] = [
            "event": "onStatistics",
            "fps": .number((Double(windowFrames) / seconds * 10).rounded() / 10),
            "videoBitrate": .number((Double(windowVideoBytes) * 8 / seconds / 1000).rounded()),
            "audioBitrate": .number((Double(windowAudioBytes) * 8 / seconds / 1000).rounded()),
            "framesDecoded": .number(Double(framesDecoded)), "framesDropped": .number(Double(framesDropped)),
        ]
        if let size {
            event["width"] = .number(Double(size.width))
            event["height"] = .number(Double(size.height))
        }
        if let latencyMilliseconds { event["latency"] = .number(Double(latencyMilliseconds)) }
        windowStart = now
        windowFrames = 0
        windowVideoBytes = 0
        windowAudioBytes = 0
        return .object(event)
    }
}

/// `liveroom play`: a CDN viewer. It pulls the stream with libavformat on a thread of its own,
/// decodes the video, and prints `onFirstVideoFrame`, `onReceiveSeiMessage` (once per message,
/// as TRTC's V2TXLivePlayer names it) and `onStatistics` every 2 s; when the stream breaks it
/// reconnects like `join` does (`onConnectionLost`, `onTryToReconnect`, `onConnectionRecovery`,
/// and `onError` -3308 after the last try).
public final class CDNPlayer: Sendable {
    private let options: PlayOptions
    private let printer: EventPrinter
    private let stopped = Atomic<Bool>(false)
    private let current = Mutex<NetworkStreamReader?>(nil)

    public static let statisticsInterval = Duration.seconds(2)

    public init(options: PlayOptions, printer: EventPrinter) {
        self.options = options
        self.printer = printer
    }

    /// Plays until the duration ends, the stream ends, or reconnection gives up. Returns the
    /// exit status: 0, or 1 when it gave up.
    public func run() async -> Int32 {
        await withCheckedContinuation { continuation in
            let thread = Thread { [self] in continuation.resume(returning: play()) }
            thread.name = "liveroom-play"
            thread.start()
        }
    }

    /// Stops playing from another thread.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        current.withLock { $0?.abort() }
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    private func play() -> Int32 {
        let start = ContinuousClock.now
        if let duration = options.duration { stop(at: start + duration) }
        var statistics = PlaybackStatistics(now: start)
        var seen = SEIDeduplicator()
        var firstFrame = false
        let recording: StreamRecording?
        do {
            recording = try options.record.map(StreamRecording.init(path:))
        } catch {
            printer.printError(LiveRoomError(ErrorCode.invalidField, "cannot record to \(options.record ?? ""): \(error)"), requestType: "play")
            return 1
        }
        defer { try? recording?.finish() }
        var nextStatistics = start + Self.statisticsInterval
        var attempt = 0
        var lost = false
        while !isStopped {
            let reader: NetworkStreamReader
            do {
                reader = try NetworkStreamReader(url: options.url, timeout: options.timeout, recording: recording)
            } catch {
                guard reconnect(attempt: &attempt, lost: &lost, reason: "\(error)") else { return isStopped ? 0 : 1 }
                continue
            }
            current.withLock { $0 = reader }
            if lost {
                printer.print(["event": "onConnectionRecovery"])
                lost = false
            }
            attempt = 0
            statistics.size = reader.videoSize ?? statistics.size
            var reason = "the stream ended"
            reading: while !isStopped {
                let item: NetworkStreamReader.Item?
                do {
                    item = try reader.next()
                } catch {
                    reason = "\(error)"
                    break reading
                }
                guard let item else { break reading }
                let now = ContinuousClock.now
                switch item {
                case .audio(let bytes, _):
                    statistics.audio(bytes: bytes)
                case .video(let accessUnit, _, _, let decoded, let failed):
                    statistics.video(bytes: accessUnit.count, decoded: decoded.count, failed: failed)
                    if let picture = decoded.first {
                        statistics.size = VideoSize(width: picture.width, height: picture.height)
                        if !firstFrame {
                            firstFrame = true
                            printer.print([
                                "event": "onFirstVideoFrame", "width": .number(Double(picture.width)), "height": .number(Double(picture.height)),
                                "elapsed": .number((now - start).inMilliseconds.rounded()),
                            ])
                        }
                    }
                    reportSEI(in: accessUnit, lastPicture: decoded.last, now: now, statistics: &statistics, seen: &seen)
                }
                if now >= nextStatistics {
                    nextStatistics = now + Self.statisticsInterval
                    printer.print(statistics.event(now: now))
                }
            }
            current.withLock { $0 = nil }
            guard !isStopped else { break }
            guard reconnect(attempt: &attempt, lost: &lost, reason: reason) else { return 1 }
        }
        return 0
    }

    /// Stops the player at `deadline` (`--duration`), from a thread of its own.
    private func stop(at deadline: ContinuousClock.Instant) {
        Thread { [self] in
            while !isStopped, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
            stop()
        }.start()
    }

    /// Prints the SEI messages of an access unit not seen before (`onReceiveSeiMessage`) and
    /// takes the latency from a tagged one.
    private func reportSEI(
        in accessUnit: [UInt8], lastPicture: VideoFrame?, now: ContinuousClock.Instant, statistics: inout PlaybackStatistics, seen: inout SEIDeduplicator
    ) {
        for tagged in H264SEI.messages(inAccessUnit: accessUnit) {
            if let tag = tagged.tag {
                statistics.latencyMilliseconds = Int64(Date().timeIntervalSince1970 * 1000) - Int64(tag.sentAtMilliseconds)
            }
            guard options.seiPayloadType.map({ $0 == tagged.message.payloadType }) ?? true, seen.isNew(tagged, from: options.url, now: now) else {
                continue
            }
            var event = Self.seiEvent(tagged).objectValue ?? [:]
            if options.frameCodes, let picture = lastPicture { event["frameCode"] = .number(Double(FrameCodeSource.read(picture))) }
            printer.print(.object(event))
        }
    }

    /// After a failure: tells the viewer, waits the interval, and says whether to try again.
    private func reconnect(attempt: inout Int, lost: inout Bool, reason: String) -> Bool {
        guard !isStopped else { return false }
        if !lost {
            lost = true
            printer.print(["event": "onConnectionLost", "reason": .string(reason)])
        }
        guard attempt < options.retryCount else {
            printer.printError(
                LiveRoomError(ErrorCode.reconnectFailed, "the stream could not be played again after \(options.retryCount) tries: \(reason)"),
                requestType: "play")
            return false
        }
        attempt += 1
        let deadline = ContinuousClock.now + options.retryInterval
        while !isStopped, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        guard !isStopped else { return false }
        printer.print(["event": "onTryToReconnect", "attempt": .number(Double(attempt))])
        return true
    }

    /// onReceiveSeiMessage, as TRTC's V2TXLivePlayerObserver names it: the payload type, the
    /// message (as text when it is UTF-8) and its bytes in hex (and the UUID of type 5).
    static func seiEvent(_ tagged: TaggedSEIMessage) -> JSONValue {
        var event = MediaEngine.seiEvent(tagged, from: "").objectValue ?? [:]
        event["event"] = "onReceiveSeiMessage"
        event["userId"] = nil
        return .object(event)
    }
}
