import LiveRoomProtocol

/// Where a task publishes (TRTC's `TRTCPublishTarget`).
public struct PublishTarget: Sendable, Hashable, Codable {
    /// The most CDN URLs one task may push to.
    public static let maxCdnUrls = 10

    public var mode: PublishMode
    /// The RTMP destinations; empty for ``PublishMode/mixStreamToRoom``.
    public var cdnUrlList: [PublishCdnUrl]
    /// The robot user that publishes the mix into a room (``PublishMode/mixStreamToRoom`` only).
    public var mixStreamIdentity: MixUser?

    public init(mode: PublishMode, cdnUrlList: [PublishCdnUrl] = [], mixStreamIdentity: MixUser? = nil) {
        self.mode = mode
        self.cdnUrlList = cdnUrlList
        self.mixStreamIdentity = mixStreamIdentity
    }

    /// Checks the URLs (1 to 10, valid, no duplicates) for CDN modes and the identity for the room mode.
    public func validate(field: String = "target") throws(LiveRoomError) {
        if mode.publishesToCdn {
            guard !cdnUrlList.isEmpty else {
                throw LiveRoomError(ErrorCode.missingCdnUrl, "\(field).cdnUrlList must hold at least one RTMP URL for mode \(mode.name)")
            }
            guard cdnUrlList.count <= Self.maxCdnUrls else {
                throw LiveRoomError(
                    ErrorCode.tooManyCdnUrls,
                    "\(field).cdnUrlList holds \(cdnUrlList.count) URLs; a task pushes to at most \(Self.maxCdnUrls)")
            }
            var seen: [String: Int] = [:]
            for (index, url) in cdnUrlList.enumerated() {
                try url.validate(field: "\(field).cdnUrlList[\(index)].rtmpUrl")
                if let first = seen[url.normalizedURL] {
                    throw LiveRoomError(
                        ErrorCode.duplicateCdnUrl,
                        "\(field).cdnUrlList[\(index)] repeats \(field).cdnUrlList[\(first)] \"\(url.rtmpUrl)\"")
                }
                seen[url.normalizedURL] = index
            }
        } else {
            guard let identity = mixStreamIdentity, !identity.userId.isEmpty else {
                throw LiveRoomError(
                    ErrorCode.invalidPublishTarget,
                    "\(field).mixStreamIdentity.userId is required for mode mixStreamToRoom (the robot user that publishes the mix)")
            }
        }
    }
}
