/// A colour as BT.601 limited-range Y'CbCr samples (Y 16...235, U and V 16...240).
public struct YUVColor: Sendable, Hashable, CustomStringConvertible {
    /// Luma, 16...235 for video range.
    public var y: UInt8
    /// Blue-difference chroma (Cb), 16...240, 128 neutral.
    public var u: UInt8
    /// Red-difference chroma (Cr), 16...240, 128 neutral.
    public var v: UInt8

    public init(y: UInt8, u: UInt8, v: UInt8) {
        self.y = y
        self.u = u
        self.v = v
    }

    /// Converts 8-bit full-range R'G'B' (`0xRRGGBB`) with the BT.601 matrix into limited range.
    ///
    /// Pure red `0xFF0000` becomes Y 81, U 90, V 240.
    public init(rgb: UInt32) {
        let r = Double((rgb >> 16) & 0xFF) / 255, g = Double((rgb >> 8) & 0xFF) / 255, b = Double(rgb & 0xFF) / 255
        func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        self.y = clamp(16 + 65.481 * r + 128.553 * g + 24.966 * b)
        self.u = clamp(128 - 37.797 * r - 74.203 * g + 112.0 * b)
        self.v = clamp(128 + 112.0 * r - 93.786 * g - 18.214 * b)
    }

    /// Video-range black.
    public static let black = YUVColor(y: 16, u: 128, v: 128)
    /// Video-range white.
    public static let white = YUVColor(y: 235, u: 128, v: 128)

    public var description: String { "YUV(\(y), \(u), \(v))" }
}
