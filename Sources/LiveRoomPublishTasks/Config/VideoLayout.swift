/// One picture of the mix (TRTC's `TRTCVideoLayout`, the admin API's `McuLayout`).
public struct VideoLayout: Sendable, Hashable, Codable {
    /// Where the picture goes on the canvas.
    public var rect: MixRect
    /// The layer, 0 (bottom) to 15; unique among the layouts.
    public var zOrder: Int
    public var fillMode: VideoFillMode
    /// The placeholder colour (0xRRGGBB) shown while the user is absent or has no video.
    public var backgroundColor: UInt32
    /// The placeholder image URL shown instead of the colour; empty for none.
    public var placeHolderImage: String
    /// The user shown here; `nil` lets the task fill the place with publishing anchors in join order.
    public var fixedVideoUser: MixUser?
    public var fixedVideoStreamType: MixStreamType

    public init(
        rect: MixRect, zOrder: Int = 0, fillMode: VideoFillMode = .fill, backgroundColor: UInt32 = 0,
        placeHolderImage: String = "", fixedVideoUser: MixUser? = nil, fixedVideoStreamType: MixStreamType = .big
    ) {
        self.rect = rect
        self.zOrder = zOrder
        self.fillMode = fillMode
        self.backgroundColor = backgroundColor
        self.placeHolderImage = placeHolderImage
        self.fixedVideoUser = fixedVideoUser
        self.fixedVideoStreamType = fixedVideoStreamType
    }
}
