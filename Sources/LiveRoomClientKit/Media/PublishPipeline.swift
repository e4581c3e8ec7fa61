import Foundation
import LiveRoomMedia
import LiveRoomWire
import Synchronization

/// Produces our encoded media on a thread of its own: renders or reads frames, paces them
/// in real time from `start`, encodes video (VP8 or H.264) and Opus, and hands each
/// encoded frame to `deliver` (which hops to the media event loop). Keyframe requests and
/// mutes come from other threads.
final class PublishPipeline: Sendable {
    enum Output: Sendable {
        case video(EncodedVideoFrame)
        case audio(EncodedAudioFrame)
    }

    private struct Control {
        var stopped = false
        var forceKeyframe = false
        var videoMuted = false
        var audioMuted = false
    }

    let options: MediaOptions
    let label: String
    let start: ContinuousClock.Instant
    private let control: Mutex<Control>
    private let deliver: @Sendable (Output) -> Void
    private let failure: @Sendable (String) -> Void

    /// - Parameters:
    ///   - deliver: called on the pipeline thread with each encoded frame.
    ///   - failure: called once if the source or an encoder fails.
    init(
        options: MediaOptions, label: String, start: ContinuousClock.Instant, videoMuted: Bool, audioMuted: Bool,
        deliver: @escaping @Sendable (Output) -> Void, failure: @escaping @Sendable (String) -> Void
    ) {
        self.options = options
        self.label = label
        self.start = start
        self.control = Mutex(Control(videoMuted: videoMuted, audioMuted: audioMuted))
        self.deliver = deliver
        self.failure = failure
    }

    /// Starts the thread.
    func run() {
        let thread = Thread { [self] in
            do {
                try work()
            } catch {
                failure("\(error)")
            }
        }
        thread.name = "liveroom-publish"
        thread.start()
    }

    func stop() { control.withLock { $0.stopped = true } }

    /// Encodes the next video frame as a keyframe.
    func requestKeyframe() { control.withLock { $0.forceKeyframe = true } }

    /// Stops or resumes a kind; resuming video starts with a keyframe.
    func setMuted(video: Bool? = nil, audio: Bool? = nil) {
        control.withLock {
            if let video {
                if $0.videoMuted && !video { $0.forceKeyframe = true }
                $0.videoMuted = video
            }
            if let audio { $0.audioMuted = audio }
        }
    }

    private var isStopped: Bool { control.withLock { $0.stopped } }

    /// Whether to send video now, and whether to force a keyframe (consumed).
    private func videoTurn() -> (send: Bool, keyframe: Bool) {
        control.withLock {
            guard !$0.videoMuted else { return (false, false) }
            let keyframe = $0.forceKeyframe
            $0.forceKeyframe = false
            return (true, keyframe)
        }
    }

    private var audioMuted: Bool { control.withLock { $0.audioMuted } }

    private func makeVideoEncoder() throws -> any VideoEncoding {
        switch options.videoCodec {
        case .vp8: try VP8Encoder(width: options.width, height: options.height, fps: options.fps, bitrateKbps: options.bitrateKbps)
        case .h264: try H264Encoder(width: options.width, height: options.height, fps: options.fps, bitrateKbps: options.bitrateKbps)
        }
    }

    /// Sleeps until `deadline` in short steps, so a stop is noticed soon.
    private func sleep(until deadline: ContinuousClock.Instant) {
        while !isStopped {
            let remaining = deadline - .now
            guard remaining > .zero else { return }
            Thread.sleep(forTimeInterval: min(remaining.inSeconds, 0.05))
        }
    }

    private func work() throws {
        let encoder = try makeVideoEncoder()
        let opus = try OpusEncoder(bitrateKbps: options.audioBitrateKbps)
        switch options.publish {
        case nil:
            return
        case .file(let path):
            let source = try FileSource(path: path, width: options.width, height: options.height)
            while !isStopped {
                switch try source.nextFrame() {
                case .video(let frame):
                    sleep(until: PublishPacer.due(start: start, pts: frame.pts, clockRate: 90_000))
                    let turn = videoTurn()
                    guard turn.send, !isStopped else { continue }
                    for encoded in try encoder.encode(frame, forceKeyframe: turn.keyframe) { deliver(.video(encoded)) }
                case .audio(let frame):
                    sleep(until: PublishPacer.due(start: start, pts: frame.pts, clockRate: 48_000))
                    guard !audioMuted, !isStopped else { continue }
                    deliver(.audio(try opus.encode(frame)))
                }
            }
        case .testCard, .color, .frameCode:
            let render: (Int) -> VideoFrame
            if case .color(let rgb) = options.publish {
                let source = ColorSource(rgb: rgb, width: options.width, height: options.height, fps: options.fps)
                render = source.nextFrame(index:)
            } else if case .frameCode = options.publish {
                render = FrameCodeSource(width: options.width, height: options.height, fps: options.fps).nextFrame(index:)
            } else {
                let source = TestCardSource(width: options.width, height: options.height, fps: options.fps, label: label)
                render = source.nextFrame(index:)
            }
            let tone = ToneSource(frequency: Double(options.toneFrequency))
            var pacer = PublishPacer(fps: options.fps, start: start)
            while !isStopped {
                for work in pacer.due(now: .now) {
                    switch work {
                    case .video(let index, let pts):
                        let turn = videoTurn()
                        guard turn.send else { continue }
                        var frame = render(index)
                        frame.pts = pts
                        for encoded in try encoder.encode(frame, forceKeyframe: turn.keyframe) { deliver(.video(encoded)) }
                    case .audio(let index, _):
                        guard !audioMuted else { continue }
                        deliver(.audio(try opus.encode(tone.nextFrame(index: index))))
                    }
                }
                sleep(until: pacer.nextDeadline)
            }
        }
    }
}
