import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomWire
import NIOCore

/// The task's output: mixed audio and video, encoded and sent to every RTMP connection.
extension PublishTaskRunner {
    // MARK: Output

    func produceAudio(until now: ContinuousClock.Instant) {
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

    func produceVideo(now: ContinuousClock.Instant, forceKeyframe: Bool) {
        drawTime = now
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
    func decodeQueued(_ input: MixInput) {
        guard input.hasQueuedFrames else { return }
        let size = input.picture.map { VideoSize(width: $0.width, height: $0.height) }
        let result = input.decodeQueued(drawnAt: drawTime)
        if relayedUser.map({ $0 == input.user }) ?? true { queueSEI(result.sei) }
        if input.picture.map({ VideoSize(width: $0.width, height: $0.height) }) != size { mixVolumes = nil }
        if result.failed > 0 { requestKeyframe(input.user) }
        count {
            $0.decodedFrames += result.decoded
            $0.decodeErrors += result.failed
        }
    }

    func encode(_ compositor: VideoCompositor, with encoder: H264Encoder, timestamp: Int64, forceKeyframe: Bool) {
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

    /// Counts what the inputs decoded in the meter's window and reports the task's cost when due.
    func measureCost(now: ContinuousClock.Instant) {
        for input in inputs.values {
            if let decoded = input.takeDecodedPixels() { meter.decoded(pixels: decoded.pixels, codec: decoded.codec) }
        }
        if let cost = meter.report(encodingPixelsPerSecond: encodingPixelsPerSecond, now: now) { onEvent(.encoding(pixelsPerSecond: cost)) }
    }

    /// The pixels a second the output encodes; nil while a relay's path is not known yet.
    var encodingPixelsPerSecond: Int? {
        switch video {
        case .none, .passthrough(_?): 0
        case .mix(_, let encoder), .transcodeRelay(_, let encoder?): encoder.width * encoder.height * encoder.fps
        case .transcodeRelay(_, nil), .passthrough(nil): nil
        }
    }

    /// The layout now, with each input's decoded picture size.
    func currentLayout(canvas: MixSize) -> MixFrameLayout {
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
    func compose(into compositor: VideoCompositor) {
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
    func draw(_ layout: MixFrameLayout, into compositor: VideoCompositor) -> Bool {
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
    func image(_ url: String) -> VideoFrame? {
        guard !url.isEmpty else { return nil }
        return imageLoader.image(url) { [onEvent] error in onEvent(.imageUnavailable(url: url, error: error)) }
    }
}
