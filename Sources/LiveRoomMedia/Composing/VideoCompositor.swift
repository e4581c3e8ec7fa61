import CFFmpeg

/// Draws pictures onto an I420 canvas, for server-side mixing: a background colour,
/// scaled video frames and images, and solid placeholder rectangles.
///
/// Each call paints over what is already there, so the caller draws in its layout's
/// zOrder order (lowest first) and then takes the result with ``frame(pts:)``. The
/// layout math (fill mode, crop) is the caller's: ``draw(_:crop:into:)`` scales exactly
/// the crop rectangle of the source onto exactly the destination rectangle.
///
/// Scaling uses libswscale (bilinear by default). One scaler is kept per
/// (source size, destination size), so a steady layout sets up its scalers once.
///
/// Not thread-safe; use from one isolation domain.
public final class VideoCompositor {
    /// Canvas width in pixels (even).
    public let width: Int
    /// Canvas height in pixels (even).
    public let height: Int

    private struct ScalerKey: Hashable {
        var sourceWidth, sourceHeight, width, height: Int
    }

    /// The canvas planes in one allocation: Y, then U, then V, tightly packed.
    private let planes: UnsafeMutablePointer<UInt8>
    /// A scaler and the aligned buffer it scales into. libswscale's SIMD code writes past
    /// the end of a row, so it never writes into the canvas directly.
    private final class ScaleStage {
        let scaler: FFmpegScaler
        let lumaStride: Int, chromaStride: Int
        let buffer: UnsafeMutableRawPointer
        let planes: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>)

        init(width: Int, height: Int, flags: Int32) {
            scaler = FFmpegScaler(flags: flags)
            lumaStride = (width + 63) / 64 * 64 + 64
            chromaStride = (width / 2 + 63) / 64 * 64 + 64
            let lumaBytes = lumaStride * (height + 2), chromaBytes = chromaStride * (height / 2 + 2)
            buffer = .allocate(byteCount: lumaBytes + 2 * chromaBytes, alignment: 64)
            let bytes = buffer.bindMemory(to: UInt8.self, capacity: lumaBytes + 2 * chromaBytes)
            planes = (bytes, bytes + lumaBytes, bytes + lumaBytes + chromaBytes)
        }

        deinit { buffer.deallocate() }
    }

    private var scalers: [ScalerKey: ScaleStage] = [:]
    private let scalerFlags: Int32

    /// Number of cached scalers, one per (source size, destination size) seen so far.
    public var cachedScalerCount: Int { scalers.count }

    /// - Parameters:
    ///   - width: canvas width, even.
    ///   - height: canvas height, even.
    ///   - background: the initial colour of the canvas.
    ///   - bicubic: scale with bicubic instead of bilinear interpolation.
    public init(width: Int, height: Int, background: YUVColor = .black, bicubic: Bool = false) throws {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
            throw MediaFormatError("canvas must have an even size, got \(width)x\(height)")
        }
        self.width = width
        self.height = height
        scalerFlags = bicubic ? SWS_BICUBIC : SWS_BILINEAR
        planes = .allocate(capacity: width * height * 3 / 2)
        fill(background)
    }

    deinit { planes.deallocate() }

    private var chromaWidth: Int { width / 2 }
    private var yPlane: UnsafeMutablePointer<UInt8> { planes }
    private var uPlane: UnsafeMutablePointer<UInt8> { planes + width * height }
    private var vPlane: UnsafeMutablePointer<UInt8> { planes + width * height + (width / 2) * (height / 2) }

    /// Fills the whole canvas with one colour (the layout's background).
    public func fill(_ color: YUVColor) {
        yPlane.update(repeating: color.y, count: width * height)
        uPlane.update(repeating: color.u, count: (width / 2) * (height / 2))
        vPlane.update(repeating: color.v, count: (width / 2) * (height / 2))
    }

    /// Fills a rectangle with one colour (a placeholder for a user without video).
    /// - Throws: ``MediaFormatError`` if `rect` is not even-aligned or not inside the canvas.
    public func fill(_ rect: PixelRect, color: YUVColor) throws {
        try check(destination: rect)
        let cw = chromaWidth
        for row in rect.y..<(rect.y + rect.height) {
            (yPlane + row * width + rect.x).update(repeating: color.y, count: rect.width)
        }
        for row in (rect.y / 2)..<((rect.y + rect.height) / 2) {
            (uPlane + row * cw + rect.x / 2).update(repeating: color.u, count: rect.width / 2)
            (vPlane + row * cw + rect.x / 2).update(repeating: color.v, count: rect.width / 2)
        }
    }

    /// Scales the `crop` region of `source` onto the `destination` rectangle of the canvas.
    ///
    /// The same call draws images (a watermark or placeholder image loaded with
    /// ``VideoFrame/init(contentsOfImageFile:)``).
    /// - Parameters:
    ///   - source: a video frame or image; any size.
    ///   - crop: the part of `source` to draw, with an even `x` and `y`; nil for all of it.
    ///   - destination: where it lands; even-aligned and inside the canvas.
    public func draw(_ source: VideoFrame, crop: PixelRect? = nil, into destination: PixelRect) throws {
        try check(destination: destination)
        let crop = crop ?? PixelRect(x: 0, y: 0, width: source.width, height: source.height)
        guard crop.fits(width: source.width, height: source.height), crop.x % 2 == 0, crop.y % 2 == 0 else {
            throw MediaFormatError("crop \(crop) must have an even origin and lie inside the \(source.width)x\(source.height) source")
        }
        let sourceChromaWidth = source.chromaWidth
        let lumaOffset = crop.y * source.width + crop.x
        let chromaOffset = (crop.y / 2) * sourceChromaWidth + crop.x / 2
        let cw = chromaWidth
        let target = (
            yPlane + destination.y * width + destination.x,
            uPlane + (destination.y / 2) * cw + destination.x / 2,
            vPlane + (destination.y / 2) * cw + destination.x / 2)

        try source.y.withUnsafeBufferPointer { y in
            try source.u.withUnsafeBufferPointer { u in
                try source.v.withUnsafeBufferPointer { v in
                    let from = (y.baseAddress! + lumaOffset, u.baseAddress! + chromaOffset, v.baseAddress! + chromaOffset)
                    if crop.width == destination.width && crop.height == destination.height {
                        copyRows(from: from, sourceStrides: (source.width, sourceChromaWidth), to: target, size: destination)
                        return
                    }
                    let key = ScalerKey(sourceWidth: crop.width, sourceHeight: crop.height, width: destination.width, height: destination.height)
                    let stage = scalers[key] ?? ScaleStage(width: destination.width, height: destination.height, flags: scalerFlags)
                    scalers[key] = stage
                    let sourcePlanes: [UnsafePointer<UInt8>?] = [from.0, from.1, from.2, nil]
                    let sourceStrides: [Int32] = [Int32(source.width), Int32(sourceChromaWidth), Int32(sourceChromaWidth), 0]
                    try stage.scaler.scale(
                        source: sourcePlanes, sourceStrides: sourceStrides,
                        sourceWidth: crop.width, sourceHeight: crop.height, sourceFormat: AV_PIX_FMT_YUV420P,
                        destination: stage.planes, destinationStrides: (stage.lumaStride, stage.chromaStride, stage.chromaStride),
                        width: destination.width, height: destination.height)
                    copyRows(
                        from: (UnsafePointer(stage.planes.0), UnsafePointer(stage.planes.1), UnsafePointer(stage.planes.2)),
                        sourceStrides: (stage.lumaStride, stage.chromaStride), to: target, size: destination)
                }
            }
        }
    }

    /// Forgets the cached scalers (e.g. after a layout change that will not come back).
    public func removeCachedScalers() { scalers.removeAll() }

    /// A copy of the canvas as it stands, stamped with `pts` (90 kHz).
    public func frame(pts: Int64) -> VideoFrame {
        let cw = chromaWidth
        return VideoFrame(
            width: width, height: height, pts: pts,
            yPlane: yPlane, yStride: width, uPlane: uPlane, uStride: cw, vPlane: vPlane, vStride: cw)
    }

    private func copyRows(
        from source: (UnsafePointer<UInt8>, UnsafePointer<UInt8>, UnsafePointer<UInt8>), sourceStrides: (Int, Int),
        to target: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>), size: PixelRect
    ) {
        let cw = chromaWidth
        for row in 0..<size.height {
            (target.0 + row * width).update(from: source.0 + row * sourceStrides.0, count: size.width)
        }
        for row in 0..<(size.height / 2) {
            (target.1 + row * cw).update(from: source.1 + row * sourceStrides.1, count: size.width / 2)
            (target.2 + row * cw).update(from: source.2 + row * sourceStrides.1, count: size.width / 2)
        }
    }

    private func check(destination rect: PixelRect) throws {
        guard rect.isEvenAligned, rect.fits(width: width, height: height) else {
            throw MediaFormatError("rectangle \(rect) must be even-aligned and inside the \(width)x\(height) canvas")
        }
    }
}
