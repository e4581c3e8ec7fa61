/// A deterministic moving test card: colour bars over a luma ramp, a white box that
/// moves with the frame number, and a black band with the label and a six-digit frame
/// counter in a built-in bitmap font.
///
/// Frame `index` always renders the same picture, with `pts = index * 90000 / fps`.
public struct TestCardSource: Sendable {
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Frames per second; sets the `pts` step and rate control.
    public let fps: Int
    /// The text on the first line, usually the user id; drawn in upper case.
    public let label: String

    /// Size of one font pixel in frame pixels.
    let textScale: Int
    /// Top-left corner of the label's first glyph.
    let labelOrigin: (x: Int, y: Int)
    /// Top-left corner of the frame counter's first glyph.
    let counterOrigin: (x: Int, y: Int)
    /// Height of the black text band at the top.
    let bandHeight: Int
    /// Side of the moving box.
    let boxSize: Int
    private let background: VideoFrame

    /// The 75% colour bars, left to right: white, yellow, cyan, green, magenta, red, blue.
    public static let barColors: [UInt32] = [0xBFBFBF, 0xBFBF00, 0x00BFBF, 0x00BF00, 0xBF00BF, 0xBF0000, 0x0000BF]

    public init(width: Int, height: Int, fps: Int, label: String) {
        precondition(width >= 16 && height >= 16 && fps > 0, "test card needs at least 16x16 and fps > 0")
        self.width = width
        self.height = height
        self.fps = fps
        self.label = label
        let scale = max(1, min(width, height) / 90)
        textScale = scale
        labelOrigin = (2 * scale, 2 * scale)
        counterOrigin = (2 * scale, 2 * scale + (BitmapFont.glyphHeight + 2) * scale)
        bandHeight = counterOrigin.y + (BitmapFont.glyphHeight + 2) * scale
        boxSize = max(8, min(width, height) / 6) & ~1

        var card = VideoFrame(width: width, height: height, color: .black)
        let barsBottom = height * 2 / 3
        for (i, rgb) in Self.barColors.enumerated() {
            let x0 = i * width / Self.barColors.count, x1 = (i + 1) * width / Self.barColors.count
            card.fillRect(x: x0, y: 0, width: x1 - x0, height: barsBottom, color: YUVColor(rgb: rgb))
        }
        // Ramp from black to white across the bottom third, neutral chroma.
        for x in 0..<width {
            let level = UInt8(16 + (219 * x) / max(1, width - 1))
            card.fillRect(x: x, y: barsBottom, width: 1, height: height - barsBottom, color: YUVColor(y: level, u: 128, v: 128))
        }
        background = card
    }

    /// Where the moving box is in frame `index`: it bounces horizontally and vertically.
    public func boxPosition(index: Int) -> (x: Int, y: Int) {
        func bounce(_ step: Int, span: Int) -> Int {
            guard span > 0 else { return 0 }
            let phase = step % (2 * span)
            return phase < span ? phase : 2 * span - phase
        }
        let top = bandHeight, spanY = height - top - boxSize
        return (bounce(index &* 8, span: width - boxSize) & ~1, top + (bounce(index &* 5, span: spanY) & ~1))
    }

    /// The frame counter text for `index`.
    public static func counterText(index: Int) -> String {
        let digits = String(index % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// Renders frame `index` (0-based).
    public func nextFrame(index: Int) -> VideoFrame {
        var frame = background
        frame.pts = Int64(index) * 90_000 / Int64(fps)
        let box = boxPosition(index: index)
        frame.fillRect(x: box.x, y: box.y, width: boxSize, height: boxSize, color: .white)
        frame.fillRect(x: 0, y: 0, width: width, height: bandHeight, color: .black)
        BitmapFont.draw(label, into: &frame, x: labelOrigin.x, y: labelOrigin.y, scale: textScale, color: .white)
        BitmapFont.draw(Self.counterText(index: index), into: &frame, x: counterOrigin.x, y: counterOrigin.y, scale: textScale, color: .white)
        return frame
    }
}
