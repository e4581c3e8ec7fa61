/// The state of one RTMP destination, as `onCdnStreamStateChanged` reports it.
public enum CdnStreamState: Sendable, Hashable {
    /// Connecting for the first time (or again after an update added the URL).
    case connecting
    /// Connected and pushing.
    case pushing
    /// The connection failed or dropped; retry `attempt` (1…retry count) is scheduled.
    case reconnecting(attempt: Int)
    /// Every retry failed; the URL is given up.
    case failed(message: String)
    /// The task stopped or an update removed the URL.
    case stopped
}
