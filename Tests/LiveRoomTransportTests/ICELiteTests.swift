import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomTransport

/// A binding request as a controlling full agent (the client) sends it.
func bindingRequest(
    username: String, password: String, useCandidate: Bool = false, controlled: Bool = false, fingerprint: Bool = true
) -> (STUNMessage, ByteBuffer) {
    var attributes: [STUNAttribute] = [.username(username), .priority(1_853_824_767)]
    attributes.append(controlled ? .iceControlled(42) : .iceControlling(42))
    if useCandidate { attributes.append(.useCandidate) }
    let message = STUNMessage(type: .bindingRequest, transactionID: STUNTransactionID.random(), attributes: attributes)
    let bytes = message.serialize(integrityKey: STUNIntegrity.shortTermKey(password: password), fingerprint: fingerprint)
    return (try! STUNMessage.parse(bytes), bytes)
}

@Suite struct ICELiteAgentTests {
    let t0 = ContinuousClock.now
    let local = ICECredentials(ufrag: "srvUfrag", pwd: "serverpasswordserverpass")
    let client = TransportAddress(address: IPAddress("127.0.0.1")!, port: 50_000)

    @Test func validCheckIsAnsweredAndSelectsTheAddress() throws {
        var agent = ICELiteAgent(local: local, remoteUfrag: "cli1", now: t0)
        let (request, bytes) = bindingRequest(username: "srvUfrag:cli1", password: local.pwd)
        let actions = try agent.receiveBindingRequest(request, datagram: bytes, from: client, now: t0)
        #expect(actions.count == 2)
        guard case .send(let response, let to) = actions[0] else {
            Issue.record("no response")
            return
        }
        #expect(to == client)
        let parsed = try STUNMessage.parse(response)
        #expect(parsed.type == .bindingSuccessResponse)
        #expect(parsed.transactionID == request.transactionID)
        #expect(parsed.xorMappedAddress == client)
        #expect(try STUNIntegrity.verifyMessageIntegrity(of: response, key: STUNIntegrity.shortTermKey(password: local.pwd)) == .valid)
        #expect(try STUNIntegrity.verifyFingerprint(of: response) == .valid)
        #expect(actions[1] == .selected(client))
        #expect(agent.selectedAddress == client)
    }

    @Test func nominationMovesTheSelectedAddress() throws {
        var agent = ICELiteAgent(local: local, remoteUfrag: nil, now: t0)
        let (r1, b1) = bindingRequest(username: "srvUfrag:x", password: local.pwd)
        _ = try agent.receiveBindingRequest(r1, datagram: b1, from: client, now: t0)
        let other = TransportAddress(address: IPAddress("127.0.0.2")!, port: 40_000)
        let (r2, b2) = bindingRequest(username: "srvUfrag:x", password: local.pwd)
        let plain = try agent.receiveBindingRequest(r2, datagram: b2, from: other, now: t0)
        #expect(plain.count == 1, "a check without USE-CANDIDATE does not move an existing selection")
        let (r3, b3) = bindingRequest(username: "srvUfrag:x", password: local.pwd, useCandidate: true)
        let nominated = try agent.receiveBindingRequest(r3, datagram: b3, from: other, now: t0)
        #expect(nominated.last == .selected(other))
    }

    @Test func badChecksAreRefused() {
        var agent = ICELiteAgent(local: local, remoteUfrag: "cli1", now: t0)
        func refused(_ pair: (STUNMessage, ByteBuffer)) -> ICELiteAgent.CheckError? {
            do {
                _ = try agent.receiveBindingRequest(pair.0, datagram: pair.1, from: client, now: t0)
                return nil
            } catch {
                return error
            }
        }
        #expect(refused(bindingRequest(username: "other:cli1", password: local.pwd)) == .wrongUsername("other:cli1"))
        #expect(refused(bindingRequest(username: "srvUfrag:intruder", password: local.pwd)) == .wrongUsername("srvUfrag:intruder"))
        #expect(refused(bindingRequest(username: "srvUfrag:cli1", password: "wrong-password")) == .badIntegrity)
        #expect(refused(bindingRequest(username: "srvUfrag:cli1", password: local.pwd, controlled: true)) == .roleConflict)
        var (message, bytes) = bindingRequest(username: "srvUfrag:cli1", password: local.pwd)
        bytes.setInteger(bytes.getInteger(at: bytes.writerIndex - 1, as: UInt8.self)! ^ 1, at: bytes.writerIndex - 1)
        message = try! STUNMessage.parse(bytes)
        #expect(refused((message, bytes)) == .badFingerprint)
        #expect(agent.selectedAddress == nil)
    }

    @Test func consentExpiresWithoutChecks() throws {
        var agent = ICELiteAgent(local: local, remoteUfrag: nil, now: t0)
        #expect(!agent.consentExpired(now: t0.advanced(by: .seconds(29))))
        let (r, b) = bindingRequest(username: "srvUfrag:c", password: local.pwd)
        _ = try agent.receiveBindingRequest(r, datagram: b, from: client, now: t0.advanced(by: .seconds(25)))
        #expect(!agent.consentExpired(now: t0.advanced(by: .seconds(54))))
        #expect(agent.consentExpired(now: t0.advanced(by: .seconds(55))))
    }

    @Test func randomCredentialsAreLongEnough() {
        let c = ICECredentials.random()
        #expect(c.ufrag.count == 8)
        #expect(c.pwd.count == 24)
        #expect(c != ICECredentials.random())
    }
}

@Suite struct MediaDemultiplexerTests {
    let a = TransportAddress(address: IPAddress("127.0.0.1")!, port: 1000)
    let b = TransportAddress(address: IPAddress("127.0.0.1")!, port: 2000)

    @Test func routesByUfragThenAddress() {
        var demux = MediaDemultiplexer<Int>()
        demux.register(ufrag: "peer1ufr", peer: 1)
        demux.register(ufrag: "peer2ufr", peer: 2)
        let (_, stun) = bindingRequest(username: "peer2ufr:x", password: "p")
        guard case .stun(2, _) = demux.route(stun, from: a) else {
            Issue.record("STUN not routed by ufrag")
            return
        }
        let rtp = ByteBuffer(bytes: [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 0xAA])
        guard case .drop(.unknownAddress) = demux.route(rtp, from: a) else {
            Issue.record("media from an unbound address must be dropped")
            return
        }
        demux.bind(a, to: 2)
        guard case .rtp(2) = demux.route(rtp, from: a) else {
            Issue.record("RTP not routed by address")
            return
        }
        let rtcp = ByteBuffer(bytes: [0x81, 201, 0, 1, 0, 0, 0, 9])
        guard case .rtcp(2) = demux.route(rtcp, from: a) else {
            Issue.record("RTCP not routed")
            return
        }
        let dtls = ByteBuffer(bytes: [22, 0xFE, 0xFD, 0, 0])
        guard case .dtls(2) = demux.route(dtls, from: a), case .drop(.unknownAddress) = demux.route(dtls, from: b) else {
            Issue.record("DTLS not routed")
            return
        }
        demux.unregister(2)
        guard case .drop(.unknownAddress) = demux.route(rtp, from: a), case .drop(.unknownUfrag) = demux.route(stun, from: a) else {
            Issue.record("unregistered peer still routed")
            return
        }
    }

    @Test func onePeerIsBoundToAtMostEightAddressesTheNewestKept() {
        var demux = MediaDemultiplexer<Int>()
        let rtp = ByteBuffer(bytes: [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 0xAA])
        var forgotten: [TransportAddress] = []
        for port in 1...20 {
            let address = TransportAddress(address: IPAddress("127.0.0.1")!, port: UInt16(3000 + port))
            forgotten += demux.bind(address, to: 7)
            guard case .rtp(7) = demux.route(rtp, from: address) else {
                Issue.record("the newest address \(address) is not routed")
                return
            }
        }
        #expect(forgotten.map(\.port) == (1...12).map { UInt16(3000 + $0) }, "the oldest go first")
        let routed = (1...20).filter { port in
            if case .rtp = demux.route(rtp, from: TransportAddress(address: IPAddress("127.0.0.1")!, port: UInt16(3000 + port))) { true } else { false }
        }
        #expect(routed == Array(13...20) && routed.count == MediaDemultiplexer<Int>.maximumAddressesPerPeer)
        // An address bound again is the newest: the next one forgotten is another.
        let oldest = TransportAddress(address: IPAddress("127.0.0.1")!, port: 3013)
        #expect(demux.bind(oldest, to: 7).isEmpty)
        #expect(demux.bind(TransportAddress(address: IPAddress("127.0.0.1")!, port: 3021), to: 7).map(\.port) == [3014])
    }

    @Test func garbageIsDroppedWithAReason() {
        let demux = MediaDemultiplexer<Int>()
        guard case .drop(.unknownKind) = demux.route(ByteBuffer(bytes: [0x50, 1, 2]), from: a),
            case .drop(.unknownKind) = demux.route(ByteBuffer(), from: a),
            case .drop(.malformedSTUN) = demux.route(ByteBuffer(bytes: [0, 1, 0, 8, 1, 2]), from: a)
        else {
            Issue.record("garbage not dropped as expected")
            return
        }
    }
}

@Suite struct ConsentTrackerTests {
    @Test func expiresAfterThirtySilentSeconds() {
        let t0 = ContinuousClock.now
        var c = ConsentTracker(now: t0)
        #expect(!c.isExpired(now: t0.advanced(by: .seconds(29))))
        c.refreshed(now: t0.advanced(by: .seconds(20)))
        #expect(!c.isExpired(now: t0.advanced(by: .seconds(49))))
        #expect(c.isExpired(now: t0.advanced(by: .seconds(50))))
        #expect(c.deadline == t0.advanced(by: .seconds(50)))
    }
}

/// The client's agent against a server with several candidates: every one is checked until one
/// answers, and that one carries media and consent.
@Suite struct ICEControllingAgentTests {
    let t0 = ContinuousClock.now
    let client = ICECredentials(ufrag: "cli1", pwd: "clientpasswordclientpass")
    let server = ICECredentials(ufrag: "srvUfrag", pwd: "serverpasswordserverpass")
    let unreachable = TransportAddress(address: IPAddress("10.9.9.9")!, port: 7882)
    let reachable = TransportAddress(address: IPAddress("192.0.2.10")!, port: 7882)

    @Test func checksEveryCandidateAndKeepsTheOneThatAnswers() throws {
        var agent = ICEControllingAgent(local: client, remote: server, remoteAddresses: [unreachable, reachable], now: t0)
        let checks = agent.tick(now: t0)
        let destinations = checks.compactMap { if case .send(_, let to) = $0 { to } else { nil } }
        #expect(destinations == [unreachable, reachable])

        // Only the second candidate's server answers.
        var lite = ICELiteAgent(local: server, remoteUfrag: "cli1", now: t0)
        guard case .send(let bytes, _) = checks[1] else {
            Issue.record("no check")
            return
        }
        let request = try STUNMessage.parse(bytes)
        let clientAddress = TransportAddress(address: IPAddress("198.51.100.5")!, port: 50_000)
        guard case .send(let response, _)? = try lite.receiveBindingRequest(request, datagram: bytes, from: clientAddress, now: t0).first else {
            Issue.record("the server did not answer")
            return
        }
        // An answer claiming to come from the other candidate does not count.
        #expect(agent.receive(try STUNMessage.parse(response), datagram: response, from: unreachable, now: t0).isEmpty)
        #expect(agent.receive(try STUNMessage.parse(response), datagram: response, from: reachable, now: t0) == [.connected(reachable)])
        #expect(agent.remoteAddress == reachable && agent.isConnected)

        // Consent checks go to the chosen candidate only.
        let later = t0 + ICEControllingAgent.consentInterval
        let consent = agent.tick(now: later).compactMap { if case .send(_, let to) = $0 { to } else { nil } }
        #expect(consent == [reachable])
    }

    @Test func atMostEightCandidatesAreChecked() {
        let many = (1...20).map { TransportAddress(address: .v4(0x0A00_0000 + UInt32($0)), port: 7882) }
        var agent = ICEControllingAgent(local: client, remote: server, remoteAddresses: many, now: t0)
        #expect(agent.tick(now: t0).count == ICEControllingAgent.maxRemoteAddresses)
    }

    @Test func tcpCandidatesWaitForUDPToStaySilent() {
        let tcp = TransportAddress(address: IPAddress("192.0.2.10")!, port: 7881, transport: .tcp)
        var agent = ICEControllingAgent(local: client, remote: server, remoteAddresses: [reachable, tcp], now: t0)
        func destinations(at time: ContinuousClock.Instant) -> [TransportAddress] {
            agent.tick(now: time).compactMap { if case .send(_, let to) = $0 { to } else { nil } }
        }
        #expect(destinations(at: t0) == [reachable], "UDP first")
        #expect(destinations(at: t0 + .milliseconds(500)) == [reachable])
        #expect(destinations(at: t0 + ICEControllingAgent.tcpDelay) == [reachable, tcp], "ICE-TCP once UDP had its second")

        // A server offering only ICE-TCP (or --ice-transport tcp) is checked at once.
        var tcpOnly = ICEControllingAgent(local: client, remote: server, remoteAddresses: [tcp], now: t0)
        #expect(tcpOnly.tick(now: t0).count == 1)
    }
}

