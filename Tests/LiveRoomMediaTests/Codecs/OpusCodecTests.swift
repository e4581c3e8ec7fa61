import Testing
@testable import LiveRoomMedia

@Suite struct OpusCodecTests {
    @Test func toneSurvivesEncodeAndDecodeAtTheRightFrequency() throws {
        let tone = ToneSource(frequency: 440)
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 2, bitrateKbps: 64)
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 2)
        var decoded: [Int16] = []
        for index in 0..<25 {
            let packet = try encoder.encode(tone.nextFrame(index: index))
            #expect(packet.pts == Int64(index) * 960)
            #expect(packet.duration == 960)
            #expect(packet.data.count > 10 && packet.data.count < 1_000)
            let frame = try decoder.decode(packet)
            #expect(frame.samplesPerChannel == 960)
            #expect(frame.channels == 2)
            #expect(frame.pts == packet.pts)
            decoded += frame.samples
        }
        let left = try AudioFrame(samples: decoded, pts: 0).channel(0)
        let steady = Array(left[4_800...])  // skip the first 100 ms of codec warm-up
        let at440 = TestSupport.goertzelPower(steady, frequency: 440, sampleRate: 48_000)
        let at1k = TestSupport.goertzelPower(steady, frequency: 1_000, sampleRate: 48_000)
        let at300 = TestSupport.goertzelPower(steady, frequency: 300, sampleRate: 48_000)
        #expect(at440 > 100 * at1k, "440 Hz \(at440) vs 1 kHz \(at1k)")
        #expect(at440 > 100 * at300, "440 Hz \(at440) vs 300 Hz \(at300)")
        // Input RMS is 0.3 * 32767 / √2 ≈ 6950.
        let rms = TestSupport.rms(steady)
        #expect(rms > 5_500 && rms < 8_500, "RMS \(rms)")
    }

    @Test func concealsALostPacketFromFECOrPLC() throws {
        let tone = ToneSource(frequency: 440)
        let encoder = try OpusEncoder(bitrateKbps: 32, expectedPacketLoss: 20)
        let decoder = try OpusDecoder()
        let packets = try (0..<12).map { try encoder.encode(tone.nextFrame(index: $0)) }
        for packet in packets[0..<10] { _ = try decoder.decode(packet) }
        // Packet 10 is lost; packet 11 carries its FEC copy.
        let recovered = try decoder.concealLoss(samples: 960, fecFrom: packets[11].data, pts: packets[10].pts)
        #expect(recovered.samplesPerChannel == 960)
        #expect(TestSupport.rms(recovered.samples) > 1_000)
        let concealed = try decoder.concealLoss(samples: 960, pts: packets[11].pts)
        #expect(concealed.samplesPerChannel == 960)
        #expect(throws: MediaFormatError.self) { try decoder.concealLoss(samples: 7, pts: 0) }
    }

    @Test func rejectsWrongFrameSizesAndGarbage() throws {
        let encoder = try OpusEncoder()
        #expect(throws: MediaFormatError.self) {
            try encoder.encode(try AudioFrame(samples: [Int16](repeating: 0, count: 1_000), pts: 0))
        }
        #expect(throws: MediaFormatError.self) { try OpusEncoder(sampleRate: 44_100) }
        let decoder = try OpusDecoder()
        // TOC code 3 with a frame count of zero is invalid.
        #expect(throws: CodecError.self) { try decoder.decode([0x03, 0x00], pts: 0) }
        #expect(throws: MediaFormatError.self) { try decoder.decode([], pts: 0) }
    }
}
