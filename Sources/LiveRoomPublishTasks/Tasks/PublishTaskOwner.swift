/// Who started a task: an anchor through the client API, or the admin REST API.
public enum PublishTaskOwner: Sendable, Hashable {
    /// An anchor (`startPublishMediaStream`); only they may update or stop it from a client.
    case user(MixUser)
    /// `StartPublishCdnStream`; any admin call may update or stop it.
    case admin
}
