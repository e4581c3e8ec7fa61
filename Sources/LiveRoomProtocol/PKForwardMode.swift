/// What of a PK link's remote anchors a room receives (`updateOtherRoomForwardMode`).
public enum PKForwardMode: String, Sendable, Hashable, CaseIterable {
    case both
    case audio
    case video
    case none

    public var audio: Bool { self == .both || self == .audio }
    public var video: Bool { self == .both || self == .video }
}
