/// Wall-clock time as RTCP carries it: 64-bit NTP (seconds since 1900 and a 32-bit fraction).
public struct NTPTime: Sendable, Hashable, Comparable {
    /// Seconds from 1900-01-01 to 1970-01-01.
    public static let unixEpochOffset: UInt64 = 2_208_988_800

    /// The 64-bit NTP timestamp.
    public var value: UInt64

    public init(value: UInt64) {
        self.value = value
    }

    /// From seconds since 1970 (Unix time).
    public init(unixSeconds: Double) {
        let seconds = unixSeconds.rounded(.down)
        let fraction = (unixSeconds - seconds) * 4_294_967_296
        value = (UInt64(seconds) &+ Self.unixEpochOffset) << 32 | UInt64(min(fraction, 4_294_967_295))
    }

    /// Seconds since 1970.
    public var unixSeconds: Double {
        Double(Int64(value >> 32) - Int64(Self.unixEpochOffset)) + Double(value & 0xFFFF_FFFF) / 4_294_967_296
    }

    /// The middle 32 bits (16.16 seconds), as LSR in report blocks.
    public var compact: UInt32 { UInt32(truncatingIfNeeded: value >> 16) }

    public static func < (lhs: NTPTime, rhs: NTPTime) -> Bool { lhs.value < rhs.value }
}
