/// H.264 emulation prevention (ITU-T H.264 7.4.1): inside a NAL unit, a 0x03 byte follows every
/// two zero bytes that a byte of 3 or less would follow, so no start code appears by chance.
public enum H264EmulationPrevention {
    /// The NAL unit bytes of an RBSP: 0x03 inserted wherever two zero bytes would be followed by
    /// a byte of 3 or less.
    public static func adding(to rbsp: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rbsp.count + rbsp.count / 64 + 1)
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2 && byte <= 3 {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// The RBSP of NAL unit bytes: the 0x03 of every 00 00 03 removed.
    public static func removing(from bytes: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }
}
