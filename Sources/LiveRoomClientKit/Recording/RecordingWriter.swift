import Dispatch
import Foundation
import LiveRoomMedia

/// Records one remote user to `DIR/<userId>.mkv` on a serial queue of its own, so file
/// writes never block the media event loop. The file is created at the first keyframe
/// (its size is read from it); audio before then is held. Without any keyframe, an
/// audio-only file is written at the end.
final class RecordingWriter: @unchecked Sendable {
    let path: String
    private let queue: DispatchQueue
    // Touched only on `queue`.
    private var recorder: MediaRecorder?
    private var heldAudio: [EncodedAudioFrame] = []
    private var finished = false
    private var failed = false

    init(directory: String, userId: String) {
        let safe = String(userId.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" })
        path = (directory as NSString).appendingPathComponent(safe + ".mkv")
        queue = DispatchQueue(label: "liveroom.recording.\(safe)")
    }

    func writeVideo(_ frame: EncodedVideoFrame) {
        queue.async { [self] in
            guard !finished, !failed else { return }
            do {
                if recorder == nil {
                    guard frame.isKeyframe else { return }
                    let size = try VideoSize(keyframe: frame.data, codec: frame.codec)
                    let recorder = try MediaRecorder(path: path)
                    try recorder.addVideoStream(codec: frame.codec, width: size.width, height: size.height)
                    try recorder.addOpusStream()
                    for audio in heldAudio { try recorder.writeAudio(audio) }
                    heldAudio = []
                    self.recorder = recorder
                }
                try recorder?.writeVideo(frame)
            } catch {
                fail(error)
            }
        }
    }

    func writeAudio(_ frame: EncodedAudioFrame) {
        queue.async { [self] in
            guard !finished, !failed else { return }
            guard let recorder else {
                heldAudio.append(frame)
                if heldAudio.count > 500 { heldAudio.removeFirst(heldAudio.count - 500) }
                return
            }
            do { try recorder.writeAudio(frame) } catch { fail(error) }
        }
    }

    /// Writes the trailer; waits for queued writes. Call off the event loop.
    func finish() {
        queue.sync { [self] in
            guard !finished else { return }
            finished = true
            do {
                if recorder == nil, !heldAudio.isEmpty, !failed {
                    let recorder = try MediaRecorder(path: path)
                    try recorder.addOpusStream()
                    for audio in heldAudio { try recorder.writeAudio(audio) }
                    self.recorder = recorder
                }
                try recorder?.finish()
            } catch {
                fail(error)
            }
            recorder = nil
        }
    }

    private func fail(_ error: Error) {
        failed = true
        FileHandle.standardError.write(Data("liveroom: recording \(path) failed: \(error)\n".utf8))
    }
}
