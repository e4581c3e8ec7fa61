import LiveRoomWire
import NIOCore

/// The client side of ICE toward an ICE-lite server (RFC 8445): a full, controlling agent
/// with one host candidate that checks each of the server's candidates (a server on several
/// interfaces, or behind NAT with announced addresses, gives several), nominates the first that
/// answers aggressively (USE-CANDIDATE on every check), and keeps consent fresh (RFC 7675).
///
/// UDP is preferred: the server's ICE-TCP candidates (RFC 6544, which the owner reaches over
/// a TCP connection of its own) are checked only when no UDP candidate has answered within
/// ``tcpDelay``, or at once when the server offers nothing else.
public struct ICEControllingAgent: Sendable {
    public enum Action: Sendable, Hashable {
        case send(ByteBuffer, to: TransportAddress)
        /// A check succeeded: media may flow to this address.
        case connected(TransportAddress)
        /// No answer to checks for the consent timeout.
        case failed(String)
    }

    public let local: ICECredentials
    public let remote: ICECredentials
    /// The server's candidates, best first; checked until one answers.
    public let remoteAddresses: [TransportAddress]
    /// Where media goes: the candidate that answered first (until then, the best one).
    public private(set) var remoteAddress: TransportAddress
    public private(set) var isConnected = false
    /// Round-trip time of the latest answered check (consent checks keep it fresh).
    public private(set) var roundTripTime: Duration?
    private let tieBreaker: UInt64
    private var nextCheck: ContinuousClock.Instant
    private var lastSuccess: ContinuousClock.Instant
    /// When a check was last answered (or the agent started).
    public var lastAnswer: ContinuousClock.Instant { lastSuccess }
    /// Checks waiting for an answer: when each was sent, and where.
    private var outstanding: [STUNTransactionID: (sent: ContinuousClock.Instant, to: TransportAddress)] = [:]
    private var failed = false
    private let consentTimeout: Duration
    /// When TCP candidates start being checked.
    private let tcpStart: ContinuousClock.Instant

    /// Checks go every 50 ms until one succeeds, then every 2.5 s to keep consent.
    public static let connectingInterval = Duration.milliseconds(50)
    public static let consentInterval = Duration.milliseconds(2500)

    /// The most candidates checked; the rest are ignored.
    public static let maxRemoteAddresses = 8

    /// How long UDP candidates have to answer before TCP ones are tried too.
    public static let tcpDelay = Duration.milliseconds(1000)

    public init(local: ICECredentials, remote: ICECredentials, remoteAddress: TransportAddress, now: ContinuousClock.Instant, consentTimeout: Duration = .seconds(30)) {
        self.init(local: local, remote: remote, remoteAddresses: [remoteAddress], now: now, consentTimeout: consentTimeout)
    }

    /// - Parameter remoteAddresses: the server's candidates, best first (at least one).
    public init(
        local: ICECredentials, remote: ICECredentials, remoteAddresses: [TransportAddress], now: ContinuousClock.Instant,
        consentTimeout: Duration = .seconds(30)
    ) {
        precondition(!remoteAddresses.isEmpty, "ICE needs at least one remote candidate")
        self.local = local
        self.remote = remote
        self.remoteAddresses = Array(remoteAddresses.prefix(Self.maxRemoteAddresses))
        self.remoteAddress = remoteAddresses[0]
        self.tieBreaker = UInt64.random(in: 1...UInt64.max)
        self.nextCheck = now
        self.lastSuccess = now
        self.consentTimeout = consentTimeout
        let onlyTCP = !remoteAddresses.contains { $0.transport == .udp }
        self.tcpStart = onlyTCP ? now : now + Self.tcpDelay
    }

    /// When ``tick(now:)`` wants to run next.
    public var nextTimeout: ContinuousClock.Instant? { failed ? nil : nextCheck }

    /// Sends a check when one is due, and gives up when consent ran out.
    public mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        guard !failed else { return [] }
        if now - lastSuccess >= consentTimeout {
            failed = true
            return [.failed(isConnected ? "consent expired: no answer to checks for \(consentTimeout)" : "no answer to ICE checks for \(consentTimeout)")]
        }
        guard now >= nextCheck else { return [] }
        nextCheck = now + (isConnected ? Self.consentInterval : Self.connectingInterval)
        // Forget checks that will never be answered.
        outstanding = outstanding.filter { now - $0.value.sent < .seconds(10) }
        // Until one answers, every candidate is checked (TCP ones after the delay); then only
        // the chosen one, for consent.
        let targets = isConnected ? [remoteAddress] : remoteAddresses.filter { $0.transport == .udp || now >= tcpStart }
        return targets.map { address in
            let id = STUNTransactionID.random()
            outstanding[id] = (now, address)
            let request = STUNMessage(
                type: .bindingRequest, transactionID: id,
                attributes: [
                    .username("\(remote.ufrag):\(local.ufrag)"), .priority(1_845_501_695), .iceControlling(tieBreaker), .useCandidate,
                ])
            return .send(request.serialize(integrityKey: STUNIntegrity.shortTermKey(password: remote.pwd), fingerprint: true), to: address)
        }
    }

    /// A STUN message from the server: a response to one of our checks, or something to ignore.
    public mutating func receive(_ message: STUNMessage, datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> [Action] {
        // An answer counts only from where its check went (RFC 8445 section 7.2.5.2.1).
        guard !failed, message.type == .bindingSuccessResponse, let check = outstanding[message.transactionID], check.to == source,
            isConnected ? source == remoteAddress : true,
            case .valid? = try? STUNIntegrity.verifyMessageIntegrity(of: datagram, key: STUNIntegrity.shortTermKey(password: remote.pwd))
        else { return [] }
        outstanding[message.transactionID] = nil
        lastSuccess = now
        roundTripTime = now - check.sent
        guard !isConnected else { return [] }
        isConnected = true
        remoteAddress = source
        nextCheck = now + Self.consentInterval
        return [.connected(remoteAddress)]
    }
}
