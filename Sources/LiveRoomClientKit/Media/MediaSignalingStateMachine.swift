import LiveRoomProtocol
import LiveRoomTransport

/// The client's media signaling: when to publish and unpublish (role changes), when to
/// subscribe to a remote anchor (its audio or video became available) and when to close
/// that subscription. Pure: it reads signaling events and returns actions; the session
/// sends the requests and runs the transports.
public struct MediaSignalingStateMachine: Sendable {
    public enum Action: Sendable, Hashable {
        /// Make a publish offer and send `publish`.
        case publish
        /// Send `unpublish` and close the publishing transport.
        case unpublish
        /// Make a subscribe offer for this anchor and send `subscribe`.
        case subscribe(userId: String)
        /// Start the publishing transport with the server's answer.
        case startPublishing(answer: String)
        /// Start this anchor's subscription transport with the server's answer.
        case startSubscription(userId: String, answer: String)
        /// Close this anchor's subscription transport (it stopped publishing or left).
        case closeSubscription(userId: String)
        /// Send `unsubscribe` (an answer came for a subscription no longer wanted).
        case unsubscribe(userId: String)
    }

    enum PublishState: Sendable, Hashable {
        case idle
        case offering
        case publishing
    }

    enum SubscriptionState: Sendable, Hashable {
        case offering
        case active
    }

    struct Availability: Sendable, Hashable {
        var audio = false
        var video = false
        var any: Bool { audio || video }
    }

    public let userId: String
    /// Whether to publish whenever we are an anchor (`--publish`).
    public let wantsToPublish: Bool
    public private(set) var role: Role?
    private(set) var publishState = PublishState.idle
    private var pendingRoleSwitches: [Role] = []
    private var availability: [String: Availability] = [:]
    private(set) var subscriptions: [String: SubscriptionState] = [:]
    /// Subscriptions offered and not yet answered, oldest first (errors name no user).
    private var offeredSubscriptions: [String] = []

    public init(userId: String, wantsToPublish: Bool) {
        self.userId = userId
        self.wantsToPublish = wantsToPublish
    }

    /// Whether a publishing connection is being set up or running.
    public var isPublishing: Bool { publishState != .idle }

    /// The anchors we subscribe to (offered or running).
    public var subscribedUsers: Set<String> { Set(subscriptions.keys) }

    /// onEnterRoom succeeded with this role.
    public mutating func entered(role: Role) -> [Action] {
        self.role = role
        return publishIfWanted()
    }

    /// We sent `switchRole` to this role.
    public mutating func requestedRoleSwitch(to role: Role) {
        pendingRoleSwitches.append(role)
    }

    /// onSwitchRole arrived with the role the server reports. Without it (an older server),
    /// a success is our pending request, or else a toggle (mic approval made us anchor,
    /// endMic made us audience).
    public mutating func switchedRole(errCode: Int, reported: Role? = nil) -> [Action] {
        let requested = pendingRoleSwitches.isEmpty ? nil : pendingRoleSwitches.removeFirst()
        guard errCode == 0, let current = role else { return [] }
        role = reported ?? requested ?? (current == .anchor ? .audience : .anchor)
        if role == .anchor { return publishIfWanted() }
        guard publishState != .idle else { return [] }
        publishState = .idle
        return [.unpublish]
    }

    private mutating func publishIfWanted() -> [Action] {
        guard wantsToPublish, role == .anchor, publishState == .idle else { return [] }
        publishState = .offering
        return [.publish]
    }

    /// onPublishAnswer arrived.
    public mutating func publishAnswered(sdp: String) -> [Action] {
        guard publishState == .offering else { return [] }
        publishState = .publishing
        return [.startPublishing(answer: sdp)]
    }

    /// The publishing transport failed or publish was refused (onError for `publish`).
    public mutating func publishFailed() -> [Action] {
        let wasPublishing = publishState == .publishing
        publishState = .idle
        return wasPublishing ? [.unpublish] : []
    }

    /// onUserVideoAvailable / onUserAudioAvailable arrived.
    public mutating func availabilityChanged(userId: String, kind: MediaKind, available: Bool) -> [Action] {
        guard userId != self.userId else { return [] }
        var state = availability[userId] ?? Availability()
        switch kind {
        case .audio: state.audio = available
        case .video: state.video = available
        }
        availability[userId] = state.any ? state : nil
        if state.any, subscriptions[userId] == nil {
            subscriptions[userId] = .offering
            offeredSubscriptions.append(userId)
            return [.subscribe(userId: userId)]
        }
        if !state.any, subscriptions[userId] == .active {
            subscriptions[userId] = nil
            return [.closeSubscription(userId: userId)]
        }
        return []
    }

    /// onSubscribeAnswer arrived.
    public mutating func subscribeAnswered(userId: String, sdp: String) -> [Action] {
        offeredSubscriptions.removeAll { $0 == userId }
        guard subscriptions[userId] == .offering else { return [] }
        guard availability[userId] != nil else {
            subscriptions[userId] = nil
            return [.unsubscribe(userId: userId)]
        }
        subscriptions[userId] = .active
        return [.startSubscription(userId: userId, answer: sdp)]
    }

    /// onError for `subscribe`: the oldest unanswered subscription failed.
    public mutating func subscribeFailed() -> [Action] {
        guard !offeredSubscriptions.isEmpty else { return [] }
        let userId = offeredSubscriptions.removeFirst()
        subscriptions[userId] = nil
        return []
    }

    /// A subscription transport closed on its own (failed ICE or DTLS, or the server closed).
    public mutating func subscriptionClosed(userId: String) {
        subscriptions[userId] = nil
    }

    /// onRemoteUserLeaveRoom: the anchor left or became audience.
    public mutating func remoteUserLeft(userId: String) -> [Action] {
        availability[userId] = nil
        guard let state = subscriptions.removeValue(forKey: userId) else { return [] }
        offeredSubscriptions.removeAll { $0 == userId }
        return state == .active ? [.closeSubscription(userId: userId)] : []
    }
}
