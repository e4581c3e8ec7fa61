import LiveRoomMedia
import LiveRoomWire
import NIOCore

/// The RTP streams of a mix published into the room: H.264 packetized for RTP (parameter
/// sets before every keyframe) and the mixed audio re-encoded as 20 ms Opus frames.
final class RoomStream {
    private let packetizer = H264Packetizer(maxPayloadSize: 1100)
    private let opus: OpusEncoder
    private let resampler: AudioResampler
    private var pending: [Int16] = []
    private var videoSequence = UInt16.random(in: 0...0x7FFF)
    private var audioSequence = UInt16.random(in: 0...0x7FFF)
    private let videoSSRC = UInt32.random(in: 1...UInt32.max)
    private let audioSSRC = UInt32.random(in: 1...UInt32.max)
    private let videoBase = UInt32.random(in: 0...UInt32.max)
    private var audioTimestamp = UInt32.random(in: 0...UInt32.max)

    init() throws {
        opus = try OpusEncoder(sampleRate: 48_000, channels: 2, bitrateKbps: 64)
        resampler = try AudioResampler(outputRate: 48_000, outputChannels: 2)
    }

    func videoPackets(_ frame: EncodedVideoFrame, parameterSets: [UInt8]?, timestampMs: Int64) -> [[UInt8]] {
        var data = frame.data
        if frame.isKeyframe, AnnexB.parameterSets(in: data) == nil, let parameterSets { data = parameterSets + data }
        guard let payloads = try? packetizer.packetize(annexB: ByteBuffer(bytes: data)) else { return [] }
        let timestamp = videoBase &+ UInt32(truncatingIfNeeded: timestampMs * 90)
        return payloads.enumerated().compactMap { index, payload in
            defer { videoSequence &+= 1 }
            let header = RTPHeader(marker: index == payloads.count - 1, payloadType: 0, sequenceNumber: videoSequence, timestamp: timestamp, ssrc: videoSSRC)
            return (try? RTPPacket(header: header, payload: payload).serialize()).map { Array(buffer: $0) }
        }
    }

    func audioPackets(_ mixed: AudioFrame) throws -> [[UInt8]] {
        pending += try resampler.convert(mixed).samples
        let block = opus.frameSize * 2
        var packets: [[UInt8]] = []
        while pending.count >= block {
            let frame = try AudioFrame(samples: Array(pending.prefix(block)), sampleRate: 48_000, channels: 2, pts: 0)
            pending.removeFirst(block)
            let encoded = try opus.encode(frame)
            let header = RTPHeader(payloadType: 0, sequenceNumber: audioSequence, timestamp: audioTimestamp, ssrc: audioSSRC)
            audioSequence &+= 1
            audioTimestamp &+= UInt32(opus.frameSize)
            if let bytes = try? RTPPacket(header: header, payload: ByteBuffer(bytes: encoded.data)).serialize() { packets.append(Array(buffer: bytes)) }
        }
        return packets
    }
}
