/// A size in pixels.
public struct MixSize: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var isEmpty: Bool { width <= 0 || height <= 0 }
    public var description: String { "\(width)x\(height)" }
}

/// A rectangle in pixels, origin at the top left.
///
/// TRTC's clients describe rects either as `{left, top, right, bottom}` (Windows, Electron,
/// Flutter) or `{x, y, width, height}` (iOS `CGRect`); both parse into this.
public struct MixRect: Sendable, Hashable, Codable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public init(left: Int, top: Int, right: Int, bottom: Int) {
        self.init(x: left, y: top, width: right - left, height: bottom - top)
    }

    public var left: Int { x }
    public var top: Int { y }
    public var right: Int { x + width }
    public var bottom: Int { y + height }
    public var size: MixSize { MixSize(width: width, height: height) }
    public var isEmpty: Bool { width <= 0 || height <= 0 }

    /// Whether the rect lies entirely inside a canvas of `size`.
    public func isInside(_ size: MixSize) -> Bool {
        x >= 0 && y >= 0 && right <= size.width && bottom <= size.height
    }

    /// The part of the rect inside a canvas of `size` (empty when none is).
    public func clipped(to size: MixSize) -> MixRect {
        let left = max(0, x), top = max(0, y), right = min(size.width, self.right), bottom = min(size.height, self.bottom)
        return right > left && bottom > top ? MixRect(left: left, top: top, right: right, bottom: bottom) : MixRect(x: 0, y: 0, width: 0, height: 0)
    }

    /// Whether the two rects share any pixel.
    public func intersects(_ other: MixRect) -> Bool {
        x < other.right && other.x < right && y < other.bottom && other.y < bottom
    }

    /// The rect with every edge moved down to an even pixel, as I420 chroma subsampling needs.
    public var evenAligned: MixRect {
        MixRect(left: x & ~1, top: y & ~1, right: right & ~1, bottom: bottom & ~1)
    }

    /// Whether origin and size are all even.
    public var isEvenAligned: Bool { x % 2 == 0 && y % 2 == 0 && width % 2 == 0 && height % 2 == 0 }

    public var description: String { "(\(x),\(y) \(width)x\(height))" }
}
