/// An image drawn over the mix (TRTC's `TRTCWatermark`, the admin API's `McuWaterMarkImage`).
public struct Watermark: Sendable, Hashable, Codable {
    public var watermarkUrl: String
    public var rect: MixRect
    /// The layer, 0 to 15; a watermark is drawn above a video layout of the same zOrder.
    public var zOrder: Int

    public init(watermarkUrl: String, rect: MixRect, zOrder: Int = 0) {
        self.watermarkUrl = watermarkUrl
        self.rect = rect
        self.zOrder = zOrder
    }
}
