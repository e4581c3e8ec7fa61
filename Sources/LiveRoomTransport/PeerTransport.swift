import LiveRoomSecureTransport
import LiveRoomWire
import NIOCore

/// One WebRTC transport (RFC 8829's "transport"): ICE, then DTLS, then SRTP, on one 5-tuple
/// with BUNDLE and rtcp-mux. The server runs it as ICE-lite and DTLS passive; the client as
/// a controlling ICE agent and DTLS active. Confined to one event loop; not Sendable.
///
/// It decides, the owner does the I/O: every call returns ``Event``s to carry out.
public final class PeerTransport {
    public enum Event {
        /// Write this datagram to this address.
        case send(ByteBuffer, to: TransportAddress)
        /// The remote address was (re)selected; media from it belongs to this transport.
        case selected(TransportAddress)
        /// DTLS completed: SRTP is ready in both directions.
        case connected
        /// Decrypted RTP from the peer.
        case rtp([UInt8])
        /// Decrypted RTCP (a compound packet) from the peer.
        case rtcp([UInt8])
        /// The transport failed or closed; it ignores everything after this.
        case closed(reason: String)
    }

    public enum ICE {
        case lite(ICELiteAgent)
        case controlling(ICEControllingAgent)
    }

    /// The reason of a ``Event/closed(reason:)`` when the peer ended the connection itself.
    public static let peerClosedReason = "the peer closed DTLS"

    /// Counts of what was dropped, by reason, for metrics and tests.
    public struct Drops: Sendable, Hashable {
        public var srtpAuth = 0
        public var srtpReplay = 0
        public var srtpOther = 0
        public var beforeConnected = 0
        public var badSTUN = 0
    }

    public private(set) var localDescription: TransportDescription
    public private(set) var remoteDescription: TransportDescription
    private var ice: ICE
    private let dtls: DTLSTransport
    private var srtpIn: SRTPSession?
    private var srtpOut: SRTPSession?
    public private(set) var remoteAddress: TransportAddress?
    public private(set) var isConnected = false
    public private(set) var isClosed = false
    public private(set) var drops = Drops()
    /// When the transport must be connected (ICE and DTLS done) by, or it closes itself.
    private let connectDeadline: ContinuousClock.Instant?

    /// - Parameter connectDeadline: when ICE and DTLS must be done by; a transport still not
    ///   connected then closes itself (a peer that never comes must not hold its seat).
    public init(
        ice: ICE, certificate: DTLSCertificate, localDescription: TransportDescription, remoteDescription: TransportDescription,
        connectDeadline: ContinuousClock.Instant? = nil
    ) throws(NegotiationError) {
        guard let fingerprint = DTLSFingerprint(sdpValue: "\(remoteDescription.fingerprint.hashFunction) \(remoteDescription.fingerprint.hexString)") else {
            throw NegotiationError("unsupported DTLS fingerprint algorithm \(remoteDescription.fingerprint.hashFunction)")
        }
        let role: DTLSRole
        switch localDescription.setup {
        case .active: role = .client
        case .passive: role = .server
        case .actpass, .holdconn: throw NegotiationError("the local DTLS role must be active or passive")
        }
        do {
            dtls = try DTLSTransport(certificate: certificate, role: role, remoteFingerprint: fingerprint)
        } catch {
            throw NegotiationError("cannot set up DTLS: \(error)")
        }
        self.ice = ice
        self.connectDeadline = connectDeadline
        self.localDescription = localDescription
        self.remoteDescription = remoteDescription
    }

    /// The SDP fingerprint of a certificate.
    public static func sdpFingerprint(of certificate: DTLSCertificate) -> SDPFingerprint {
        SDPFingerprint(hashFunction: certificate.fingerprint.algorithm.rawValue, bytes: certificate.fingerprint.bytes)
    }

    /// The round-trip time to the server measured by ICE checks (controlling side only).
    public var roundTripTime: Duration? {
        if case .controlling(let agent) = ice { return agent.roundTripTime }
        return nil
    }

    /// The earliest time ``handleTimers(now:)`` has work.
    public var nextTimeout: ContinuousClock.Instant? {
        guard !isClosed else { return nil }
        let iceTimeout: ContinuousClock.Instant?
        switch ice {
        case .lite(let agent): iceTimeout = consentDeadline(of: agent)
        case .controlling(let agent): iceTimeout = agent.nextTimeout
        }
        return [iceTimeout, dtls.nextTimeout, isConnected ? nil : connectDeadline].compactMap { $0 }.min()
    }

    /// When an ICE-lite peer's consent runs out: the consent timeout after its last valid check
    /// or its last media that decrypted, whichever is later. Media counts because libnice
    /// (GStreamer's webrtcbin) keeps a session with binding indications every 25 s, which carry
    /// no integrity, instead of RFC 7675's checks, and its sessions ended after 30 s.
    private func consentDeadline(of agent: ICELiteAgent) -> ContinuousClock.Instant {
        max(agent.consentDeadline, lastMediaReceived.map { $0 + agent.consentTimeout } ?? agent.consentDeadline)
    }

    /// Runs ICE checks, DTLS retransmissions and consent expiry.
    public func handleTimers(now: ContinuousClock.Instant) -> [Event] {
        guard !isClosed else { return [] }
        var events: [Event] = []
        if !isConnected, let deadline = connectDeadline, now >= deadline {
            return close(reason: "not connected in time: ICE and DTLS were not done by the deadline")
        }
        switch ice {
        case .lite(let agent):
            if now >= consentDeadline(of: agent) { return close(reason: "ICE consent expired: no check and no media for \(agent.consentTimeout)") }
        case .controlling(var agent):
            let actions = agent.tick(now: now)
            ice = .controlling(agent)
            for action in actions {
                switch action {
                case .send(let bytes, let to): events.append(.send(bytes, to: to))
                case .connected: break
                case .failed(let reason): return events + close(reason: reason)
                }
            }
        }
        if let timeout = dtls.nextTimeout, now >= timeout {
            events += handle(dtls.handleTimeout(now: now))
        }
        return events
    }

    /// One datagram from the peer's socket, classified here (RFC 7983).
    public func receive(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> [Event] {
        guard !isClosed else { return [] }
        switch DatagramKind(datagram: datagram) {
        case .stun:
            guard let message = try? STUNMessage.parse(datagram) else {
                drops.badSTUN += 1
                return []
            }
            return receive(stun: message, datagram: datagram, from: source, now: now)
        case .dtls:
            return receive(dtls: datagram, from: source, now: now)
        case .rtp:
            return noteMedia(receive(rtp: datagram, from: source), now: now)
        case .rtcp:
            return receive(rtcp: datagram, from: source, now: now)
        case .unknown:
            return []
        }
    }

    /// When SRTP or SRTCP from the peer last decrypted (it holds the session's keys and sends
    /// from the selected address): the client's ICE restart and the server's consent use it.
    public private(set) var lastMediaReceived: ContinuousClock.Instant?

    private func noteMedia(_ events: [Event], now: ContinuousClock.Instant) -> [Event] {
        if !events.isEmpty { lastMediaReceived = now }
        return events
    }

    /// A DTLS record the media port classified and routed here.
    public func receive(dtls datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> [Event] {
        guard !isClosed, source == remoteAddress else { return [] }
        return handle(dtls.receive(datagram: Array(buffer: datagram), now: now))
    }

    /// An SRTP packet the media port classified and routed here.
    public func receive(rtp datagram: ByteBuffer, from source: TransportAddress) -> [Event] {
        guard !isClosed else { return [] }
        return unprotect(datagram, from: source, rtcp: false).map { [.rtp($0)] } ?? []
    }

    /// An SRTCP packet the media port classified and routed here.
    public func receive(rtcp datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> [Event] {
        guard !isClosed else { return [] }
        return noteMedia(unprotect(datagram, from: source, rtcp: true).map { [.rtcp($0)] } ?? [], now: now)
    }

    /// An SRTP packet the media port classified and routed here, decrypted in place: the RTP
    /// packet, in the datagram's own storage (copied once only when something else holds it),
    /// or nil (counted). The SFU's way, with no event and no array per packet.
    public func unprotectRTP(_ datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> ByteBuffer? {
        guard !isClosed, let (srtpIn, ssrc) = admit(datagram, from: source, rtcp: false) else { return nil }
        var packet = datagram
        let length = packet.readableBytes
        do {
            let plain = try packet.withUnsafeMutableReadableBytes { bytes throws(SRTPError) in try srtpIn.unprotectRTP(bytes, length: length) }
            packet.moveWriterIndex(to: packet.readerIndex + plain)
        } catch {
            count(error)
            return nil
        }
        inboundSSRCs.insert(ssrc)
        lastMediaReceived = now
        return packet
    }

    /// Decrypts SRTP or SRTCP from the selected address; nil (and counted) otherwise.
    private func unprotect(_ datagram: ByteBuffer, from source: TransportAddress, rtcp: Bool) -> [UInt8]? {
        guard let (srtpIn, ssrc) = admit(datagram, from: source, rtcp: rtcp) else { return nil }
        var bytes = Array(buffer: datagram)
        do {
            if rtcp { try srtpIn.unprotectRTCP(&bytes) } else { try srtpIn.unprotectRTP(&bytes) }
        } catch {
            count(error)
            return nil
        }
        inboundSSRCs.insert(ssrc)
        return bytes
    }

    /// The inbound SRTP session and the datagram's SSRC when the datagram may be decrypted:
    /// from the selected address, once connected, of an SSRC seen or within the allowance;
    /// nil (counted) otherwise.
    private func admit(_ datagram: ByteBuffer, from source: TransportAddress, rtcp: Bool) -> (SRTPSession, UInt32)? {
        guard source == remoteAddress, let srtpIn else {
            drops.beforeConnected += 1
            return nil
        }
        // libsrtp keeps a stream for every SSRC that authenticates, for good: a peer has a few.
        guard let ssrc = datagram.getInteger(at: datagram.readerIndex + (rtcp ? 4 : 8), as: UInt32.self),
            inboundSSRCs.contains(ssrc) || inboundSSRCs.count < Self.maximumInboundSSRCs
        else {
            drops.srtpOther += 1
            return nil
        }
        return (srtpIn, ssrc)
    }

    /// The most SSRCs a peer's SRTP and SRTCP may come from (audio, video, retransmission and
    /// simulcast streams fit many times over); packets of any other are dropped before decryption.
    public static let maximumInboundSSRCs = 16
    /// The SSRCs whose packets have authenticated.
    private var inboundSSRCs: Set<UInt32> = []

    /// Encrypts an RTP packet for the peer; nil until connected. `packet` gains the SRTP trailer.
    public func protectRTP(_ packet: inout [UInt8]) -> ByteBuffer? {
        guard let srtpOut, remoteAddress != nil, (try? srtpOut.protectRTP(&packet)) != nil else { return nil }
        return ByteBuffer(bytes: packet)
    }

    /// Encrypts the RTP packet that is `buffer`'s readable bytes in place, appending the SRTP
    /// trailer: no copy. False (buffer unusable) until connected or when SRTP refuses it.
    public func protectRTP(_ buffer: inout ByteBuffer) -> Bool {
        guard let srtpOut, remoteAddress != nil else { return false }
        let length = buffer.readableBytes
        buffer.writeRepeatingByte(0, count: SRTPSession.maximumTrailerLength)
        guard let protected = try? buffer.withUnsafeMutableReadableBytes({ bytes throws(SRTPError) in try srtpOut.protectRTP(bytes, length: length) })
        else { return false }
        buffer.moveWriterIndex(to: buffer.readerIndex + protected)
        return true
    }

    /// Encrypts the RTP packet in the first `length` bytes of `buffer` in place, appending the
    /// SRTP trailer (`buffer` has room for ``SRTPSession/maximumTrailerLength`` more): the
    /// datagram's length; nil until connected or when SRTP refuses it.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) -> Int? {
        guard let srtpOut, remoteAddress != nil else { return nil }
        return try? srtpOut.protectRTP(buffer, length: length)
    }

    /// Builds one compound RTCP packet of `packets` (RFC 3550 §6.1) and encrypts it for the
    /// peer: the datagram and where it goes; nil until connected. The SFU and the client
    /// send all their RTCP through here.
    public func protectRTCP(_ packets: [RTCPPacket]) -> (datagram: ByteBuffer, to: TransportAddress)? {
        guard let srtpOut, let remoteAddress, let compound = try? RTCPPacket.serializeCompound(packets) else { return nil }
        var bytes = Array(buffer: compound)
        guard (try? srtpOut.protectRTCP(&bytes)) != nil else { return nil }
        return (ByteBuffer(bytes: bytes), remoteAddress)
    }

    /// Restarts ICE (RFC 8445 section 9) with a new agent holding new credentials on both
    /// sides: checks start again, and the path that answers (perhaps another network, or TCP
    /// instead of UDP) takes over, while DTLS and SRTP carry on. Until a new path is chosen,
    /// media keeps going where it went.
    public func restartICE(_ agent: ICE, local: ICECredentials, remote: ICECredentials, now: ContinuousClock.Instant) -> [Event] {
        guard !isClosed else { return [] }
        ice = agent
        localDescription.iceUfrag = local.ufrag
        localDescription.icePwd = local.pwd
        remoteDescription.iceUfrag = remote.ufrag
        remoteDescription.icePwd = remote.pwd
        return handleTimers(now: now)
    }

    /// The current ICE credentials of each side.
    public var iceCredentials: (local: ICECredentials, remote: ICECredentials) {
        (ICECredentials(ufrag: localDescription.iceUfrag, pwd: localDescription.icePwd),
         ICECredentials(ufrag: remoteDescription.iceUfrag, pwd: remoteDescription.icePwd))
    }

    /// Whether the controlling agent has had no answer to its checks, and no media from the
    /// peer, for `interval`: the path is gone (a network change, UDP blocked) and an ICE restart
    /// may find another. On a lossy path checks go unanswered now and then while media still
    /// flows; that path is kept.
    public func checksUnanswered(for interval: Duration, now: ContinuousClock.Instant) -> Bool {
        guard case .controlling(let agent) = ice else { return false }
        return now - agent.lastAnswer >= interval && lastMediaReceived.map { now - $0 >= interval } ?? true
    }

    /// Starts the transport: the client sends its first check.
    public func start(now: ContinuousClock.Instant) -> [Event] {
        handleTimers(now: now)
    }

    /// Closes: sends close_notify if DTLS is up.
    public func close(reason: String) -> [Event] {
        guard !isClosed else { return [] }
        var events: [Event] = []
        if let remoteAddress {
            for case .send(let bytes) in dtls.close() { events.append(.send(ByteBuffer(bytes: bytes), to: remoteAddress)) }
        }
        isClosed = true
        events.append(.closed(reason: reason))
        return events
    }

    /// A STUN message (already parsed) from the peer: ICE checks and responses.
    public func receive(stun message: STUNMessage, datagram: ByteBuffer, from source: TransportAddress, now: ContinuousClock.Instant) -> [Event] {
        guard !isClosed else { return [] }
        var events: [Event] = []
        switch ice {
        case .lite(var agent):
            let actions: [ICELiteAgent.Action]
            do {
                actions = try agent.receiveBindingRequest(message, datagram: datagram, from: source, now: now)
            } catch {
                drops.badSTUN += 1
                return []
            }
            ice = .lite(agent)
            for action in actions {
                switch action {
                case .send(let bytes, let to): events.append(.send(bytes, to: to))
                case .selected(let address): events += select(address, now: now)
                }
            }
        case .controlling(var agent):
            let actions = agent.receive(message, datagram: datagram, from: source, now: now)
            ice = .controlling(agent)
            for action in actions {
                switch action {
                case .send(let bytes, let to): events.append(.send(bytes, to: to))
                case .connected(let address): events += select(address, now: now)
                case .failed(let reason): return events + close(reason: reason)
                }
            }
        }
        return events
    }

    private func select(_ address: TransportAddress, now: ContinuousClock.Instant) -> [Event] {
        let first = remoteAddress == nil
        remoteAddress = address
        var events: [Event] = [.selected(address)]
        if first { events += handle(dtls.start(now: now)) }
        return events
    }

    private func handle(_ outputs: [DTLSTransport.Output]) -> [Event] {
        var events: [Event] = []
        for output in outputs {
            switch output {
            case .send(let bytes):
                if let remoteAddress { events.append(.send(ByteBuffer(bytes: bytes), to: remoteAddress)) }
            case .connected(let keys):
                do {
                    srtpIn = try SRTPSession(keyingMaterial: keys, direction: .inbound)
                    srtpOut = try SRTPSession(keyingMaterial: keys, direction: .outbound)
                } catch {
                    return events + close(reason: "cannot create SRTP sessions: \(error)")
                }
                isConnected = true
                events.append(.connected)
            case .failed(let error):
                return events + close(reason: "DTLS failed: \(error)")
            case .closed:
                isClosed = true
                events.append(.closed(reason: Self.peerClosedReason))
            }
        }
        return events
    }

    private func count(_ error: SRTPError) {
        switch error.code {
        case .authFail: drops.srtpAuth += 1
        case .replayFail, .replayOld: drops.srtpReplay += 1
        default: drops.srtpOther += 1
        }
    }
}
