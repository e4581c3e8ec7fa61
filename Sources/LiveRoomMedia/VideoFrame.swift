/// One uncompressed picture in I420 (YUV 4:2:0 planar, BT.601 limited range).
///
/// The planes are tightly packed: the luma plane has `width` bytes per row, and
/// each chroma plane has ``chromaWidth`` bytes per row and ``chromaHeight`` rows.
/// `pts` is in the 90 kHz RTP video clock.
public struct VideoFrame: Sendable, Equatable {
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Luma plane, `width * height` bytes.
    public var y: [UInt8]
    /// Blue-difference chroma plane, `chromaWidth * chromaHeight` bytes.
    public var u: [UInt8]
    /// Red-difference chroma plane, `chromaWidth * chromaHeight` bytes.
    public var v: [UInt8]
    /// Presentation time in 90 kHz units.
    public var pts: Int64

    /// Width of the chroma planes: half the picture width, rounded up.
    public var chromaWidth: Int { (width + 1) / 2 }
    /// Height of the chroma planes: half the picture height, rounded up.
    public var chromaHeight: Int { (height + 1) / 2 }

    /// Wraps existing planes; throws if a plane has the wrong size.
    public init(width: Int, height: Int, y: [UInt8], u: [UInt8], v: [UInt8], pts: Int64) throws {
        guard width > 0, height > 0 else {
            throw MediaFormatError("video frame must be at least 1x1, got \(width)x\(height)")
        }
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        guard y.count == width * height, u.count == chroma, v.count == chroma else {
            throw MediaFormatError(
                "I420 planes for \(width)x\(height) need \(width * height)/\(chroma)/\(chroma) bytes, got \(y.count)/\(u.count)/\(v.count)")
        }
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
        self.pts = pts
    }

    /// A frame filled with one colour.
    public init(width: Int, height: Int, color: YUVColor, pts: Int64 = 0) {
        precondition(width > 0 && height > 0, "video frame must be at least 1x1")
        self.width = width
        self.height = height
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        self.y = [UInt8](repeating: color.y, count: width * height)
        self.u = [UInt8](repeating: color.u, count: chroma)
        self.v = [UInt8](repeating: color.v, count: chroma)
        self.pts = pts
    }

    /// The luma and co-sited chroma samples at a pixel.
    public func pixel(x: Int, y row: Int) -> YUVColor {
        precondition(x >= 0 && x < width && row >= 0 && row < height, "pixel (\(x), \(row)) outside \(width)x\(height)")
        let c = (row / 2) * chromaWidth + x / 2
        return YUVColor(y: y[row * width + x], u: u[c], v: v[c])
    }

    /// Copies planes with arbitrary strides (as C decoders hand them out) into a packed frame.
    init(
        width: Int, height: Int, pts: Int64,
        yPlane: UnsafePointer<UInt8>, yStride: Int,
        uPlane: UnsafePointer<UInt8>, uStride: Int,
        vPlane: UnsafePointer<UInt8>, vStride: Int
    ) {
        self.width = width
        self.height = height
        self.pts = pts
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        self.y = Self.copyPlane(yPlane, stride: yStride, width: width, height: height)
        self.u = Self.copyPlane(uPlane, stride: uStride, width: cw, height: ch)
        self.v = Self.copyPlane(vPlane, stride: vStride, width: cw, height: ch)
    }

    /// Copies planes with arbitrary strides into `picture`, in its own storage when it has the
    /// same size (and holds the only reference to it), so a decoder's next picture takes the
    /// last one's place without a new allocation; otherwise into a new frame.
    static func replace(
        _ picture: inout VideoFrame?, width: Int, height: Int, pts: Int64,
        yPlane: UnsafePointer<UInt8>, yStride: Int,
        uPlane: UnsafePointer<UInt8>, uStride: Int,
        vPlane: UnsafePointer<UInt8>, vStride: Int
    ) {
        guard var frame = picture, frame.width == width, frame.height == height else {
            picture = VideoFrame(
                width: width, height: height, pts: pts,
                yPlane: yPlane, yStride: yStride, uPlane: uPlane, uStride: uStride, vPlane: vPlane, vStride: vStride)
            return
        }
        // Let go of the caller's reference, so the planes are copied in place, not on write.
        picture = nil
        let cw = frame.chromaWidth, ch = frame.chromaHeight
        Self.copyPlane(yPlane, stride: yStride, width: width, height: height, into: &frame.y)
        Self.copyPlane(uPlane, stride: uStride, width: cw, height: ch, into: &frame.u)
        Self.copyPlane(vPlane, stride: vStride, width: cw, height: ch, into: &frame.v)
        frame.pts = pts
        picture = frame
    }

    private static func copyPlane(_ source: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, into plane: inout [UInt8]) {
        plane.withUnsafeMutableBufferPointer { buffer in
            for row in 0..<height {
                (buffer.baseAddress! + row * width).update(from: source + row * stride, count: width)
            }
        }
    }

    private static func copyPlane(_ source: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: width * height) { buffer, count in
            for row in 0..<height {
                (buffer.baseAddress! + row * width).update(from: source + row * stride, count: width)
            }
            count = width * height
        }
    }

    /// Copies the planes into C buffers with the given strides (which must hold the rows).
    func copyPlanes(
        toY yPlane: UnsafeMutablePointer<UInt8>, yStride: Int,
        u uPlane: UnsafeMutablePointer<UInt8>, uStride: Int,
        v vPlane: UnsafeMutablePointer<UInt8>, vStride: Int
    ) {
        Self.copy(y, width: width, height: height, to: yPlane, stride: yStride)
        Self.copy(u, width: chromaWidth, height: chromaHeight, to: uPlane, stride: uStride)
        Self.copy(v, width: chromaWidth, height: chromaHeight, to: vPlane, stride: vStride)
    }

    private static func copy(_ plane: [UInt8], width: Int, height: Int, to target: UnsafeMutablePointer<UInt8>, stride: Int) {
        plane.withUnsafeBufferPointer { source in
            for row in 0..<height {
                (target + row * stride).update(from: source.baseAddress! + row * width, count: width)
            }
        }
    }
}
