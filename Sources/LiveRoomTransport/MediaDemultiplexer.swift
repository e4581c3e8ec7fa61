import LiveRoomWire
import NIOCore

/// Routes datagrams arriving on the one media port to peer connections (RFC 7983): STUN by
/// the ufrag in its USERNAME, everything else by the source address a valid check bound.
public struct MediaDemultiplexer<PeerID: Hashable & Sendable>: Sendable {
    public enum Route: Sendable {
        case stun(PeerID, STUNMessage)
        case dtls(PeerID)
        case rtp(PeerID)
        case rtcp(PeerID)
        /// Not for any known peer, or not a kind we accept; counted and dropped.
        case drop(DropReason)
    }

    public enum DropReason: String, Sendable, Hashable, CaseIterable {
        case malformedSTUN
        case unknownUfrag
        case unknownAddress
        case unknownKind
        case notARequest
        /// A binding indication (RFC 7675 keepalive): harmless, not counted as a drop.
        case keepalive
    }

    private var byUfrag: [String: PeerID] = [:]
    private var byAddress: [TransportAddress: PeerID] = [:]
    /// Each peer's bound addresses, the oldest first.
    private var addressesOf: [PeerID: [TransportAddress]] = [:]

    public init() {}

    /// A peer connection whose local ufrag is `ufrag`.
    public mutating func register(ufrag: String, peer: PeerID) {
        byUfrag[ufrag] = peer
    }

    /// The most addresses one peer's media is accepted from at once (a path change, an ICE
    /// restart, a client's several interfaces).
    public static var maximumAddressesPerPeer: Int { 8 }

    /// A valid check from `address` for `peer`: its media is accepted from there. Returns the
    /// addresses of the peer forgotten to keep it under ``maximumAddressesPerPeer``.
    @discardableResult
    public mutating func bind(_ address: TransportAddress, to peer: PeerID) -> [TransportAddress] {
        if let previous = byAddress[address], previous != peer {
            addressesOf[previous]?.removeAll { $0 == address }
        }
        byAddress[address] = peer
        var addresses = addressesOf[peer, default: []]
        addresses.removeAll { $0 == address }
        addresses.append(address)
        let forgotten = Array(addresses.dropLast(Self.maximumAddressesPerPeer))
        addresses.removeFirst(forgotten.count)
        for old in forgotten { byAddress[old] = nil }
        addressesOf[peer] = addresses
        return forgotten
    }

    /// Forgets an old ufrag (after an ICE restart gave its peer a new one).
    public mutating func unregister(ufrag: String) {
        byUfrag[ufrag] = nil
    }

    /// The peer whose media comes from `address`, if a valid check bound one.
    public func peer(at address: TransportAddress) -> PeerID? {
        byAddress[address]
    }

    /// Forgets a peer connection; returns the addresses that led to it.
    @discardableResult
    public mutating func unregister(_ peer: PeerID) -> [TransportAddress] {
        byUfrag = byUfrag.filter { $0.value != peer }
        var released: [TransportAddress] = []
        for address in addressesOf.removeValue(forKey: peer) ?? [] where byAddress[address] == peer {
            byAddress[address] = nil
            released.append(address)
        }
        return released
    }

    public func route(_ datagram: ByteBuffer, from source: TransportAddress) -> Route {
        switch DatagramKind(datagram: datagram) {
        case .stun:
            guard let message = try? STUNMessage.parse(datagram) else { return .drop(.malformedSTUN) }
            // An ICE-lite agent sends no checks, so only requests are expected; indications
            // (keepalives) and stray responses are dropped.
            if message.type == .bindingIndication { return .drop(.keepalive) }
            guard message.type == .bindingRequest else { return .drop(.notARequest) }
            guard let username = message.username, let colon = username.firstIndex(of: ":"),
                let peer = byUfrag[String(username[..<colon])]
            else { return .drop(.unknownUfrag) }
            return .stun(peer, message)
        case .dtls:
            return byAddress[source].map { .dtls($0) } ?? .drop(.unknownAddress)
        case .rtp:
            return byAddress[source].map { .rtp($0) } ?? .drop(.unknownAddress)
        case .rtcp:
            return byAddress[source].map { .rtcp($0) } ?? .drop(.unknownAddress)
        case .unknown:
            return .drop(.unknownKind)
        }
    }
}
