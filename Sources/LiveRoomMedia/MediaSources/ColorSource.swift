/// Frames of one solid colour, so a test can check pixels after encoding, decoding or mixing.
public struct ColorSource: Sendable {
    /// The colour as BT.601 limited-range YUV.
    public let color: YUVColor
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Frames per second; sets the `pts` step and rate control.
    public let fps: Int
    private let frame: VideoFrame

    /// - Parameter rgb: the colour as `0xRRGGBB`, converted with ``YUVColor/init(rgb:)``.
    public init(rgb: UInt32, width: Int, height: Int, fps: Int = 15) {
        precondition(width > 0 && height > 0 && fps > 0, "colour source needs a size and fps > 0")
        color = YUVColor(rgb: rgb)
        self.width = width
        self.height = height
        self.fps = fps
        frame = VideoFrame(width: width, height: height, color: color)
    }

    /// Frame `index`, with `pts = index * 90000 / fps`.
    public func nextFrame(index: Int) -> VideoFrame {
        var copy = frame
        copy.pts = Int64(index) * 90_000 / Int64(fps)
        return copy
    }
}
