/// A decoded frame of either kind, as a file source hands them out in file order.
public enum MediaFrame: Sendable, Equatable {
    case video(VideoFrame)
    case audio(AudioFrame)
}
