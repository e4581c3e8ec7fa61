/// A rectangle on a picture, in pixels, with the origin at the top-left corner.
///
/// I420 stores one chroma sample per 2x2 block, so rectangles that the
/// ``VideoCompositor`` draws into must be even-aligned: even `x`, `y`, `width` and `height`.
public struct PixelRect: Sendable, Hashable, CustomStringConvertible {
    /// Left edge.
    public var x: Int
    /// Top edge.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// Whether all four values are even, so the rectangle covers whole chroma samples.
    public var isEvenAligned: Bool { x % 2 == 0 && y % 2 == 0 && width % 2 == 0 && height % 2 == 0 }

    /// Whether the rectangle is non-empty and lies inside a `width`x`height` picture.
    public func fits(width pictureWidth: Int, height pictureHeight: Int) -> Bool {
        x >= 0 && y >= 0 && width > 0 && height > 0 && x + width <= pictureWidth && y + height <= pictureHeight
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}
