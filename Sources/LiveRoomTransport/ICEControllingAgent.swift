import LiveRoomWire
import NIOCore

/// The client side of ICE toward an ICE-lite server (RFC 8445): a full, controlling agent
/// with one host candidate that checks the server's candidate, nominates it aggressively
/// (USE-CANDIDATE on every check), and keeps consent fresh (RFC 7675).
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
    public let remoteAddress: TransportAddress
    public private(set) var isConnected = false
    /// Round-trip time of the latest answered check (consent checks keep it fresh).
    public private(set) var roundTripTime: Duration?
    private let tieBreaker: UInt64
    private var nextCheck: ContinuousClock.Instant
    private var lastSuccess: ContinuousClock.Instant
    private var outstanding: [STUNTransactionID: ContinuousClock.Instant] = [:]
    private var failed = false
    private let consentTimeout: Duration

    /// Checks go every 50 ms until one succeeds, then every 2.5 s to keep consent.
    public static let connectingInterval = Duration.milliseconds(50)
    public static let consentInterval = Duration.milliseconds(2500)

    public init(local: ICECredentials, remote: ICECredentials, remoteAddress: TransportAddress, now: ContinuousClock.Instant, consentTimeout: Duration = .seconds(30)) {
        self.local = local
        self.remote = remote
        self.remoteAddress = remoteAddress
        self.tieBreaker = UInt64.random(in: 1...UInt64.max)
        self.nextCheck = now
        self.lastSuccess = now
        self.consentTimeout = consentTimeout
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
        let id = STUNTransactionID.random()
        outstanding[id] = now
        // Forget checks that will never be answered.
        outstanding = outstanding.filter { now - $0.value < .seconds(10) }
        let request = STUNMessage(
            type: .bindingRequest, transactionID: id,
            attributes: [
                .username("\(remote.ufrag):\(local.ufrag)"), .priority(1_845_501_695), .iceControlling(tieBreaker), .useCandidate,
            ])
        return [.send(request.serialize(integrityKey: STUNIntegrity.shortTermKey(password: remote.pwd), fingerprint: true), to: remoteAddress)]
    }

    /// A STUN message from the server: a response to one of our checks, or something to ignore.
    public mutating func receive(_ message: STUNMessage, datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> [Action] {
        guard !failed, message.type == .bindingSuccessResponse, source == remoteAddress,
            let sent = outstanding.removeValue(forKey: message.transactionID),
            case .valid? = try? STUNIntegrity.verifyMessageIntegrity(of: datagram, key: STUNIntegrity.shortTermKey(password: remote.pwd))
        else { return [] }
        lastSuccess = now
        roundTripTime = now - sent
        guard !isConnected else { return [] }
        isConnected = true
        nextCheck = now + Self.consentInterval
        return [.connected(remoteAddress)]
    }
}
