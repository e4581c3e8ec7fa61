import Dispatch
import Foundation
import LiveRoomWire

/// Records one sender's already-encoded video and Opus audio to a file on a serial queue of
/// its own, so file writes never block a media event loop. The file is created at the first
/// keyframe (its size is read from it); audio before then is held. Without any keyframe, an
/// audio-only file is written at the end.
public final class RecordingWriter: @unchecked Sendable {
    /// What was written, once ``finish()`` returns.
    public struct Summary: Sendable, Hashable {
        /// The file, or nil when nothing was written.
        public var path: String?
        /// The video codec; nil for an audio-only file.
        public var videoCodec: VideoCodec?
        public var videoFrames: Int
        public var audioFrames: Int
        /// From the first to the last frame written, in milliseconds.
        public var durationMs: Int64
        /// Whether writing failed (the file may be partial).
        public var failed: Bool
    }

    private let queue: DispatchQueue
    private let path: @Sendable (VideoCodec?) -> String
    private let onError: @Sendable (String, any Error) -> Void
    // Touched only on `queue`.
    private var recorder: MediaRecorder?
    private var videoCodec: VideoCodec?
    private var heldAudio: [EncodedAudioFrame] = []
    private var finished = false
    private var failed = false
    /// The first and last pts written, in milliseconds.
    private var firstMs: Int64?
    private var lastMs: Int64 = 0

    /// - Parameters:
    ///   - path: the file for the video codec of the first keyframe (nil: audio only); its
    ///     extension picks the container (`.mkv`, `.webm`).
    ///   - onError: called once, on the writer's queue, with the path and the error when writing fails.
    public init(label: String, path: @escaping @Sendable (VideoCodec?) -> String, onError: @escaping @Sendable (String, any Error) -> Void) {
        self.path = path
        self.onError = onError
        queue = DispatchQueue(label: "liveroom.recording.\(label)")
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
    }

    /// Marks the writer's queue, so a write made on it (from ``onQueue(_:)``) is not queued again.
    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Runs `body` on the queue: at once when called there (a write from ``onQueue(_:)``'s body
    /// is then in order with it, and before a ``finish()`` called meanwhile), else after what
    /// is queued.
    private func onQueueInOrder(_ body: @escaping @Sendable () -> Void) {
        if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) { body() } else { queue.async(execute: body) }
    }

    /// `DIR/<userId>.mkv`, with characters other than letters, digits, `-`, `_` and `.` replaced by `_`.
    public static func matroskaPath(directory: String, userId: String) -> String {
        let safe = String(userId.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" })
        return (directory as NSString).appendingPathComponent(safe + ".mkv")
    }

    public func writeVideo(_ frame: EncodedVideoFrame) {
        onQueueInOrder { [self] in
            guard !finished, !failed else { return }
            do {
                if recorder == nil {
                    guard frame.isKeyframe else { return }
                    let size = try VideoSize(keyframe: frame.data, codec: frame.codec)
                    let recorder = try MediaRecorder(path: path(frame.codec))
                    try recorder.addVideoStream(codec: frame.codec, width: size.width, height: size.height)
                    try recorder.addOpusStream()
                    videoCodec = frame.codec
                    for audio in heldAudio { try write(audio, to: recorder) }
                    heldAudio = []
                    self.recorder = recorder
                }
                try recorder?.writeVideo(frame)
                seen(frame.pts / 90)
            } catch {
                fail(error)
            }
        }
    }

    public func writeAudio(_ frame: EncodedAudioFrame) {
        onQueueInOrder { [self] in
            guard !finished, !failed else { return }
            guard let recorder else {
                heldAudio.append(frame)
                if heldAudio.count > 500 { heldAudio.removeFirst(heldAudio.count - 500) }
                return
            }
            do { try write(frame, to: recorder) } catch { fail(error) }
        }
    }

    /// Runs `body` on the writer's queue, after what is queued: a caller's own per-recording
    /// state (frame assembly, a timeline) lives there too. The writes `body` makes are written
    /// as it makes them.
    public func onQueue(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Writes the trailer; waits for queued writes. Call off any event loop.
    @discardableResult
    public func finish() -> Summary {
        queue.sync { [self] in
            if !finished {
                finished = true
                do {
                    if recorder == nil, !heldAudio.isEmpty, !failed {
                        let recorder = try MediaRecorder(path: path(nil))
                        try recorder.addOpusStream()
                        for audio in heldAudio { try write(audio, to: recorder) }
                        self.recorder = recorder
                    }
                    try recorder?.finish()
                } catch {
                    fail(error)
                }
            }
            let summary = Summary(
                path: recorder?.path, videoCodec: videoCodec, videoFrames: recorder?.videoFramesWritten ?? 0,
                audioFrames: recorder?.audioFramesWritten ?? 0, durationMs: firstMs.map { lastMs - $0 } ?? 0, failed: failed)
            return summary
        }
    }

    private func write(_ frame: EncodedAudioFrame, to recorder: MediaRecorder) throws {
        try recorder.writeAudio(frame)
        seen(frame.pts / 48)
        seen((frame.pts + Int64(frame.duration)) / 48)
    }

    private func seen(_ ms: Int64) {
        firstMs = min(firstMs ?? ms, ms)
        lastMs = max(lastMs, ms)
    }

    private func fail(_ error: any Error) {
        guard !failed else { return }
        failed = true
        onError(recorder?.path ?? path(videoCodec), error)
    }
}
