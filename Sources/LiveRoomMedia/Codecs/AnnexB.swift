import LiveRoomWire

/// H.264 Annex B byte streams: NAL units separated by `00 00 01` or `00 00 00 01` start codes.
public enum AnnexB {
    /// H.264 NAL unit types used by LiveRoom.
    public enum NALUnitType: UInt8, Sendable {
        case nonIDRSlice = 1, idrSlice = 5, sei = 6, sequenceParameterSet = 7, pictureParameterSet = 8, accessUnitDelimiter = 9
    }

    /// The NAL units in `stream`, without their start codes. Bytes before the first start
    /// code are ignored; trailing zero bytes of a unit (the next start code's leading zero)
    /// are dropped.
    public static func nalUnits(in stream: [UInt8]) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var start: Int? = nil
        var i = 0
        while i + 2 < stream.count {
            if stream[i] == 0, stream[i + 1] == 0, stream[i + 2] == 1 {
                if let s = start { units.append(trimmed(stream[s..<i])) }
                i += 3
                start = i
            } else {
                i += 1
            }
        }
        if let s = start, s < stream.count { units.append(trimmed(stream[s..<stream.count])) }
        return units.filter { !$0.isEmpty }
    }

    private static func trimmed(_ unit: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var end = unit.endIndex
        while end > unit.startIndex, unit[end - 1] == 0 { end -= 1 }
        return unit[unit.startIndex..<end]
    }

    /// The `nal_unit_type` of a NAL unit (the low 5 bits of its first byte).
    public static func type(of unit: ArraySlice<UInt8>) -> UInt8? {
        unit.first.map { $0 & 0x1F }
    }

    /// The first SPS and the first PPS of an access unit, as an Annex B byte string
    /// (`00 00 00 01 SPS 00 00 00 01 PPS`), or nil if either is missing.
    public static func parameterSets(in accessUnit: [UInt8]) -> [UInt8]? {
        let units = nalUnits(in: accessUnit)
        guard let sps = units.first(where: { type(of: $0) == NALUnitType.sequenceParameterSet.rawValue }),
              let pps = units.first(where: { type(of: $0) == NALUnitType.pictureParameterSet.rawValue })
        else { return nil }
        return [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps
    }

    /// Removes emulation prevention bytes (`00 00 03` → `00 00`), giving the RBSP.
    public static func rbsp(from unit: ArraySlice<UInt8>) -> [UInt8] {
        H264EmulationPrevention.removing(from: unit)
    }
}
