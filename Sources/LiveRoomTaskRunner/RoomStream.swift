import LiveRoomMedia
import LiveRoomRTP
import LiveRoomWire
import NIOCore

/// The RTP streams of a mix published into the room: H.264 packetized for RTP (parameter
/// sets before every keyframe) and the mixed audio re-encoded as 20 ms Opus frames. Sequence
/// numbers, timestamps and the send history are the toolkit's ``OutboundRTPStream``s; the
/// media port rewrites the payload type and SSRC for each subscriber.
final class RoomStream {
    private let packetizer = H264Packetizer(maxPayloadSize: 1100)
    private let opus: OpusEncoder
    private let resampler: AudioResampler
    private var pending: [Int16] = []
    private var video: OutboundRTPStream
    private var audio: OutboundRTPStream
    /// Opus samples per channel sent so far: the audio stream's media time.
    private var audioSamples: Int64 = 0

    /// - Parameter mediaStart: media time zero of both streams.
    init(mediaStart: ContinuousClock.Instant) throws {
        opus = try OpusEncoder(sampleRate: 48_000, channels: 2, bitrateKbps: 64)
        resampler = try AudioResampler(outputRate: 48_000, outputChannels: 2)
        video = OutboundRTPStream(ssrc: .random(in: 1...UInt32.max), payloadType: 0, clockRate: 90_000, mediaStart: mediaStart)
        audio = OutboundRTPStream(ssrc: .random(in: 1...UInt32.max), payloadType: 0, clockRate: 48_000, mediaStart: mediaStart)
    }

    func videoPackets(_ frame: EncodedVideoFrame, parameterSets: [UInt8]?, timestampMs: Int64) -> [[UInt8]] {
        var data = frame.data
        if frame.isKeyframe, AnnexB.parameterSets(in: data) == nil, let parameterSets { data = parameterSets + data }
        guard let payloads = try? packetizer.packetize(annexB: ByteBuffer(bytes: data)) else { return [] }
        return video.packets(payloads: payloads, pts: timestampMs * 90, marker: true)
    }

    func audioPackets(_ mixed: AudioFrame) throws -> [[UInt8]] {
        pending += try resampler.convert(mixed).samples
        let block = opus.frameSize * 2
        var packets: [[UInt8]] = []
        while pending.count >= block {
            let frame = try AudioFrame(samples: Array(pending.prefix(block)), sampleRate: 48_000, channels: 2, pts: 0)
            pending.removeFirst(block)
            let encoded = try opus.encode(frame)
            packets += audio.packets(payloads: [ByteBuffer(bytes: encoded.data)], pts: audioSamples, marker: false)
            audioSamples += Int64(opus.frameSize)
        }
        return packets
    }
}
