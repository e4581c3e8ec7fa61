import NIOCore

/// The NAL units of one picture (same RTP timestamp), as reassembled from RTP.
public struct H264AccessUnit: Hashable, Sendable {
    /// The RTP timestamp shared by the access unit's packets.
    public var timestamp: UInt32
    /// The NAL units, without start codes.
    public var nalUnits: [ByteBuffer]
    /// False if a gap in sequence numbers, a lost fragment or a missing marker bit
    /// means NAL units may be missing.
    public var isComplete: Bool

    /// Creates an access unit.
    public init(timestamp: UInt32, nalUnits: [ByteBuffer], isComplete: Bool) {
        self.timestamp = timestamp
        self.nalUnits = nalUnits
        self.isComplete = isComplete
    }

    /// The types of the NAL units in order.
    public var nalUnitTypes: [UInt8] {
        nalUnits.map { H264NALUnitType.of(headerByte: $0.getInteger(at: $0.readerIndex, as: UInt8.self) ?? 0) }
    }

    /// Whether a decoder can start here: an IDR slice, or both SPS and PPS, is present.
    public var isKeyframe: Bool {
        let types = nalUnitTypes
        return types.contains(H264NALUnitType.idrSlice)
            || (types.contains(H264NALUnitType.sps) && types.contains(H264NALUnitType.pps))
    }

    /// The access unit as an Annex B byte stream with 4-byte start codes.
    public var annexB: ByteBuffer { H264AnnexB.join(nalUnits) }
}
