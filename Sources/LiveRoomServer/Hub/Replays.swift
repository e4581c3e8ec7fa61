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

/// The replays being recorded, at most one per room: the presenting anchor's media from a pop-up
/// until the pop-up ends (or the longest a replay may run), then the file added to its product.
/// Beside the hub: it owns its recordings, and hands each product that got or lost a replay to
/// ``attach(_:onChanged:)``'s callback, which tells the room. The files of all rooms together
/// keep within a disk quota: past it the oldest replays go.
actor ReplayRecorder {
    /// A replay being recorded in a room, with what stops it.
    private struct Active {
        let capture: ReplayCapture
        let tap: SFURouter.TapID
        /// Ends the recording at the longest a replay may run.
        let deadline: Task<Void, Never>
    }

    /// Taps for replays are numbered from here, far above the publish tasks' own.
    static let firstTap: SFURouter.TapID = 1 << 48

    /// Where replays are written; nil records none.
    let directory: String?
    /// The longest a replay runs.
    let maxLength: Duration
    /// The most bytes the finished replays of all rooms may take on disk.
    let diskQuota: Int64
    private let store: (any ShopStore)?
    private let logger: Logger
    private var media: (any MediaPort)?
    private var onChanged: @Sendable (Product, String) async -> Void = { _, _ in }
    private var active: [String: Active] = [:]
    private var nextTap = firstTap

    init(directory: String?, maxLength: Duration, diskQuota: Int64 = ReplayRecorder.defaultDiskQuota, store: (any ShopStore)?, logger: Logger) {
        self.directory = directory
        self.maxLength = maxLength
        self.diskQuota = diskQuota
        self.store = store
        self.logger = logger
    }

    /// 10 GiB.
    static let defaultDiskQuota: Int64 = 10 << 30

    /// Records from `media`; `onChanged` hears each product that got or lost a replay, with its room.
    func attach(_ media: any MediaPort, onChanged: @escaping @Sendable (Product, String) async -> Void) {
        self.media = media
        self.onChanged = onChanged
    }

    /// Starts recording `userId`'s media for a replay of `itemNumber` (after ending the room's
    /// current one). Without a replay directory or a media port, nothing is recorded.
    func start(roomId: String, itemNumber: Int, userId: String) async {
        await stop(roomId: roomId)
        guard let directory, let media else { return }
        let tap = nextTap
        nextTap += 1
        let key = SFURouter.PublisherKey(roomId: roomId, userId: userId)
        let capture = ReplayCapture(
            directory: directory, roomId: roomId, itemNumber: itemNumber, userId: userId, startedAt: EventTime.now().unixMillis, logger: logger
        ) { media.requestKeyframe(for: tap, of: key) }
        media.setTap(tap, publishers: [key]) { _, codec, packet in capture.receive(codec, packet) }
        media.requestKeyframe(for: tap, of: key)
        let (limit, replayId) = (maxLength, capture.replayId)
        let deadline = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            // A task of its own: stopping cancels this one, and the store would see that.
            Task { await self.stop(roomId: roomId, only: replayId) }
        }
        active[roomId] = Active(capture: capture, tap: tap, deadline: deadline)
    }

    /// Ends the room's replay recording (only the one with `only`'s id, or of `item`, when
    /// given) and, once the file is written, adds it to its product, which `onAdded` hears of.
    func stop(roomId: String, only replayId: String? = nil, item: Int? = nil) async {
        guard let recording = active[roomId], replayId == nil || recording.capture.replayId == replayId,
            item == nil || recording.capture.itemNumber == item
        else { return }
        active[roomId] = nil
        recording.deadline.cancel()
        media?.setTap(recording.tap, publishers: [], sink: { _, _, _ in })
        let capture = recording.capture
        // The trailer is written off the recorder: a file write must not hold up the others.
        let summary = await Task.detached { capture.recorder.writer.finish() }.value
        guard let path = summary.path else { return }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
        guard let store, !summary.failed, summary.videoFrames + summary.audioFrames > 0, bytes > 0 else {
            Self.deleteFile(path)
            return
        }
        let replay = Replay(
            replayId: capture.replayId, roomId: roomId, itemNumber: capture.itemNumber, userId: capture.userId,
            codec: ReplayCapture.codecName(summary.videoCodec), durationMs: summary.durationMs, bytes: bytes, createdAt: capture.startedAt)
        do {
            let (product, dropped) = try await store.addReplay(replay, keep: Replay.maxPerProduct)
            deleteFiles(dropped)
            await onChanged(product, roomId)
        } catch {
            // The product went while it was recorded.
            Self.deleteFile(path)
        }
        await keepWithinQuota(store)
    }

    /// Deletes the oldest finished replays, of any room, while their files take more than the
    /// disk quota (the newest too, when it alone is larger); their products hear of it.
    private func keepWithinQuota(_ store: any ShopStore) async {
        guard let directory else { return }
        let writing = Set(active.values.map(\.capture.replayId))
        let files = Self.replayFiles(in: directory).filter { !writing.contains($0.replayId) }
        var total = files.reduce(Int64(0)) { $0 + $1.bytes }
        for file in files where total > diskQuota {
            total -= file.bytes
            if let replay = try? await store.replay(file.replayId), let (_, product) = try? await store.removeReplay(replay.replayId, room: replay.roomId) {
                await onChanged(product, replay.roomId)
            }
            Self.deleteFile(file.path)
            logger.notice(
                "Deleted the oldest replay over the replay disk quota",
                metadata: [LogKey.replay: "\(file.replayId)", LogKey.bytes: "\(file.bytes)", LogKey.limit: "\(diskQuota)"])
        }
    }

    /// A replay's file in the replay directory.
    private struct ReplayFile {
        var replayId: String
        var path: String
        var bytes: Int64
        var modified: Date
    }

    /// The replay files in `directory` (named as ``Replay/replayId(fromFileName:)`` reads them), oldest first.
    private static func replayFiles(in directory: String) -> [ReplayFile] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> ReplayFile? in
            guard let replayId = Replay.replayId(fromFileName: name) else { return nil }
            let path = (directory as NSString).appendingPathComponent(name)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
            return ReplayFile(
                replayId: replayId, path: path, bytes: (attributes[.size] as? Int64) ?? 0,
                modified: (attributes[.modificationDate] as? Date) ?? .distantPast)
        }.sorted { ($0.modified, $0.replayId) < ($1.modified, $1.replayId) }
    }

    /// Ends every recording (the server is shutting down).
    func stopAll() async {
        for roomId in Array(active.keys) { await stop(roomId: roomId) }
    }

    /// Deletes the files of replays that are gone from their products.
    nonisolated func deleteFiles(_ replays: [Replay]) {
        guard let directory else { return }
        for replay in replays { Self.deleteFile((directory as NSString).appendingPathComponent(replay.fileName)) }
    }

    private static func deleteFile(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
