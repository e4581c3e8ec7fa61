import Foundation

/// Pushes H.264 video and AAC audio as FLV to an `rtmp://` URL (or to an FLV file, for
/// tests without a server) with libavformat, the way a mix task feeds a CDN.
///
/// All network I/O runs on a dedicated thread. ``write(video:timestampMs:)`` and
/// ``write(audio:timestampMs:)`` only queue the frame and never block: when the bounded
/// queue is full the oldest packet is dropped (and counted in ``Statistics/droppedPackets``);
/// dropping a video frame also drops the queued frames that depend on it, up to the next
/// key frame. Every blocking libavformat call (connect, RTMP handshake, write) is bounded
/// by an interrupt callback with a deadline, so a dead server ends in `.failed` instead
/// of a hung thread.
///
/// Timestamps are milliseconds from the start of the task, as the caller counts them.
/// The publisher writes them as they are, except that it keeps each stream's timestamps
/// strictly increasing, also across reconnects: a new connection continues the timeline
/// instead of starting at zero.
///
/// The publisher does not retry on its own: it reports ``State/connecting``,
/// ``State/pushing`` and ``State/failed(_:)`` to `onStateChange` (on its thread), and the
/// caller's state machine decides when to call ``reconnect()``. After a (re)connect,
/// video is dropped until the next key frame, so the server's first video tag after the
/// sequence header is an IDR picture; ask the encoder for one.
///
/// Call ``stop()`` when done: it sends what is queued, writes the FLV trailer and ends
/// the thread.
public final class RTMPPublisher: @unchecked Sendable {
    /// The H.264 track.
    public struct VideoTrack: Sendable {
        public var width: Int
        public var height: Int
        public var fps: Int
        /// SPS and PPS in Annex B form (``H264Encoder/parameterSets``), sent as the `avcC`
        /// sequence header.
        public var parameterSets: [UInt8]

        public init(width: Int, height: Int, fps: Int, parameterSets: [UInt8]) {
            self.width = width
            self.height = height
            self.fps = fps
            self.parameterSets = parameterSets
        }
    }

    /// The AAC track.
    public struct AudioTrack: Sendable {
        public var sampleRate: Int
        public var channels: Int
        /// ``AACEncoder/audioSpecificConfig``, sent as the AAC sequence header.
        public var audioSpecificConfig: [UInt8]

        public init(sampleRate: Int, channels: Int, audioSpecificConfig: [UInt8]) {
            self.sampleRate = sampleRate
            self.channels = channels
            self.audioSpecificConfig = audioSpecificConfig
        }
    }

    /// The connection as the publisher's thread sees it.
    public enum State: Sendable, CustomStringConvertible {
        /// Opening the URL: TCP connect, RTMP handshake, publish, FLV header.
        case connecting
        /// Connected; queued frames are being sent.
        case pushing
        /// The connection failed or broke; frames are discarded until ``RTMPPublisher/reconnect()``.
        case failed(any Error)
        /// ``RTMPPublisher/stop()`` finished.
        case stopped

        public var description: String {
            switch self {
            case .connecting: "connecting"
            case .pushing: "pushing"
            case .failed(let error): "failed(\(error))"
            case .stopped: "stopped"
            }
        }
    }

    /// Counters since the publisher was created.
    public struct Statistics: Sendable, Equatable {
        /// Video frames sent.
        public var videoFramesWritten = 0
        /// Audio frames sent.
        public var audioFramesWritten = 0
        /// Packets dropped because the queue was full (including the video frames that
        /// depended on a dropped one).
        public var droppedPackets = 0
        /// Video frames skipped while waiting for a key frame after a (re)connect.
        public var skippedVideoFrames = 0
        /// Packets discarded because the connection had failed or the publisher had stopped.
        public var discardedPackets = 0
        /// Successful connections.
        public var connections = 0
    }

    /// The destination: `rtmp://host[:port]/app/stream`, or a file path.
    public let url: String
    /// Longest time to connect, handshake and write the header.
    public let connectTimeout: Duration
    /// Longest time one packet write may block.
    public let writeTimeout: Duration
    /// Most packets held in the queue.
    public let queueCapacity: Int

    private struct Packet {
        var isVideo: Bool
        var data: [UInt8]
        var timestampMs: Int64
        var isKeyframe: Bool
        /// A new H.264 track starts with this keyframe.
        var newTrack: VideoTrack? = nil
    }

    /// The H.264 track; a (re)connect announces the latest (guarded by `condition`).
    private var videoTrack: VideoTrack?
    /// A track change waiting for its first keyframe (guarded by `condition`).
    private var pendingVideoTrack: VideoTrack?
    private let audioTrack: AudioTrack?
    private let onStateChange: @Sendable (State) -> Void
    private let interrupt = FFmpegInterrupt()

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [Packet] = []
    private var acceptingWrites = true
    private var waitingForKeyframe = true
    private var generation = 0
    private var connected = false
    private var stopRequested = false
    private var threadFinished = false
    private var counters = Statistics()
    private var currentState: State = .connecting
    private let destination: @Sendable (String) throws -> Destination

    /// Where one connection goes: the URL to open and options for its protocols.
    public struct Destination: Sendable {
        public var url: String
        public var protocolOptions: [String: String]

        public init(url: String, protocolOptions: [String: String] = [:]) {
            self.url = url
            self.protocolOptions = protocolOptions
        }
    }

    /// Starts connecting at once, on a new thread.
    /// - Parameters:
    ///   - url: `rtmp://…` or a file path; the container is always FLV.
    ///   - video: the H.264 track, or nil for audio only.
    ///   - audio: the AAC track, or nil for video only.
    ///   - queueCapacity: packets held while the network is slow (about 4 s at 15 fps with 48 kHz AAC by default).
    ///   - destination: called on the publisher's thread before every connection: the URL to
    ///     connect to and the protocol options, or an error that fails this connection (the
    ///     server's egress policy uses it to check and pin the address).
    ///   - onStateChange: called on the publisher's thread for every state change.
    public init(
        url: String, video: VideoTrack?, audio: AudioTrack?,
        queueCapacity: Int = 256, connectTimeout: Duration = .seconds(5), writeTimeout: Duration = .seconds(5),
        destination: @escaping @Sendable (String) throws -> Destination = { Destination(url: $0) },
        onStateChange: @escaping @Sendable (State) -> Void = { _ in }
    ) throws {
        guard video != nil || audio != nil else { throw MediaFormatError("an RTMP publisher needs a video or an audio track") }
        guard queueCapacity > 0 else { throw MediaFormatError("queue capacity must be positive") }
        self.url = url
        self.videoTrack = video
        self.audioTrack = audio
        self.queueCapacity = queueCapacity
        self.connectTimeout = connectTimeout
        self.writeTimeout = writeTimeout
        self.onStateChange = onStateChange
        self.destination = destination
        let thread = Thread { [self] in run() }
        thread.name = "RTMPPublisher"
        thread.start()
    }

    /// The latest state.
    public var state: State {
        condition.lock()
        defer { condition.unlock() }
        return currentState
    }

    /// The counters so far.
    public var statistics: Statistics {
        condition.lock()
        defer { condition.unlock() }
        return counters
    }

    /// Queues one H.264 access unit (Annex B) stamped `timestampMs` from the task start.
    public func write(video frame: EncodedVideoFrame, timestampMs: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard acceptingWrites, videoTrack != nil, frame.codec == .h264, !frame.data.isEmpty else {
            counters.discardedPackets += 1
            return
        }
        if pendingVideoTrack != nil && !frame.isKeyframe {
            counters.skippedVideoFrames += 1
            return
        }
        if waitingForKeyframe {
            guard frame.isKeyframe else {
                counters.skippedVideoFrames += 1
                return
            }
            waitingForKeyframe = false
        }
        var packet = Packet(isVideo: true, data: frame.data, timestampMs: timestampMs, isKeyframe: frame.isKeyframe)
        if let track = pendingVideoTrack {
            packet.newTrack = track
            videoTrack = track
            pendingVideoTrack = nil
        }
        enqueue(packet)
    }

    /// Switches the H.264 stream to another encoder (another size or parameter sets) on the
    /// same connection: frames are skipped until the new stream's first keyframe, which goes
    /// out after a new sequence header. A relay that becomes a mix, and back, does this.
    public func changeVideoTrack(_ track: VideoTrack) {
        condition.lock()
        defer { condition.unlock() }
        guard videoTrack != nil else { return }
        pendingVideoTrack = track
    }

    /// Queues one raw AAC frame stamped `timestampMs` from the task start.
    public func write(audio frame: EncodedAACFrame, timestampMs: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard acceptingWrites, audioTrack != nil, !frame.data.isEmpty else {
            counters.discardedPackets += 1
            return
        }
        enqueue(Packet(isVideo: false, data: frame.data, timestampMs: timestampMs, isKeyframe: true))
    }

    /// Closes the current connection (if any) and opens the URL again. Queued frames are
    /// discarded, and video restarts at the next key frame written. Timestamps continue.
    public func reconnect() {
        interrupt.abort()  // ends a blocking call of the old connection; reset before the new one
        condition.lock()
        defer { condition.unlock() }
        guard !stopRequested else { return }
        generation += 1
        counters.discardedPackets += queue.count
        queue.removeAll()
        acceptingWrites = true
        waitingForKeyframe = true
        condition.broadcast()
    }

    /// Sends what is queued (each write still bounded by ``writeTimeout``), writes the
    /// trailer, closes the connection and ends the thread. Blocks until then; a publisher
    /// that is still connecting gives up at once. Safe to call more than once.
    public func stop() {
        condition.lock()
        stopRequested = true
        acceptingWrites = false
        if !connected { interrupt.abort() }
        condition.broadcast()
        while !threadFinished { condition.wait() }
        condition.unlock()
    }

    // MARK: - Queue (callers hold the lock)

    private func enqueue(_ packet: Packet) {
        queue.append(packet)
        while queue.count > queueCapacity { dropOldest() }
        condition.signal()
    }

    private func dropOldest() {
        let dropped = queue.removeFirst()
        counters.droppedPackets += 1
        guard dropped.isVideo else { return }
        // The frames after a dropped video frame reference it: drop them up to the next key
        // frame, which takes over a track change the dropped frame carried.
        var index = 0
        while index < queue.count {
            if queue[index].isVideo {
                if queue[index].isKeyframe {
                    if queue[index].newTrack == nil { queue[index].newTrack = dropped.newTrack }
                    return
                }
                queue.remove(at: index)
                counters.droppedPackets += 1
            } else {
                index += 1
            }
        }
        waitingForKeyframe = true
        if let track = dropped.newTrack, pendingVideoTrack == nil { pendingVideoTrack = track }
    }

    // MARK: - The I/O thread

    /// What the I/O thread keeps between packets: the connection's muxer and streams, and the
    /// last timestamps, which stay strictly increasing across reconnects.
    private struct Output {
        var muxer: FFmpegMuxer?
        var videoStream: Int32 = -1
        var audioStream: Int32 = -1
        var lastVideoDts: Int64 = -1
        var lastAudioDts: Int64 = -1
        /// FLV refuses a packet older than a connection's first (libavformat's flv muxer
        /// answers EINVAL): nothing goes out below it.
        var floor: Int64?
    }

    private func run() {
        var sessionGeneration = -1
        var output = Output()
        while true {
            condition.lock()
            while !stopRequested && generation == sessionGeneration && (queue.isEmpty || output.muxer == nil) {
                condition.wait()
            }
            if stopRequested {
                let remaining = output.muxer == nil ? [] : queue
                counters.discardedPackets += queue.count - remaining.count
                queue.removeAll()
                condition.unlock()
                finish(&output, sending: remaining)
                return
            }
            if generation != sessionGeneration {
                sessionGeneration = generation
                connected = false
                currentState = .connecting
                condition.unlock()
                connect(&output, generation: sessionGeneration)
                continue
            }
            let packet = queue.removeFirst()
            condition.unlock()
            do {
                try send(packet, &output)
            } catch {
                output.muxer = nil  // closing aborts instead of waiting on a broken connection
                fail(error, generation: sessionGeneration)
            }
        }
    }

    /// Stopping: sends what is queued (within the write timeout), closes the connection and
    /// tells `stop()` the thread is done.
    private func finish(_ output: inout Output, sending remaining: [Packet]) {
        if let muxer = output.muxer {
            for packet in remaining {
                do {
                    try send(packet, &output)
                } catch {
                    break
                }
            }
            interrupt.arm(timeout: writeTimeout)
            try? muxer.finish()
        }
        output.muxer = nil
        condition.lock()
        connected = false
        currentState = .stopped
        condition.unlock()
        onStateChange(.stopped)  // before stop() returns
        condition.lock()
        threadFinished = true
        condition.broadcast()
        condition.unlock()
    }

    /// A new connection for `sessionGeneration`: the old one closed (within a second), the
    /// new one opened with the tracks known now.
    private func connect(_ output: inout Output, generation sessionGeneration: Int) {
        if let old = output.muxer {
            interrupt.reset()
            interrupt.arm(timeout: .seconds(1))
            try? old.finish()
            output.muxer = nil
        }
        interrupt.reset()
        output.floor = nil
        onStateChange(.connecting)
        do {
            let target = try destination(url)
            let opened = try FFmpegMuxer(url: target.url, format: "flv", interrupt: interrupt)
            condition.lock()
            let videoTrack = self.videoTrack
            condition.unlock()
            if let videoTrack {
                output.videoStream = try opened.addH264Stream(
                    width: videoTrack.width, height: videoTrack.height, fps: videoTrack.fps, parameterSets: videoTrack.parameterSets)
            }
            if let audioTrack {
                output.audioStream = try opened.addAACStream(
                    sampleRate: audioTrack.sampleRate, channels: audioTrack.channels, audioSpecificConfig: audioTrack.audioSpecificConfig)
            }
            interrupt.arm(timeout: connectTimeout)
            // A live stream has no duration or size to patch in at the end.
            try opened.open(options: url.contains("://") ? ["flvflags": "no_duration_filesize"] : [:], protocolOptions: target.protocolOptions)
            output.muxer = opened
            condition.lock()
            let current = generation == sessionGeneration && !stopRequested
            if current {
                connected = true
                counters.connections += 1
                currentState = .pushing
            }
            condition.unlock()
            if current { onStateChange(.pushing) }
        } catch {
            output.muxer = nil
            fail(error, generation: sessionGeneration)
        }
    }

    private func send(_ packet: Packet, _ output: inout Output) throws {
        guard let muxer = output.muxer else { return }
        // Strictly increasing per stream, whatever the caller or a reconnect did, and never
        // below the connection's first packet.
        let dts: Int64
        if packet.isVideo {
            dts = max(packet.timestampMs, output.lastVideoDts + 1, output.floor ?? .min)
            output.lastVideoDts = dts
        } else {
            dts = max(packet.timestampMs, output.lastAudioDts + 1, output.floor ?? .min)
            output.lastAudioDts = dts
        }
        if output.floor == nil { output.floor = dts }
        interrupt.arm(timeout: writeTimeout)
        try muxer.write(
            packet.data, stream: packet.isVideo ? output.videoStream : output.audioStream,
            dtsMilliseconds: dts, ptsMilliseconds: dts, keyframe: packet.isKeyframe, newExtradata: packet.newTrack?.parameterSets)
        condition.lock()
        if packet.isVideo { counters.videoFramesWritten += 1 } else { counters.audioFramesWritten += 1 }
        condition.unlock()
    }

    /// Marks the session failed, unless a reconnect or stop already replaced it (then the
    /// error is just the abort that ended it).
    private func fail(_ error: any Error, generation failedGeneration: Int) {
        condition.lock()
        let current = generation == failedGeneration && !stopRequested
        if current {
            connected = false
            acceptingWrites = false
            counters.discardedPackets += queue.count
            queue.removeAll()
            currentState = .failed(error)
        }
        condition.unlock()
        if current { onStateChange(.failed(error)) }
    }
}
