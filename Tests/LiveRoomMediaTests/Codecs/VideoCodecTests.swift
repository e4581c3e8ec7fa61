import LiveRoomWire
import NIOCore
import Testing
@testable import LiveRoomMedia

@Suite struct VP8CodecTests {
    @Test func colourSurvivesEncodeAndDecode() throws {
        let source = ColorSource(rgb: 0xFF0000, width: 320, height: 240, fps: 15)
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 800)
        let decoder = try VP8Decoder()
        var decoded: [VideoFrame] = []
        for index in 0..<5 {
            for packet in try encoder.encode(source.nextFrame(index: index), forceKeyframe: false) {
                #expect(packet.codec == .vp8)
                decoded += try decoder.decode(packet)
            }
        }
        try #require(decoded.count == 5)
        expectFifthFrameIsRed(decoded)
    }

    @Test func testCardKeepsItsDetailAndKeyframesComeWhenAsked() throws {
        let card = TestCardSource(width: 320, height: 240, fps: 15, label: "alice")
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 1_000)
        let decoder = try VP8Decoder()
        var keyframes: [Int] = []
        for index in 0..<10 {
            let input = card.nextFrame(index: index)
            let packets = try encoder.encode(input, forceKeyframe: index == 6)
            try #require(packets.count == 1)
            if packets[0].isKeyframe { keyframes.append(index) }
            let output = try #require(try decoder.decode(packets[0]).first)
            #expect(TestSupport.meanLumaDifference(input, output) < 6, "frame \(index)")
        }
        #expect(keyframes == [0, 6])
    }

    @Test func headerOfRealOutputGivesTheSize() throws {
        let encoder = try VP8Encoder(width: 542, height: 962, fps: 15, bitrateKbps: 500)
        let packets = try encoder.encode(ColorSource(rgb: 0x00FF00, width: 542, height: 962).nextFrame(index: 0), forceKeyframe: true)
        let key = try #require(packets.first)
        let header = try VP8FrameHeader.parse(ByteBuffer(bytes: key.data))
        #expect(header.isKeyframe)
        #expect(header.showFrame)
        #expect(header.width == 542 && header.height == 962)
        #expect(try VideoSize(keyframe: key.data, codec: .vp8) == VideoSize(width: 542, height: 962))

        let inter = try #require(try encoder.encode(ColorSource(rgb: 0x00FF00, width: 542, height: 962).nextFrame(index: 1), forceKeyframe: false).first)
        #expect(try VP8FrameHeader.parse(ByteBuffer(bytes: inter.data)).isKeyframe == false)
        #expect(throws: BitstreamError.self) { try VideoSize(keyframe: inter.data, codec: .vp8) }
    }

    @Test func rejectsFramesOfTheWrongSize() throws {
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 500)
        #expect(throws: MediaFormatError.self) {
            try encoder.encode(ColorSource(rgb: 0, width: 160, height: 120).nextFrame(index: 0), forceKeyframe: false)
        }
    }

    @Test func decoderRejectsGarbage() throws {
        let decoder = try VP8Decoder()
        #expect(throws: CodecError.self) { try decoder.decode([0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a], pts: 0) }
    }
}

@Suite struct H264CodecTests {
    @Test func colourSurvivesEncodeAndDecode() throws {
        let source = ColorSource(rgb: 0xFF0000, width: 320, height: 240, fps: 15)
        let encoder = try H264Encoder(width: 320, height: 240, fps: 15, bitrateKbps: 800)
        let decoder = try H264Decoder()
        var decoded: [VideoFrame] = []
        for index in 0..<5 {
            for packet in try encoder.encode(source.nextFrame(index: index), forceKeyframe: false) {
                #expect(packet.codec == .h264)
                decoded += try decoder.decode(packet)
            }
        }
        try #require(decoded.count == 5, "zerolatency: one picture per frame, got \(decoded.count)")
        expectFifthFrameIsRed(decoded)
    }

    @Test func keyframesCarrySPSAndPPSAndDecodeAlone() throws {
        let card = TestCardSource(width: 540, height: 960, fps: 15, label: "bob")
        let encoder = try H264Encoder(width: 540, height: 960, fps: 15, bitrateKbps: 1_300, gopFrames: 4)
        var frames: [EncodedVideoFrame] = []
        for index in 0..<10 {
            let out = try encoder.encode(card.nextFrame(index: index), forceKeyframe: index == 5)
            try #require(out.count == 1)
            frames += out
        }
        let keyIndexes = frames.indices.filter { frames[$0].isKeyframe }
        #expect(keyIndexes == [0, 4, 5, 9])
        for index in keyIndexes {
            let types = AnnexB.nalUnits(in: frames[index].data).compactMap(AnnexB.type(of:))
            #expect(types.contains(7) && types.contains(8) && types.contains(5), "key frame \(index) has NAL types \(types)")
            let sps = try H264SequenceParameterSet(annexB: frames[index].data)
            #expect(sps.width == 540 && sps.height == 960)
            #expect(sps.profileIDC == 66)
            #expect(sps.constraintFlags & 0x40 != 0, "constrained baseline sets constraint_set1")
            #expect(sps.cropRight == 4, "540 is coded as 544 and cropped")
        }
        for index in frames.indices where !frames[index].isKeyframe {
            #expect(!AnnexB.nalUnits(in: frames[index].data).contains { AnnexB.type(of: $0) == 7 })
        }
        // A decoder that joins at the second key frame decodes from there on.
        let decoder = try H264Decoder()
        let joined = try frames[4...].flatMap { try decoder.decode($0) }
        #expect(joined.count == 6)
        #expect(joined.first?.width == 540 && joined.first?.height == 960)
        let original = card.nextFrame(index: 9)
        #expect(TestSupport.meanLumaDifference(original, joined[5]) < 8)
    }

    @Test func oddSizesAreRejectedAndGarbageFailsToDecode() throws {
        #expect(throws: MediaFormatError.self) { try H264Encoder(width: 321, height: 240, fps: 15, bitrateKbps: 500) }
        let decoder = try H264Decoder()
        // Not a valid slice: the decoder may reject it or produce nothing, but not a picture.
        let result = try? decoder.decode([0, 0, 0, 1, 0x65, 0xFF, 0xFF, 0xFF], pts: 0)
        #expect(result == nil || result!.isEmpty)
    }
}

/// The fifth of five decoded 320x240 red frames at 15 fps: its size, its timestamp, and
/// FF0000's BT.601 YUV (81, 90, 240) at the centre.
func expectFifthFrameIsRed(_ decoded: [VideoFrame], sourceLocation: SourceLocation = #_sourceLocation) {
    let last = decoded[4]
    #expect(last.width == 320 && last.height == 240, sourceLocation: sourceLocation)
    #expect(last.pts == 4 * 6_000, sourceLocation: sourceLocation)
    let centre = last.pixel(x: 160, y: 120)
    #expect(abs(Int(centre.y) - 81) <= 3, "Y \(centre)", sourceLocation: sourceLocation)
    #expect(abs(Int(centre.u) - 90) <= 3, "U \(centre)", sourceLocation: sourceLocation)
    #expect(abs(Int(centre.v) - 240) <= 3, "V \(centre)", sourceLocation: sourceLocation)
}
