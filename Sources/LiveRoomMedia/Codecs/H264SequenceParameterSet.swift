/// The fields of an H.264 sequence parameter set (§7.3.2.1.1) that a receiver needs:
/// profile, level, chroma format and the cropped picture size.
///
/// Parsing is total: any truncated or out-of-range input throws ``BitstreamError``.
public struct H264SequenceParameterSet: Sendable, Equatable {
    /// `profile_idc`: 66 baseline, 77 main, 100 high, and the other high profiles.
    public var profileIDC: UInt8
    /// The constraint_set0...5 flags byte.
    public var constraintFlags: UInt8
    /// `level_idc`, ten times the level number (31 is level 3.1).
    public var levelIDC: UInt8
    /// `seq_parameter_set_id`, 0...31.
    public var seqParameterSetID: Int
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormatIDC: Int
    /// Whether 4:4:4 planes are coded separately (ChromaArrayType 0).
    public var separateColourPlane: Bool
    /// Luma bit depth, 8...14.
    public var bitDepthLuma: Int
    /// Chroma bit depth, 8...14.
    public var bitDepthChroma: Int
    /// False for streams that may code fields (interlaced).
    public var frameMBsOnly: Bool
    /// Cropping offsets in pixels (already multiplied by the crop units).
    public var cropLeft = 0, cropRight = 0, cropTop = 0, cropBottom = 0
    /// Picture width after cropping.
    public var width: Int
    /// Picture height after cropping.
    public var height: Int

    /// The profile-level-id as written in SDP `fmtp` (e.g. `42e01f`).
    public var profileLevelID: String {
        [profileIDC, constraintFlags, levelIDC].map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    private static let highProfiles: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// Parses an SPS NAL unit, header byte included (type 7), with emulation prevention bytes.
    public init(nalUnit: ArraySlice<UInt8>) throws {
        guard let header = nalUnit.first else { throw BitstreamError("empty NAL unit") }
        guard header & 0x80 == 0 else { throw BitstreamError("forbidden_zero_bit is set") }
        guard header & 0x1F == AnnexB.NALUnitType.sequenceParameterSet.rawValue else {
            throw BitstreamError("NAL unit type \(header & 0x1F) is not an SPS (7)")
        }
        var r = BitReader(AnnexB.rbsp(from: nalUnit.dropFirst()))
        profileIDC = UInt8(try r.bits(8))
        constraintFlags = UInt8(try r.bits(8))
        levelIDC = UInt8(try r.bits(8))
        seqParameterSetID = try r.ue(max: 31, "seq_parameter_set_id")

        chromaFormatIDC = 1
        separateColourPlane = false
        bitDepthLuma = 8
        bitDepthChroma = 8
        if Self.highProfiles.contains(profileIDC) {
            chromaFormatIDC = try r.ue(max: 3, "chroma_format_idc")
            if chromaFormatIDC == 3 { separateColourPlane = try r.flag() }
            bitDepthLuma = 8 + (try r.ue(max: 6, "bit_depth_luma_minus8"))
            bitDepthChroma = 8 + (try r.ue(max: 6, "bit_depth_chroma_minus8"))
            _ = try r.flag()  // qpprime_y_zero_transform_bypass_flag
            if try r.flag() {  // seq_scaling_matrix_present_flag
                for list in 0..<(chromaFormatIDC == 3 ? 12 : 8) {
                    if try r.flag() { try Self.skipScalingList(&r, size: list < 6 ? 16 : 64) }
                }
            }
        }
        _ = try r.ue(max: 12, "log2_max_frame_num_minus4")
        switch try r.ue(max: 2, "pic_order_cnt_type") {
        case 0:
            _ = try r.ue(max: 12, "log2_max_pic_order_cnt_lsb_minus4")
        case 1:
            _ = try r.flag()  // delta_pic_order_always_zero_flag
            _ = try r.se()  // offset_for_non_ref_pic
            _ = try r.se()  // offset_for_top_to_bottom_field
            let cycle = try r.ue(max: 255, "num_ref_frames_in_pic_order_cnt_cycle")
            for _ in 0..<cycle { _ = try r.se() }
        default:
            break
        }
        _ = try r.ue(max: 32, "max_num_ref_frames")
        _ = try r.flag()  // gaps_in_frame_num_value_allowed_flag
        let widthInMBs = try r.ue(max: 1 << 16, "pic_width_in_mbs_minus1") + 1
        let heightInMapUnits = try r.ue(max: 1 << 16, "pic_height_in_map_units_minus1") + 1
        frameMBsOnly = try r.flag()
        if !frameMBsOnly { _ = try r.flag() }  // mb_adaptive_frame_field_flag
        _ = try r.flag()  // direct_8x8_inference_flag

        let codedWidth = widthInMBs * 16
        let codedHeight = (frameMBsOnly ? 1 : 2) * heightInMapUnits * 16
        width = codedWidth
        height = codedHeight
        if try r.flag() {  // frame_cropping_flag
            // ChromaArrayType is 0 for monochrome and for separately coded 4:4:4 planes.
            let chromaArrayType = separateColourPlane ? 0 : chromaFormatIDC
            let subWidthC = chromaFormatIDC == 3 ? 1 : 2
            let subHeightC = chromaFormatIDC == 1 ? 2 : 1
            let unitX = chromaArrayType == 0 ? 1 : subWidthC
            let unitY = (chromaArrayType == 0 ? 1 : subHeightC) * (frameMBsOnly ? 1 : 2)
            cropLeft = try r.ue(max: 1 << 20, "frame_crop_left_offset") * unitX
            cropRight = try r.ue(max: 1 << 20, "frame_crop_right_offset") * unitX
            cropTop = try r.ue(max: 1 << 20, "frame_crop_top_offset") * unitY
            cropBottom = try r.ue(max: 1 << 20, "frame_crop_bottom_offset") * unitY
            width = codedWidth - cropLeft - cropRight
            height = codedHeight - cropTop - cropBottom
            guard width > 0, height > 0 else {
                throw BitstreamError("cropping \(cropLeft)+\(cropRight) x \(cropTop)+\(cropBottom) leaves nothing of \(codedWidth)x\(codedHeight)")
            }
        }
        // vui_parameters follow; nothing in them changes the picture size.
    }

    /// Parses the first SPS in an Annex B access unit.
    public init(annexB accessUnit: [UInt8]) throws {
        guard let unit = AnnexB.nalUnits(in: accessUnit).first(where: {
            AnnexB.type(of: $0) == AnnexB.NALUnitType.sequenceParameterSet.rawValue
        }) else { throw BitstreamError("no SPS in \(accessUnit.count) bytes of Annex B") }
        try self.init(nalUnit: unit)
    }

    private static func skipScalingList(_ r: inout BitReader, size: Int) throws {
        var last: Int32 = 8, next: Int32 = 8
        for _ in 0..<size where next != 0 {
            let delta = try r.se()
            guard delta >= -128 && delta <= 127 else { throw BitstreamError("delta_scale \(delta) out of range") }
            next = (last + delta + 256) % 256
            if next != 0 { last = next }
        }
    }
}
