import LiveRoomProtocol

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
    /// The server's egress policy refused the destination; the URL is given up at once.
    case refused
    /// The task stopped or an update removed the URL.
    case stopped
}

extension CdnStreamState {
    /// The state as `onCdnStreamStateChanged` reports it: status 0–4, an error code (for
    /// `failed`), and a message. `retryCount` is the most retries a URL gets.
    public func report(retryCount: Int) -> (status: Int, code: Int, message: String) {
        switch self {
        case .stopped: (0, 0, "stopped")
        case .connecting: (1, 0, "connecting")
        case .pushing: (2, 0, "pushing")
        case .reconnecting(let attempt): (3, 0, "reconnecting, attempt \(attempt) of \(retryCount)")
        case .failed(let message): (4, ErrorCode.cdnPushFailed, message)
        case .refused: (4, ErrorCode.egressRefused, EgressPolicy.refusal)
        }
    }
}
