/// One thing to draw on the mix canvas, in ``MixFrameLayout/items`` order.
public struct MixDrawItem: Sendable, Hashable {
    /// What fills the item's rect.
    public enum Content: Sendable, Hashable {
        /// A user's video: read `placement.source` of the picture, draw it at `placement.destination`.
        case video(user: MixUser, streamType: MixStreamType, placement: VideoPlacement)
        /// An image (placeholder or watermark) scaled onto the rect.
        case image(url: String)
        /// The rect in a solid 0xRRGGBB colour (a placeholder).
        case color(UInt32)
    }

    /// Where the item comes from.
    public enum Origin: Sendable, Hashable {
        /// `videoLayoutList[index]`, or picture `index` of a template.
        case layout(Int)
        /// `watermarkList[index]`.
        case watermark(Int)
    }

    /// The item's place on the canvas, even-aligned.
    public var rect: MixRect
    public var zOrder: Int
    public var origin: Origin
    /// The user placed here, if any (also when a placeholder is drawn for them).
    public var user: MixUser?
    /// A colour to fill `rect` with before `content` (the letterbox of a fit picture).
    public var backgroundColor: UInt32?
    public var content: Content

    public init(rect: MixRect, zOrder: Int, origin: Origin, user: MixUser?, backgroundColor: UInt32? = nil, content: Content) {
        self.rect = rect
        self.zOrder = zOrder
        self.origin = origin
        self.user = user
        self.backgroundColor = backgroundColor
        self.content = content
    }
}
