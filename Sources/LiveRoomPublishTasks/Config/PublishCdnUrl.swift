import LiveRoomProtocol

/// One RTMP destination of a task (TRTC's `TRTCPublishCdnUrl`, the admin API's `McuPublishCdnParam`).
public struct PublishCdnUrl: Sendable, Hashable, Codable {
    /// The `rtmp://` or `rtmps://` URL to push to.
    public var rtmpUrl: String
    /// TRTC's `isInternalLine` (`IsTencentCdn`): kept for compatibility, it changes nothing here.
    public var isInternalLine: Bool

    public init(rtmpUrl: String, isInternalLine: Bool = true) {
        self.rtmpUrl = rtmpUrl
        self.isInternalLine = isInternalLine
    }

    /// The URL with scheme and host lower-cased, so that two spellings of one destination compare equal.
    public var normalizedURL: String {
        guard let schemeEnd = rtmpUrl.range(of: "://") else { return rtmpUrl }
        let scheme = rtmpUrl[..<schemeEnd.lowerBound].lowercased()
        let rest = rtmpUrl[schemeEnd.upperBound...]
        let hostEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        return scheme + "://" + rest[..<hostEnd].lowercased() + rest[hostEnd...]
    }

    /// Checks the URL: `rtmp://` or `rtmps://`, a host, an application and stream path,
    /// no spaces or control characters, at most 1024 bytes.
    public func validate(field: String) throws(LiveRoomError) {
        let url = rtmpUrl
        guard !url.isEmpty else {
            throw LiveRoomError(ErrorCode.invalidCdnUrl, "\(field) is empty")
        }
        guard url.utf8.count <= 1024 else {
            throw LiveRoomError(ErrorCode.invalidCdnUrl, "\(field) is longer than 1024 bytes")
        }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw LiveRoomError(ErrorCode.invalidCdnUrl, "\(field) \(url.quoted) contains spaces or control characters")
        }
        let lower = url.lowercased()
        let prefix: String
        if lower.hasPrefix("rtmp://") {
            prefix = "rtmp://"
        } else if lower.hasPrefix("rtmps://") {
            prefix = "rtmps://"
        } else {
            throw LiveRoomError(ErrorCode.invalidCdnUrl, "\(field) \(url.quoted) must start with rtmp:// or rtmps://")
        }
        let rest = url.dropFirst(prefix.count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let host = rest[..<slash]
        guard !host.isEmpty, !host.hasPrefix(":") else {
            throw LiveRoomError(ErrorCode.invalidCdnUrl, "\(field) \(url.quoted) has no host")
        }
        let path = rest[slash...].drop(while: { $0 == "/" })
        guard !path.isEmpty else {
            throw LiveRoomError(ErrorCode.invalidCdnUrl, "\(field) \(url.quoted) has no application/stream path")
        }
    }
}
