/// What a publish media stream task does with its inputs (TRTC's `TRTCPublishMode`).
public enum PublishMode: Int, Sendable, Hashable, Codable, CaseIterable {
    /// Relay one user's camera stream unchanged to CDN URLs (`TRTCPublishBigStreamToCdn`).
    case bigStreamToCdn = 1
    /// Relay one user's screen-share stream to CDN URLs (`TRTCPublishSubStreamToCdn`).
    case subStreamToCdn = 2
    /// Mix several streams with a layout and push the result to CDN URLs (`TRTCPublishMixStreamToCdn`).
    case mixStreamToCdn = 3
    /// Mix several streams and publish the result back into a room as a robot user (`TRTCPublishMixStreamToRoom`).
    case mixStreamToRoom = 4

    /// Whether the task transcodes a mix (as opposed to relaying one stream).
    public var isMixing: Bool { self == .mixStreamToCdn || self == .mixStreamToRoom }

    /// Whether the output goes to CDN URLs (as opposed to a room).
    public var publishesToCdn: Bool { self != .mixStreamToRoom }

    /// The TRTC name, for messages.
    public var name: String {
        switch self {
        case .bigStreamToCdn: "bigStreamToCdn"
        case .subStreamToCdn: "subStreamToCdn"
        case .mixStreamToCdn: "mixStreamToCdn"
        case .mixStreamToRoom: "mixStreamToRoom"
        }
    }
}
