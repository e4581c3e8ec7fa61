/// H.264 NAL unit types used by RTP packetization (ITU-T H.264 Table 7-1, RFC 6184 §5.2).
public enum H264NALUnitType {
    /// Coded slice of a non-IDR picture.
    public static let nonIDRSlice: UInt8 = 1
    /// Coded slice of an IDR picture (a keyframe).
    public static let idrSlice: UInt8 = 5
    /// Supplemental enhancement information.
    public static let sei: UInt8 = 6
    /// Sequence parameter set.
    public static let sps: UInt8 = 7
    /// Picture parameter set.
    public static let pps: UInt8 = 8
    /// Access unit delimiter.
    public static let accessUnitDelimiter: UInt8 = 9
    /// RTP single-time aggregation packet A.
    public static let stapA: UInt8 = 24
    /// RTP single-time aggregation packet B (interleaved mode only).
    public static let stapB: UInt8 = 25
    /// RTP multi-time aggregation packets (interleaved mode only).
    public static let mtap16: UInt8 = 26
    public static let mtap24: UInt8 = 27
    /// RTP fragmentation unit A.
    public static let fuA: UInt8 = 28
    /// RTP fragmentation unit B (interleaved mode only).
    public static let fuB: UInt8 = 29

    /// The type of a NAL unit from its header byte.
    @inlinable
    public static func of(headerByte: UInt8) -> UInt8 { headerByte & 0x1F }
}
