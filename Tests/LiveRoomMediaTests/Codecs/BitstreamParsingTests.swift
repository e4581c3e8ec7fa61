import Foundation
import Testing
@testable import LiveRoomMedia
import TestTools

@Suite struct BitReaderTests {
    @Test func readsExpGolombCodes() throws {
        var w = BitWriter()
        for value: UInt32 in [0, 1, 2, 3, 7, 255, 65_535, UInt32.max - 1] { w.ue(value) }
        for value: Int32 in [0, 1, -1, 2, -2, 1_000, -1_000] { w.se(value) }
        var r = BitReader(w.bytes)
        for value: UInt32 in [0, 1, 2, 3, 7, 255, 65_535, UInt32.max - 1] { #expect(try r.ue() == value) }
        for value: Int32 in [0, 1, -1, 2, -2, 1_000, -1_000] { #expect(try r.se() == value) }
    }

    @Test func throwsInsteadOfTrapping() {
        var empty = BitReader([])
        #expect(throws: BitstreamError.self) { try empty.bit() }
        var zeros = BitReader([UInt8](repeating: 0, count: 8))
        #expect(throws: BitstreamError.self) { try zeros.ue() }  // 64 leading zeros
        var truncated = BitReader([0x00, 0x01])  // 15 zeros, then the suffix runs off the end
        #expect(throws: BitstreamError.self) { try truncated.ue() }
    }
}

@Suite struct AnnexBTests {
    @Test func splitsOnThreeAndFourByteStartCodes() {
        let stream: [UInt8] = [0xFF, 0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5, 0]
        let units = AnnexB.nalUnits(in: stream).map(Array.init)
        #expect(units == [[0x67, 1, 2], [0x68, 3], [0x65, 4, 5]])
        #expect(AnnexB.parameterSets(in: stream) == [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3])
        #expect(AnnexB.nalUnits(in: [0, 0]).isEmpty)
        #expect(AnnexB.nalUnits(in: [0, 0, 1]).isEmpty)
    }

    @Test func removesEmulationPrevention() {
        #expect(AnnexB.rbsp(from: [0, 0, 3, 1, 0, 0, 3, 0, 0, 3][...]) == [0, 0, 1, 0, 0, 0, 0])
    }
}

@Suite struct H264SequenceParameterSetTests {
    /// An SPS built field by field, as a NAL unit with its header byte.
    static func sps(
        profile: UInt8, chroma: UInt32 = 1, separatePlanes: Bool = false, scalingMatrix: Bool = false,
        pocType: UInt32 = 0, widthMBs: UInt32, heightMapUnits: UInt32, frameMBsOnly: Bool = true,
        crop: (UInt32, UInt32, UInt32, UInt32)? = nil
    ) -> [UInt8] {
        var w = BitWriter()
        w.bits(UInt32(profile), 8)
        w.bits(0, 8)
        w.bits(31, 8)
        w.ue(0)
        if [100, 110, 122, 244].contains(profile) {
            w.ue(chroma)
            if chroma == 3 { w.bit(separatePlanes) }
            w.ue(2)
            w.ue(2)  // 10-bit
            w.bit(false)
            w.bit(scalingMatrix)
            if scalingMatrix {
                for list in 0..<(chroma == 3 ? 12 : 8) {
                    w.bit(list == 0 || list == 6)
                    if list == 0 || list == 6 {
                        for _ in 0..<(list < 6 ? 16 : 64) { w.se(1) }
                    }
                }
            }
        }
        w.ue(0)  // log2_max_frame_num_minus4
        w.ue(pocType)
        if pocType == 0 { w.ue(2) }
        if pocType == 1 {
            w.bit(false)
            w.se(-3)
            w.se(4)
            w.ue(3)
            for offset: Int32 in [1, -1, 2] { w.se(offset) }
        }
        w.ue(4)  // max_num_ref_frames
        w.bit(false)
        w.ue(widthMBs - 1)
        w.ue(heightMapUnits - 1)
        w.bit(frameMBsOnly)
        if !frameMBsOnly { w.bit(true) }
        w.bit(true)
        w.bit(crop != nil)
        if let crop { for value in [crop.0, crop.1, crop.2, crop.3] { w.ue(value) } }
        w.bit(false)  // vui_parameters_present_flag
        return w.finishedNAL(header: 0x67)
    }

    @Test func baselineWithCropping() throws {
        // 1920x1080 is coded as 120x68 macroblocks with 4 rows (2 chroma units) cropped.
        let sps = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 66, widthMBs: 120, heightMapUnits: 68, crop: (0, 0, 0, 4))[...])
        #expect(sps.width == 1920 && sps.height == 1080)
        #expect(sps.chromaFormatIDC == 1)
        #expect(sps.profileLevelID == "42001f")
    }

    @Test func mainWithPOCType1() throws {
        let sps = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 77, pocType: 1, widthMBs: 20, heightMapUnits: 15)[...])
        #expect(sps.width == 320 && sps.height == 240)
    }

    @Test func highProfileChromaFormatsChangeTheCropUnits() throws {
        // 4:2:2: crop unit is 2 horizontally, 1 vertically.
        let s422 = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 122, chroma: 2, scalingMatrix: true, widthMBs: 22, heightMapUnits: 13, crop: (1, 2, 3, 4))[...])
        #expect(s422.chromaFormatIDC == 2)
        #expect(s422.bitDepthLuma == 10)
        #expect(s422.width == 352 - 6 && s422.height == 208 - 7)
        // 4:4:4: unit 1 both ways; with separate colour planes ChromaArrayType is 0, also 1.
        let s444 = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 244, chroma: 3, scalingMatrix: true, widthMBs: 10, heightMapUnits: 10, crop: (1, 1, 1, 1))[...])
        #expect(s444.width == 158 && s444.height == 158)
        let separate = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 244, chroma: 3, separatePlanes: true, widthMBs: 10, heightMapUnits: 10, crop: (1, 0, 0, 1))[...])
        #expect(separate.separateColourPlane)
        #expect(separate.width == 159 && separate.height == 159)
        // Monochrome: unit 1.
        let mono = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 100, chroma: 0, widthMBs: 10, heightMapUnits: 10, crop: (2, 0, 2, 0))[...])
        #expect(mono.width == 158 && mono.height == 158)
        // 4:2:0 interlaced (field pairs): vertical unit 2 * 2.
        let interlaced = try H264SequenceParameterSet(nalUnit: Self.sps(profile: 100, widthMBs: 120, heightMapUnits: 34, frameMBsOnly: false, crop: (0, 0, 0, 2))[...])
        #expect(interlaced.width == 1920 && interlaced.height == 1080)
    }

    @Test func rejectsGarbageWithoutTrapping() throws {
        #expect(throws: BitstreamError.self) { try H264SequenceParameterSet(nalUnit: [][...]) }
        #expect(throws: BitstreamError.self) { try H264SequenceParameterSet(nalUnit: [0x68, 0x42, 0, 0x1f][...]) }  // a PPS
        #expect(throws: BitstreamError.self) { try H264SequenceParameterSet(nalUnit: [0x67, 0x42, 0x00][...]) }  // truncated
        #expect(throws: BitstreamError.self) { try H264SequenceParameterSet(annexB: [0xde, 0xad, 0xbe, 0xef]) }
        // Cropping more than the picture.
        let overCropped = Self.sps(profile: 66, widthMBs: 2, heightMapUnits: 2, crop: (20, 0, 0, 0))
        #expect(throws: BitstreamError.self) { try H264SequenceParameterSet(nalUnit: overCropped[...]) }
        // Every prefix of a valid SPS either parses or throws; random bytes never trap.
        let valid = Self.sps(profile: 122, chroma: 2, scalingMatrix: true, pocType: 1, widthMBs: 22, heightMapUnits: 13, crop: (1, 2, 3, 4))
        for length in 0..<valid.count { _ = try? H264SequenceParameterSet(nalUnit: valid[0..<length]) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...40, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bytes[0] = 0x67
            _ = try? H264SequenceParameterSet(nalUnit: bytes[...])
        }
    }

    /// SPS from ffmpeg's libx264 for profiles our encoder does not produce.
    @Test(.requires(.ffmpeg), arguments: [
        ("high", "yuv420p", 350, 198, 1),
        ("high422", "yuv422p", 350, 198, 2),
        ("high444", "yuv444p", 350, 198, 3),
    ])
    func parsesLibx264Output(profile: String, pixelFormat: String, width: Int, height: Int, chroma: Int) throws {
        let path = TestSupport.temporaryPath(".h264")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try RequiredTool.ffmpeg.run([
            "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc=size=\(width)x\(height):rate=15", "-frames:v", "1",
            "-pix_fmt", pixelFormat, "-c:v", "libx264", "-profile:v", profile, "-f", "h264", path,
        ])
        try #require(result.status == 0, "ffmpeg: \(result.errors)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let sps = try H264SequenceParameterSet(annexB: bytes)
        #expect(sps.width == width && sps.height == height)
        #expect(sps.chromaFormatIDC == chroma)
        #expect(sps.profileIDC >= 100)
    }
}

@Suite struct VideoSizeTests {
    @Test func garbageKeyframesAreErrors() {
        #expect(throws: BitstreamError.self) { try VideoSize(keyframe: [0xff, 0xff, 0xff, 0xff], codec: .h264) }
        #expect(throws: BitstreamError.self) { try VideoSize(keyframe: [0x10, 0x02, 0x00, 0x9d, 0x01], codec: .vp8) }
        #expect(throws: BitstreamError.self) { try VideoSize(keyframe: [0x11, 0x02, 0x00], codec: .vp8) }  // inter frame
    }
}
