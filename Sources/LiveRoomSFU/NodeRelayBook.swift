import LiveRoomTransport
import LiveRoomWire

/// Which publishers of other nodes this node mirrors (node V's side of the node relay), and
/// for whom: one mirror per publisher however many local viewers, asked for again every
/// second while someone watches, stopped ``grace`` after its last viewer left.
public struct MirrorBook {
    public struct Mirror {
        /// The media port of the publisher's node.
        public var home: TransportAddress
        /// The origin the routers know the mirror's relays by (``SFURouter/Origin/node(_:)``).
        public var origin: SFURouter.Origin
        /// The publisher's tracks once its node answered; nil while asked for (or after it ended).
        public var codecs: [RTPCodec]?
        /// Local owners (signaling sessions) watching it.
        public var viewers: Set<UInt64> = []
        /// When its last viewer left.
        public var idleSince: ContinuousClock.Instant?
        public var lastAsked: ContinuousClock.Instant
    }

    public enum Refusal: Error, Sendable, Hashable {
        case tooManyMirrors
        case tooManyHomes
    }

    public private(set) var mirrors: [SFURouter.PublisherKey: Mirror] = [:]
    private var origins: [TransportAddress: SFURouter.Origin] = [:]
    public let maximumMirrors: Int
    public let grace: Duration
    public static let askInterval = Duration.seconds(1)

    public init(maximumMirrors: Int = 256, grace: Duration = .seconds(5)) {
        self.maximumMirrors = maximumMirrors
        self.grace = grace
    }

    /// The origin of relays from the node at `home`, made on first use (at most
    /// ``SFURouter/maximumNodeOrigins`` homes).
    mutating func origin(of home: TransportAddress) throws(Refusal) -> SFURouter.Origin {
        if let origin = origins[home] { return origin }
        guard origins.count < SFURouter.maximumNodeOrigins else { throw .tooManyHomes }
        let origin = SFURouter.Origin.node(origins.count)
        origins[home] = origin
        return origin
    }

    /// The home whose relays come in as `origin`.
    public func home(ofOrigin origin: SFURouter.Origin) -> TransportAddress? {
        origins.first { $0.value == origin }?.key
    }

    /// `viewer` watches `key`, published on the node at `home`. True when the home must be
    /// asked now (a new mirror, or one whose publisher had not answered). A mirror of the same
    /// publisher from another home (the room moved) is replaced.
    public mutating func want(_ key: SFURouter.PublisherKey, from home: TransportAddress, viewer: UInt64, now: ContinuousClock.Instant) throws(Refusal) -> Bool {
        if var mirror = mirrors[key], mirror.home == home {
            mirror.viewers.insert(viewer)
            mirror.idleSince = nil
            let ask = mirror.codecs == nil
            if ask { mirror.lastAsked = now }
            mirrors[key] = mirror
            return ask
        }
        guard mirrors[key] != nil || mirrors.count < maximumMirrors else { throw .tooManyMirrors }
        let origin = try origin(of: home)
        // The viewers of a mirror from an earlier home follow the publisher to its new one.
        let viewers = (mirrors[key]?.viewers ?? []).union([viewer])
        mirrors[key] = Mirror(home: home, origin: origin, codecs: nil, viewers: viewers, idleSince: nil, lastAsked: now)
        return true
    }

    /// The home answered with the publisher's tracks. False when nothing changed (a repeated
    /// answer) or it is not from the mirror's home.
    public mutating func published(_ key: SFURouter.PublisherKey, codecs: [RTPCodec], from source: TransportAddress) -> Bool {
        guard var mirror = mirrors[key], mirror.home == source, mirror.codecs != codecs else { return false }
        mirror.codecs = codecs
        mirrors[key] = mirror
        return true
    }

    /// The publisher ended on its home: the mirror waits for it again while it has viewers.
    public mutating func ended(_ key: SFURouter.PublisherKey, from source: TransportAddress) -> Bool {
        guard var mirror = mirrors[key], mirror.home == source, mirror.codecs != nil else { return false }
        mirror.codecs = nil
        mirrors[key] = mirror
        return true
    }

    /// Whether packets of `key` from `source` feed a mirror.
    public func isLive(_ key: SFURouter.PublisherKey, from source: TransportAddress) -> Bool {
        mirrors[key].map { $0.home == source && $0.codecs != nil } ?? false
    }

    public func codecs(of key: SFURouter.PublisherKey) -> [RTPCodec]? { mirrors[key]?.codecs }

    /// `viewer` stopped watching the publishers `matching` selects (every one when nil).
    public mutating func release(viewer: UInt64, now: ContinuousClock.Instant, matching: ((SFURouter.PublisherKey) -> Bool)? = nil) {
        for (key, var mirror) in mirrors where mirror.viewers.contains(viewer) && (matching?(key) ?? true) {
            mirror.viewers.remove(viewer)
            if mirror.viewers.isEmpty { mirror.idleSince = now }
            mirrors[key] = mirror
        }
    }

    /// Once a turn: the mirrors to ask for again (every ``askInterval``), and those to stop
    /// (no viewer for ``grace``), which are forgotten.
    public mutating func tick(now: ContinuousClock.Instant) -> (ask: [(SFURouter.PublisherKey, TransportAddress)], stop: [(SFURouter.PublisherKey, Mirror)]) {
        var ask: [(SFURouter.PublisherKey, TransportAddress)] = []
        var stop: [(SFURouter.PublisherKey, Mirror)] = []
        for (key, var mirror) in mirrors {
            if let idle = mirror.idleSince, now - idle >= grace {
                mirrors[key] = nil
                stop.append((key, mirror))
            } else if now - mirror.lastAsked >= Self.askInterval {
                mirror.lastAsked = now
                mirrors[key] = mirror
                ask.append((key, mirror.home))
            }
        }
        return (ask, stop)
    }
}

/// Which nodes mirror which of this node's publishers (node H's side of the node relay): one
/// entry per publisher per node, kept while the node asks for it again within
/// ``expiry``, at most ``maximumExports`` in all.
public struct ExportBook {
    public private(set) var exports: [SFURouter.PublisherKey: [TransportAddress: ContinuousClock.Instant]] = [:]
    public let maximumExports: Int
    public let expiry: Duration

    public init(maximumExports: Int = 1024, expiry: Duration = .seconds(5)) {
        self.maximumExports = maximumExports
        self.expiry = expiry
    }

    public var count: Int { exports.values.reduce(0) { $0 + $1.count } }

    /// The node at `node` asks for `key`: true when it is new, false when renewed, nil when refused (full).
    public mutating func mirror(_ key: SFURouter.PublisherKey, to node: TransportAddress, now: ContinuousClock.Instant) -> Bool? {
        if exports[key]?[node] != nil {
            exports[key]?[node] = now
            return false
        }
        guard count < maximumExports else { return nil }
        exports[key, default: [:]][node] = now
        return true
    }

    /// The node stopped it; true when it had it.
    public mutating func stop(_ key: SFURouter.PublisherKey, to node: TransportAddress) -> Bool {
        guard exports[key]?.removeValue(forKey: node) != nil else { return false }
        if exports[key]?.isEmpty == true { exports[key] = nil }
        return true
    }

    public func isMirrored(_ key: SFURouter.PublisherKey, by node: TransportAddress) -> Bool {
        exports[key]?[node] != nil
    }

    /// Forgets what was not asked for within ``expiry`` (the node died or lost interest).
    public mutating func expire(now: ContinuousClock.Instant) -> [(SFURouter.PublisherKey, TransportAddress)] {
        var gone: [(SFURouter.PublisherKey, TransportAddress)] = []
        for (key, nodes) in exports {
            for (node, asked) in nodes where now - asked >= expiry {
                gone.append((key, node))
                exports[key]?[node] = nil
            }
            if exports[key]?.isEmpty == true { exports[key] = nil }
        }
        return gone
    }
}
