import Foundation
import LiveRoomCommerce
import LiveRoomCore
import LiveRoomMedia
import LiveRoomSFU
import LiveRoomTransport
import LiveRoomWire
import Logging

/// One replay being recorded: the presenting anchor's RTP, tapped from the SFU and written
/// without re-encoding (``RTPRecorder``) into a file named by the replay's id.
struct ReplayCapture: Sendable {
    let replayId: String
    let roomId: String
    let itemNumber: Int
    let userId: String
    let startedAt: Int64
    let recorder: RTPRecorder

    init(
        directory: String, roomId: String, itemNumber: Int, userId: String, startedAt: Int64, logger: Logger,
        requestKeyframe: @escaping @Sendable () -> Void
    ) {
        let replayId = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        self.replayId = replayId
        self.roomId = roomId
        self.itemNumber = itemNumber
        self.userId = userId
        self.startedAt = startedAt
        let writer = RecordingWriter(
            label: "replay.\(replayId)",
            path: { codec in
                let name = "\(replayId).\(Replay.fileExtension(codec: ReplayCapture.codecName(codec)))"
                return (directory as NSString).appendingPathComponent(name)
            },
            onError: { path, error in
                logger.warning("Replay recording failed", metadata: [LogKey.room: "\(roomId)", LogKey.error: "\(path): \(error)"])
            })
        recorder = RTPRecorder(writer: writer, requestKeyframe: requestKeyframe)
    }

    /// A tapped packet of the anchor (on the media loop): VP8 or H.264 video, Opus audio.
    func receive(_ codec: RTPCodec, _ packet: RTPPacket) {
        if codec.kind == .video {
            if let video = VideoCodec(rawValue: codec.name) { recorder.receive(packet, of: .video(video), arrival: .now) }
        } else if codec.name == "opus" {
            recorder.receive(packet, of: .opus, arrival: .now)
        }
    }

    /// The replay's `codec`: `vp8`, `h264`, or `opus` for audio only.
    static func codecName(_ video: VideoCodec?) -> String {
        switch video {
        case .vp8: "vp8"
        case .h264: "h264"
        case nil: "opus"
        }
    }
}

/// A replay being recorded in a room, with what stops it.
struct ActiveReplay {
    let capture: ReplayCapture
    let tap: SFURouter.TapID
    /// Ends the recording at the longest a replay may run.
    let deadline: Task<Void, Never>
}

extension RoomHub {
    /// Taps for replays are numbered from here, far above the publish tasks' own.
    static let firstReplayTap: SFURouter.TapID = 1 << 48

    /// Starts recording `userId`'s media for a replay of `itemNumber` (after ending the room's
    /// current one). Without a replay directory or a media port, nothing is recorded.
    func startReplay(roomId: String, itemNumber: Int, userId: String) async {
        await stopReplay(roomId: roomId)
        guard let directory = replayDirectory, let media else { return }
        let tap = self.replays.nextTap
        self.replays.nextTap += 1
        let key = SFURouter.PublisherKey(roomId: roomId, userId: userId)
        let capture = ReplayCapture(
            directory: directory, roomId: roomId, itemNumber: itemNumber, userId: userId, startedAt: EventTime.now().unixMillis, logger: logger
        ) { media.requestKeyframe(for: tap, of: key) }
        media.setTap(tap, publishers: [key]) { _, codec, packet in capture.receive(codec, packet) }
        media.requestKeyframe(for: tap, of: key)
        let limit = maxReplayLength
        let replayId = capture.replayId
        let deadline = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            // A task of its own: stopping cancels this one, and the store would see that.
            Task { await self.stopReplay(roomId: roomId, only: replayId) }
        }
        self.replays.active[roomId] = ActiveReplay(capture: capture, tap: tap, deadline: deadline)
    }

    /// Ends the room's replay recording (only the one with `only`'s id, when given) and, once
    /// the file is written, adds it to its product; the room hears of it (onProductChanged).
    func stopReplay(roomId: String, only replayId: String? = nil) async {
        guard let active = self.replays.active[roomId], replayId == nil || active.capture.replayId == replayId else { return }
        self.replays.active[roomId] = nil
        active.deadline.cancel()
        media?.setTap(active.tap, publishers: [], sink: { _, _, _ in })
        let capture = active.capture
        // The trailer is written off the hub: a file write must not hold up every room.
        let summary = await Task.detached { capture.recorder.writer.finish() }.value
        guard let path = summary.path else { return }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
        guard let catalogue, !summary.failed, summary.videoFrames + summary.audioFrames > 0, bytes > 0 else {
            Self.deleteReplayFile(path)
            return
        }
        let replay = Replay(
            replayId: capture.replayId, roomId: roomId, itemNumber: capture.itemNumber, userId: capture.userId,
            codec: ReplayCapture.codecName(summary.videoCodec), durationMs: summary.durationMs, bytes: bytes, createdAt: capture.startedAt)
        do {
            let (product, dropped) = try await catalogue.addReplay(replay, keep: Replay.maxPerProduct)
            deleteReplayFiles(dropped)
            productChanged(product, in: roomId)
        } catch {
            // The product went while it was recorded.
            Self.deleteReplayFile(path)
        }
    }

    /// Ends every recording (the server is shutting down).
    func stopAllReplays() async {
        for roomId in Array(self.replays.active.keys) { await stopReplay(roomId: roomId) }
    }

    func deleteReplayFiles(_ replays: [Replay]) {
        guard let directory = replayDirectory else { return }
        for replay in replays { Self.deleteReplayFile((directory as NSString).appendingPathComponent(replay.fileName)) }
    }

    static func deleteReplayFile(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
