/// Where a source picture is read from and drawn to inside one layout rect.
///
/// All rects are even-aligned (I420 chroma is subsampled 2×2): sizes are rounded down to
/// even pixels, and centring offsets down to even pixels.
public struct VideoPlacement: Sendable, Hashable {
    /// The part of the source picture to scale.
    public var source: MixRect
    /// Where the scaled part goes on the canvas; inside the layout rect.
    public var destination: MixRect

    public init(source: MixRect, destination: MixRect) {
        self.source = source
        self.destination = destination
    }

    /// Places a `source`-sized picture in `rect`:
    /// - ``VideoFillMode/fill``: the source is cropped, centred, to the rect's aspect; it covers the rect.
    /// - ``VideoFillMode/fit``: the whole source, scaled to fit, centred in the rect (letterboxed).
    /// - ``VideoFillMode/stretch``: the whole source onto the whole rect.
    ///
    /// For example a 540×960 source in a 270×240 rect at (0,0): fill reads (0,240 540×480)
    /// and draws the whole rect; fit reads all of it and draws (68,0 134×240).
    public static func place(source: MixSize, in rect: MixRect, mode: VideoFillMode) -> VideoPlacement {
        let sourceWidth = evenFloor(source.width)
        let sourceHeight = evenFloor(source.height)
        let whole = MixRect(x: 0, y: 0, width: sourceWidth, height: sourceHeight)
        guard sourceWidth > 0, sourceHeight > 0, !rect.isEmpty else {
            return VideoPlacement(source: whole, destination: rect)
        }
        // Compare aspects without division: is the source wider than the rect?
        let sourceIsWider = sourceWidth * rect.height > rect.width * sourceHeight
        switch mode {
        case .stretch:
            return VideoPlacement(source: whole, destination: rect)
        case .fill:
            var crop = whole
            if sourceIsWider {
                crop.width = min(sourceWidth, evenFloor(sourceHeight * rect.width / rect.height))
                crop.x = evenFloor((sourceWidth - crop.width) / 2)
            } else {
                crop.height = min(sourceHeight, evenFloor(sourceWidth * rect.height / rect.width))
                crop.y = evenFloor((sourceHeight - crop.height) / 2)
            }
            return VideoPlacement(source: crop, destination: rect)
        case .fit:
            var target = rect
            if sourceIsWider {
                target.height = min(rect.height, evenFloor(sourceHeight * rect.width / sourceWidth))
                target.y = rect.y + evenFloor((rect.height - target.height) / 2)
            } else {
                target.width = min(rect.width, evenFloor(sourceWidth * rect.height / sourceHeight))
                target.x = rect.x + evenFloor((rect.width - target.width) / 2)
            }
            return VideoPlacement(source: whole, destination: target)
        }
    }

    /// `value` rounded down to even, but at least 2 when positive.
    static func evenFloor(_ value: Int) -> Int {
        value <= 0 ? 0 : max(2, value & ~1)
    }
}
