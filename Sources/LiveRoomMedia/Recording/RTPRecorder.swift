import LiveRoomRTP
import LiveRoomWire

/// Records one publisher's RTP without re-encoding: VP8 or H.264 video put back into frames,
/// Opus audio as it comes, written by a ``RecordingWriter`` (WebM for VP8 and Opus, Matroska
/// for H.264). Packets are handed over at once from any thread (a media loop's tap); the frame
/// assembly and the timeline live on the writer's queue. A frame that cannot be completed asks
/// the publisher for a keyframe through `requestKeyframe`.
public final class RTPRecorder: @unchecked Sendable {
    public let writer: RecordingWriter
    private let requestKeyframe: @Sendable () -> Void
    // Touched only on the writer's queue.
    private var assembler = VideoFrameAssembler()
    private var videoCodec: VideoCodec?
    private var timeline = RecordingTimeline()
    /// The SSRC each kind came with last: a new one (the publisher reconnected) starts its
    /// timestamps over, and the timeline goes on from the packet's arrival.
    private var ssrcs: [RecordingTimeline.Kind: UInt32] = [:]

    public init(writer: RecordingWriter, requestKeyframe: @escaping @Sendable () -> Void) {
        self.writer = writer
        self.requestKeyframe = requestKeyframe
    }

    /// What a packet carries: video in one of the payload formats the assembler knows, or Opus.
    public enum Track: Sendable, Hashable {
        case video(VideoCodec)
        case opus
    }

    /// One packet of the publisher's `track`, and when it reached the server.
    public func receive(_ packet: RTPPacket, of track: Track, arrival: ContinuousClock.Instant) {
        writer.onQueue { [self] in
            let kind: RecordingTimeline.Kind = track == .opus ? .audio : .video
            if let known = ssrcs[kind], known != packet.header.ssrc {
                timeline.restart(kind)
                if kind == .video { assembler = VideoFrameAssembler() }
            }
            ssrcs[kind] = packet.header.ssrc
            switch track {
            case .video(let codec):
                timeline.note(kind: .video, timestamp: packet.header.timestamp, arrival: arrival)
                if videoCodec != codec {
                    videoCodec = codec
                    assembler = VideoFrameAssembler()
                }
                for action in assembler.insert(packet, codec: codec, now: arrival) {
                    switch action {
                    case .frame(let frame):
                        guard let data = VideoPayloadFormat.bitstream(of: frame, codec: codec),
                            let pts = timeline.pts(kind: .video, timestamp: frame.timestamp, arrival: arrival)
                        else { continue }
                        writer.writeVideo(EncodedVideoFrame(codec: codec, data: data, isKeyframe: frame.isKeyframe, pts: pts))
                    case .requestKeyframe:
                        requestKeyframe()
                    case .nack:
                        break
                    }
                }
            case .opus:
                guard packet.payload.readableBytes > 0, let pts = timeline.pts(kind: .audio, timestamp: packet.header.timestamp, arrival: arrival) else { return }
                writer.writeAudio(EncodedAudioFrame(data: Array(packet.payload.readableBytesView), pts: pts, duration: 960))
            }
        }
    }
}
