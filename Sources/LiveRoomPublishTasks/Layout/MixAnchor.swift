/// A publishing anchor as the layout sees it at one moment.
public struct MixAnchor: Sendable, Hashable, Codable {
    public var user: MixUser
    public var hasVideo: Bool
    public var hasAudio: Bool
    /// The anchor publishes video but has muted it (`muteLocalVideo`).
    public var videoMuted: Bool
    /// The camera picture's size once decoded; `nil` before the first frame.
    public var videoSize: MixSize?
    /// The screen-share picture's size, when the anchor shares a screen.
    public var subStreamSize: MixSize?

    public init(
        user: MixUser, hasVideo: Bool = true, hasAudio: Bool = true, videoMuted: Bool = false,
        videoSize: MixSize? = nil, subStreamSize: MixSize? = nil
    ) {
        self.user = user
        self.hasVideo = hasVideo
        self.hasAudio = hasAudio
        self.videoMuted = videoMuted
        self.videoSize = videoSize
        self.subStreamSize = subStreamSize
    }

    /// Publishes anything at all.
    public var isPublishing: Bool { hasVideo || hasAudio || subStreamSize != nil }

    /// The picture size of `streamType` when it can be drawn now (published, unmuted, decoded).
    public func drawableSize(_ streamType: MixStreamType) -> MixSize? {
        let size: MixSize?
        switch streamType {
        case .big, .small: size = hasVideo && !videoMuted ? videoSize : nil
        case .sub: size = subStreamSize
        }
        guard let size, size.width >= 2, size.height >= 2 else { return nil }
        return size
    }
}
