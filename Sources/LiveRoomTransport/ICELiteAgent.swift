import LiveRoomWire
import NIOCore

/// The server side of ICE for one peer connection, as an ICE-lite agent (RFC 8445 §2.5):
/// it answers connectivity checks, takes the address of the controlling agent's nominated
/// pair, and tracks consent freshness (RFC 7675).
///
/// A pure state machine: it gets parsed binding requests with their source address and
/// returns what to send and what changed.
public struct ICELiteAgent: Sendable {
    public enum Action: Sendable, Hashable {
        /// Send these bytes to this address.
        case send(ByteBuffer, to: TransportAddress)
        /// Media for this peer now goes to (and is accepted from) this address.
        case selected(TransportAddress)
    }

    public enum CheckError: Error, Sendable, Hashable {
        /// USERNAME is missing or does not name this agent's ufrag (and the peer's).
        case wrongUsername(String)
        /// MESSAGE-INTEGRITY is missing or does not verify with our password.
        case badIntegrity
        /// FINGERPRINT is present and wrong.
        case badFingerprint
        /// The peer also claims to be controlled; an ICE-lite agent is always controlled.
        case roleConflict
    }

    public let local: ICECredentials
    /// The peer's ufrag from its SDP, if known (WHIP offers carry it; checks must then match it).
    public var remoteUfrag: String?
    public private(set) var selectedAddress: TransportAddress?
    private var consent: ConsentTracker

    public init(local: ICECredentials, remoteUfrag: String?, now: ContinuousClock.Instant, consentTimeout: Duration = .seconds(30)) {
        self.local = local
        self.remoteUfrag = remoteUfrag
        self.consent = ConsentTracker(timeout: consentTimeout, now: now)
    }

    /// Handles a binding request `message` (whose bytes are `datagram`) from `source`.
    public mutating func receiveBindingRequest(
        _ message: STUNMessage, datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant
    ) throws(CheckError) -> [Action] {
        guard let username = message.username else { throw .wrongUsername("no USERNAME") }
        let parts = username.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == local.ufrag else { throw .wrongUsername(username) }
        if let remoteUfrag, parts[1] != remoteUfrag { throw .wrongUsername(username) }
        switch try? STUNIntegrity.verifyMessageIntegrity(of: datagram, key: STUNIntegrity.shortTermKey(password: local.pwd)) {
        case .valid?: break
        default: throw .badIntegrity
        }
        if case .mismatch? = try? STUNIntegrity.verifyFingerprint(of: datagram) { throw .badFingerprint }
        if message.iceControlled != nil { throw .roleConflict }

        var actions: [Action] = [
            .send(STUNMessage.makeBindingSuccessResponse(to: message, mappedAddress: source, password: local.pwd), to: source)
        ]
        consent.refreshed(now: now)
        // Controlling agents nominate with USE-CANDIDATE; until one does, the first valid
        // check's address serves, so media can flow as soon as possible.
        if selectedAddress == nil || (message.useCandidate && selectedAddress != source) {
            selectedAddress = source
            actions.append(.selected(source))
        }
        return actions
    }

    /// Whether the peer has been silent (no valid check) for the consent timeout.
    public func consentExpired(now: ContinuousClock.Instant) -> Bool {
        consent.isExpired(now: now)
    }

    public var consentDeadline: ContinuousClock.Instant { consent.deadline }

    /// How long the peer may stay silent before consent runs out.
    public var consentTimeout: Duration { consent.timeout }
}
