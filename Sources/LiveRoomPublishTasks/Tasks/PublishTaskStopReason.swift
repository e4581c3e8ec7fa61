/// Why a publish media stream task ended.
public enum PublishTaskStopReason: Sendable, Hashable {
    /// `stopPublishMediaStream` or `StopPublishCdnStream`.
    case requested
    /// Every input left and the idle time ran out.
    case idleTimeout
    /// The room was dismissed.
    case roomDismissed
    /// Every CDN URL failed after its retries.
    case failed(message: String)
}
