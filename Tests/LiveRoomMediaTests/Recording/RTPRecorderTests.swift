import Foundation
import LiveRoomMedia
import LiveRoomWire
import NIOCore
import TestTools
import Testing

@Suite struct RTPRecorderTests {
    /// VP8 frames from libvpx and Opus from libopus, packetized as a publisher sends them, come
    /// out of the recorder as whole frames in one WebM file; a lost packet asks for a keyframe.
    @Test func vp8AndOpusPacketsAreWrittenAsFramesAndALossAsksForAKeyframe() throws {
        let path = NSTemporaryDirectory() + "rtp-recorder-\(UInt32.random(in: 0...UInt32.max)).webm"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let keyframeRequests = Locked(0)
        let recorder = RTPRecorder(
            writer: RecordingWriter(label: "test", path: { _ in path }, onError: { _, error in Issue.record("\(error)") }),
            requestKeyframe: { keyframeRequests.withLock { $0 += 1 } })
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 300)
        var packetizer = VP8Packetizer(maxPayloadSize: 1000)
        let opus = try OpusEncoder()
        let start = ContinuousClock.now
        var (videoSequence, audioSequence): (UInt16, UInt16) = (100, 7)
        func sendVideo(_ index: Int, at arrival: ContinuousClock.Instant, keyframe: Bool = false, losingFirstPacket: Bool = false) throws {
            let picture = VideoFrame(width: 320, height: 240, color: YUVColor(y: UInt8(16 + index * 8), u: 128, v: 128), pts: Int64(index))
            for frame in try encoder.encode(picture, forceKeyframe: keyframe) {
                let payloads = try packetizer.packetize(frame: ByteBuffer(bytes: frame.data))
                for (offset, payload) in payloads.enumerated() {
                    defer { videoSequence &+= 1 }
                    if losingFirstPacket, offset == 0 { continue }
                    let header = RTPHeader(
                        marker: offset == payloads.count - 1, payloadType: 96, sequenceNumber: videoSequence, timestamp: UInt32(index * 6000), ssrc: 1)
                    recorder.receive(RTPPacket(header: header, payload: payload), of: .video(.vp8), arrival: arrival)
                }
            }
        }
        for index in 0..<15 {
            let arrival = start + .milliseconds(66 * index)
            // The eighth frame's first packet is lost on the way.
            try sendVideo(index, at: arrival, keyframe: index == 0, losingFirstPacket: index == 8)
            for part in 0..<3 {
                let samples = [Int16](repeating: 0, count: 960 * 2)
                let encoded = try opus.encode(try AudioFrame(samples: samples, pts: Int64(index * 3 + part) * 960))
                let header = RTPHeader(payloadType: 111, sequenceNumber: audioSequence, timestamp: UInt32((index * 3 + part) * 960), ssrc: 2)
                audioSequence &+= 1
                recorder.receive(RTPPacket(header: header, payload: ByteBuffer(bytes: encoded.data)), of: .opus, arrival: arrival + .milliseconds(20 * part))
            }
        }
        // A second after the loss the blocked frame is given up and a keyframe asked for; the
        // frames after it wait for one, and the keyframe that comes is written.
        try sendVideo(15, at: start + .milliseconds(1700))
        try sendVideo(16, at: start + .milliseconds(1800), keyframe: true)
        let summary = recorder.writer.finish()
        #expect(summary.path == path && !summary.failed)
        #expect(summary.videoCodec == .vp8)
        #expect(summary.audioFrames == 45)
        // The eight frames before the loss and the keyframe after it.
        #expect(summary.videoFrames == 9, "\(summary)")
        #expect(keyframeRequests.withLock { $0 } == 1)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 > 1000)
    }
}
