import Foundation
import Testing
@testable import LiveRoomMedia
import TestTools

@Suite struct VideoCompositorTests {
    static let red = YUVColor(rgb: 0xFF0000)
    static let blue = YUVColor(rgb: 0x0000FF)
    static let green = YUVColor(rgb: 0x00FF00)

    /// Whether every pixel of `rect` (shrunk by `inset`) is `color` within `tolerance` on Y, U and V.
    static func expect(_ frame: VideoFrame, _ rect: PixelRect, is color: YUVColor, inset: Int = 0, tolerance: Int = 2,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        var worst = 0, worstAt = (0, 0), seen = YUVColor.black
        for y in (rect.y + inset)..<(rect.y + rect.height - inset) {
            for x in (rect.x + inset)..<(rect.x + rect.width - inset) {
                let p = frame.pixel(x: x, y: y)
                let d = max(abs(Int(p.y) - Int(color.y)), abs(Int(p.u) - Int(color.u)), abs(Int(p.v) - Int(color.v)))
                if d > worst { worst = d; worstAt = (x, y); seen = p }
            }
        }
        #expect(worst <= tolerance, "\(rect) should be \(color); at \(worstAt) it is \(seen)", sourceLocation: sourceLocation)
    }

    @Test func composesTwoScaledFramesOnABackground() throws {
        let compositor = try VideoCompositor(width: 320, height: 240, background: Self.green)
        let redRect = PixelRect(x: 16, y: 40, width: 128, height: 160)
        let blueRect = PixelRect(x: 176, y: 40, width: 128, height: 96)
        try compositor.draw(VideoFrame(width: 640, height: 360, color: Self.red), into: redRect)
        try compositor.draw(VideoFrame(width: 90, height: 50, color: Self.blue), into: blueRect)
        let frame = compositor.frame(pts: 1234)
        #expect(frame.width == 320 && frame.height == 240 && frame.pts == 1234)
        Self.expect(frame, redRect, is: Self.red)
        Self.expect(frame, blueRect, is: Self.blue)
        // Background: the strips around and between the rectangles.
        Self.expect(frame, PixelRect(x: 0, y: 0, width: 320, height: 40), is: Self.green)
        Self.expect(frame, PixelRect(x: 0, y: 200, width: 320, height: 40), is: Self.green)
        Self.expect(frame, PixelRect(x: 144, y: 40, width: 32, height: 160), is: Self.green)
        Self.expect(frame, PixelRect(x: 176, y: 136, width: 128, height: 64), is: Self.green)
        #expect(compositor.cachedScalerCount == 2)
        // The same geometry again reuses the scalers.
        try compositor.draw(VideoFrame(width: 640, height: 360, color: Self.blue), into: redRect)
        #expect(compositor.cachedScalerCount == 2)
        Self.expect(compositor.frame(pts: 0), redRect, is: Self.blue)
    }

    @Test func theCropRegionIsWhatLandsInTheRectangle() throws {
        // Left half red, right half blue.
        var source = VideoFrame(width: 128, height: 64, color: Self.red)
        source.fillRect(x: 64, y: 0, width: 64, height: 64, color: Self.blue)
        let compositor = try VideoCompositor(width: 320, height: 240, background: Self.green)
        let right = PixelRect(x: 20, y: 20, width: 100, height: 100)
        let left = PixelRect(x: 180, y: 20, width: 60, height: 200)
        try compositor.draw(source, crop: PixelRect(x: 64, y: 0, width: 64, height: 64), into: right)
        try compositor.draw(source, crop: PixelRect(x: 0, y: 0, width: 64, height: 64), into: left)
        let frame = compositor.frame(pts: 0)
        Self.expect(frame, right, is: Self.blue)
        Self.expect(frame, left, is: Self.red)
        Self.expect(frame, PixelRect(x: 120, y: 0, width: 60, height: 240), is: Self.green)
    }

    @Test func laterDrawsCoverEarlierOnesAndSameSizeFramesAreCopied() throws {
        let compositor = try VideoCompositor(width: 64, height: 64)
        let card = TestCardSource(width: 32, height: 32, fps: 15, label: "z").nextFrame(index: 3)
        try compositor.draw(card, into: PixelRect(x: 0, y: 0, width: 32, height: 32))
        #expect(compositor.cachedScalerCount == 0, "a same-size draw needs no scaler")
        var expected = VideoFrame(width: 64, height: 64, color: .black)
        for y in 0..<32 { for x in 0..<32 { expected.y[y * 64 + x] = card.y[y * 32 + x] } }
        #expect(compositor.frame(pts: 0).y == expected.y)
        // zOrder: a placeholder drawn later covers the overlap.
        try compositor.fill(PixelRect(x: 16, y: 16, width: 32, height: 32), color: .white)
        let frame = compositor.frame(pts: 0)
        Self.expect(frame, PixelRect(x: 16, y: 16, width: 32, height: 32), is: .white, tolerance: 0)
        Self.expect(frame, PixelRect(x: 32, y: 0, width: 32, height: 16), is: .black, tolerance: 0)
        compositor.fill(Self.green)
        Self.expect(compositor.frame(pts: 0), PixelRect(x: 0, y: 0, width: 64, height: 64), is: Self.green, tolerance: 0)
    }

    @Test func rejectsOddOrOutsideRectangles() throws {
        #expect(throws: MediaFormatError.self) { try VideoCompositor(width: 321, height: 240) }
        let compositor = try VideoCompositor(width: 64, height: 64)
        let frame = VideoFrame(width: 16, height: 16, color: .white)
        #expect(throws: MediaFormatError.self) { try compositor.draw(frame, into: PixelRect(x: 1, y: 0, width: 16, height: 16)) }
        #expect(throws: MediaFormatError.self) { try compositor.draw(frame, into: PixelRect(x: 56, y: 0, width: 16, height: 16)) }
        #expect(throws: MediaFormatError.self) { try compositor.draw(frame, crop: PixelRect(x: 1, y: 0, width: 8, height: 8), into: PixelRect(x: 0, y: 0, width: 16, height: 16)) }
        #expect(throws: MediaFormatError.self) { try compositor.draw(frame, crop: PixelRect(x: 0, y: 0, width: 18, height: 8), into: PixelRect(x: 0, y: 0, width: 16, height: 16)) }
        #expect(throws: MediaFormatError.self) { try compositor.fill(PixelRect(x: 0, y: 0, width: 0, height: 16), color: .white) }
    }

    @Test(.requires(.ffmpeg), arguments: ["png", "jpg"])
    func loadsAnImageFileAndDrawsIt(format: String) throws {
        let path = TestSupport.temporaryPath(".\(format)")
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Left half red, right half blue, 64x48.
        let result = try RequiredTool.ffmpeg.run([
            "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0xFF0000:s=32x48,pad=64:48:0:0:color=0x0000FF",
            "-frames:v", "1", "-q:v", "2", path])
        try #require(result.status == 0, "ffmpeg: \(result.errors)")

        let image = try VideoFrame(contentsOfImageFile: path)
        #expect(image.width == 64 && image.height == 48)
        let tolerance = format == "png" ? 2 : 8
        Self.expect(image, PixelRect(x: 0, y: 0, width: 28, height: 48), is: Self.red, tolerance: tolerance)
        Self.expect(image, PixelRect(x: 36, y: 0, width: 28, height: 48), is: Self.blue, tolerance: tolerance)

        let compositor = try VideoCompositor(width: 160, height: 120, background: Self.green)
        try compositor.draw(image, crop: PixelRect(x: 32, y: 0, width: 32, height: 48), into: PixelRect(x: 100, y: 10, width: 48, height: 48))
        Self.expect(compositor.frame(pts: 0), PixelRect(x: 100, y: 10, width: 48, height: 48), is: Self.blue, inset: 2, tolerance: tolerance)
    }

    @Test func aMissingImageFileThrows() {
        #expect(throws: CodecError.self) { try VideoFrame(contentsOfImageFile: "/nonexistent/watermark.png") }
    }
}
