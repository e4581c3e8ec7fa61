import LiveRoomWire
import Testing
@testable import LiveRoomMedia

/// `decode(_:into:)` gives the pictures `decode(_:)` gives, in the last picture's storage
/// while the size holds.
@Suite struct DecodeIntoPictureTests {
    /// Seven frames: five of a 320x240 test card, then two of a 160x120 one from a new encoder.
    static func frames(_ codec: VideoCodec) throws -> [EncodedVideoFrame] {
        var frames: [EncodedVideoFrame] = []
        for (width, height, count) in [(320, 240, 5), (160, 120, 2)] {
            let card = TestCardSource(width: width, height: height, fps: 15, label: "\(width)")
            let encoder: any VideoEncoding = switch codec {
            case .vp8: try VP8Encoder(width: width, height: height, fps: 15, bitrateKbps: 500)
            case .h264: try H264Encoder(width: width, height: height, fps: 15, bitrateKbps: 500)
            }
            for index in 0..<count { frames += try encoder.encode(card.nextFrame(index: index), forceKeyframe: index == 0) }
        }
        return frames
    }

    static func decoder(_ codec: VideoCodec) throws -> any VideoDecoding {
        switch codec {
        case .vp8: try VP8Decoder()
        case .h264: try H264Decoder()
        }
    }

    @Test(arguments: [VideoCodec.vp8, .h264])
    func sameFramesAsDecodingToNewPictures(codec: VideoCodec) throws {
        let frames = try Self.frames(codec)
        try #require(frames.count == 7)
        let copying = try Self.decoder(codec), inPlace = try Self.decoder(codec)
        var picture: VideoFrame?
        var reused = 0
        for frame in frames {
            let expected = try #require(try copying.decode(frame).last)
            let before = picture.map { ($0.width, $0.height, $0.y.withUnsafeBufferPointer { $0.baseAddress }) }
            #expect(try inPlace.decode(frame, into: &picture))
            let decoded = try #require(picture)
            #expect(decoded == expected)
            if let before, before.0 == decoded.width, before.1 == decoded.height {
                #expect(decoded.y.withUnsafeBufferPointer { $0.baseAddress } == before.2, "same size: same storage")
                reused += 1
            }
        }
        #expect(reused == 5, "four 320x240 pictures after the first, one 160x120 after the first of its size")
    }

    @Test func aFailedDecodeKeepsThePicture() throws {
        let frames = try Self.frames(.vp8)
        let decoder = try VP8Decoder()
        var picture: VideoFrame?
        #expect(try decoder.decode(frames[0], into: &picture))
        let kept = picture
        #expect(throws: (any Error).self) {
            try decoder.decode(EncodedVideoFrame(codec: .vp8, data: [0xFF, 0xFF, 0xFF], isKeyframe: false, pts: 0), into: &picture)
        }
        #expect(picture == kept)
    }
}
