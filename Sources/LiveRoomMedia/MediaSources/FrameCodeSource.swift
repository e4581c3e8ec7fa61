/// Frames that show their own number, so a viewer can tell which source frame it sees after
/// encoding, forwarding, mixing and the CDN: the frame index's low 16 bits as a 4×4 grid of
/// black and white blocks over the whole picture (big enough to survive scaling into a mix
/// tile and lossy coding). The SEI benchmark measures with it on which frame a message lands.
public struct FrameCodeSource: Sendable {
    public let width: Int
    public let height: Int
    public let fps: Int

    public init(width: Int, height: Int, fps: Int = 15) {
        precondition(width >= 8 && height >= 8 && fps > 0, "a frame code needs at least 8x8 pixels and fps > 0")
        self.width = width
        self.height = height
        self.fps = fps
    }

    static let white = YUVColor(y: 235, u: 128, v: 128)
    static let black = YUVColor(y: 16, u: 128, v: 128)

    /// Frame `index`, with `pts = index * 90000 / fps`.
    public func nextFrame(index: Int) -> VideoFrame {
        var frame = VideoFrame(width: width, height: height, color: Self.black, pts: Int64(index) * 90_000 / Int64(fps))
        for bit in 0..<16 where (index >> bit) & 1 == 1 {
            let (x0, y0, x1, y1) = Self.block(bit, width: width, height: height)
            for row in y0..<y1 {
                frame.y.replaceSubrange((row * width + x0)..<(row * width + x1), with: repeatElement(Self.white.y, count: x1 - x0))
            }
        }
        return frame
    }

    /// The frame code a picture shows (its 16 bits), read from the middle of each block.
    public static func read(_ frame: VideoFrame) -> Int {
        var index = 0
        for bit in 0..<16 {
            let (x0, y0, x1, y1) = block(bit, width: frame.width, height: frame.height)
            // The middle half of the block, away from edges the codec blurs.
            let (left, right) = (x0 + (x1 - x0) / 4, x1 - (x1 - x0) / 4)
            let (top, bottom) = (y0 + (y1 - y0) / 4, y1 - (y1 - y0) / 4)
            var sum = 0
            var count = 0
            for row in top..<max(top + 1, bottom) {
                for column in left..<max(left + 1, right) {
                    sum += Int(frame.y[row * frame.width + column])
                    count += 1
                }
            }
            if sum / max(1, count) > 125 { index |= 1 << bit }
        }
        return index
    }

    /// The pixel bounds of bit `bit`'s block: row-major in a 4×4 grid.
    static func block(_ bit: Int, width: Int, height: Int) -> (Int, Int, Int, Int) {
        let (column, row) = (bit % 4, bit / 4)
        return (column * width / 4, row * height / 4, (column + 1) * width / 4, (row + 1) * height / 4)
    }
}
