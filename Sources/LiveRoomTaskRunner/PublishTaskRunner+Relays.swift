import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomWire
import NIOCore

/// Relays (one input passed on, or transcoded once) and the RTMP connections.
extension PublishTaskRunner {
    // MARK: Relays

    /// Passes an H.264 access unit of the relayed user on without re-encoding.
    func pass(_ frame: MixInput.EncodedFrame, now: ContinuousClock.Instant) {
        guard case .passthrough(let track) = video else { return }
        if track == nil {
            guard frame.isKeyframe, let sets = AnnexB.parameterSets(in: frame.data), let size = try? VideoSize(keyframe: frame.data, codec: .h264) else {
                return
            }
            video = .passthrough(RTMPPublisher.VideoTrack(width: size.width, height: size.height, fps: config.effectiveEncoderParam.videoEncodedFPS, parameterSets: sets))
            onEvent(.encoding(pixelsPerSecond: meter.reportNow(0)))
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
    func relayTimestamp(of frame: MixInput.EncodedFrame, arrival: Int64) -> Int64 {
        if let clock = relayClock {
            let fromReference = clock.milliseconds + Int64(Int32(bitPattern: frame.rtpTimestamp &- clock.rtpTimestamp)) / 90
            if abs(fromReference - arrival) < 1000 { return fromReference }
        }
        relayClock = (frame.rtpTimestamp, arrival)
        return arrival
    }

    func startTranscodedRelay(size: VideoSize) {
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
        // Until the meter's first window ends: the anchor decoded at the task's rate too.
        let encoding = encodingPixelsPerSecond ?? 0
        onEvent(.encoding(pixelsPerSecond: meter.reportNow(encoding + EncodingMeter.weighted(encoding, decodedWith: .vp8))))
        announceVideoTrack()
        openWaitingURLs()
    }

    /// Whether the FLV video track is known (it is not for a relay before its first frame).
    var videoTrackKnown: Bool {
        switch video {
        case .none, .mix, .transcodeRelay(_, _?), .passthrough(_?): true
        case .transcodeRelay(_, nil), .passthrough(nil): false
        }
    }

    /// The FLV video track; nil for audio-only output.
    var videoTrack: RTMPPublisher.VideoTrack? {
        switch video {
        case .none, .transcodeRelay(_, nil): return nil
        case .mix(_, let encoder), .transcodeRelay(_, let encoder?):
            return encoder.parameterSets.map { RTMPPublisher.VideoTrack(width: encoder.width, height: encoder.height, fps: encoder.fps, parameterSets: $0) }
        case .passthrough(let track):
            return track
        }
    }

    // MARK: RTMP connections

    func open(_ url: String) {
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

    func openWaitingURLs() {
        let urls = waitingURLs
        waitingURLs.removeAll()
        urls.forEach(open)
    }

    func close(_ url: String) {
        waitingURLs.removeAll { $0 == url }
        guard let publisher = publishers.removeValue(forKey: url) else { return }
        // stop() flushes and may block on a slow server: not on the mixing thread.
        Thread.detachNewThread { publisher.stop() }
    }

    /// Called on a publisher's thread.
    func publisherChanged(url: String, state: RTMPPublisher.State) {
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

    func count(_ change: (inout Statistics) -> Void) {
        condition.lock()
        change(&counters)
        condition.unlock()
    }
}
