import LiveRoomSecureTransport
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomTransport

/// A client and a server transport wired back to back in memory.
struct TransportPair {
    let server: PeerTransport
    let client: PeerTransport
    let serverAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7882)
    let clientAddress = TransportAddress(address: IPAddress("127.0.0.1")!, port: 50_123)

    init(now: ContinuousClock.Instant) throws {
        let certificate = try DTLSCertificate()
        let clientCertificate = try DTLSCertificate()
        let serverICE = ICECredentials.random()
        let clientICE = ICECredentials.random()
        let serverDescription = TransportDescription(
            iceUfrag: serverICE.ufrag, icePwd: serverICE.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .passive, iceLite: true)
        let clientDescription = TransportDescription(
            iceUfrag: clientICE.ufrag, icePwd: clientICE.pwd, fingerprint: PeerTransport.sdpFingerprint(of: clientCertificate), setup: .active)
        server = try PeerTransport(
            ice: .lite(ICELiteAgent(local: serverICE, remoteUfrag: clientICE.ufrag, now: now)), certificate: certificate,
            localDescription: serverDescription, remoteDescription: clientDescription)
        client = try PeerTransport(
            ice: .controlling(ICEControllingAgent(local: clientICE, remote: serverICE, remoteAddress: serverAddress, now: now)),
            certificate: clientCertificate, localDescription: clientDescription, remoteDescription: serverDescription)
    }

    /// Delivers events' datagrams back and forth until quiet; returns what each side saw.
    func pump(_ initial: [PeerTransport.Event], from sender: PeerTransport, now: ContinuousClock.Instant) -> (server: [PeerTransport.Event], client: [PeerTransport.Event]) {
        var queue: [(PeerTransport, PeerTransport.Event)] = initial.map { (sender, $0) }
        var seen: (server: [PeerTransport.Event], client: [PeerTransport.Event]) = ([], [])
        var rounds = 0
        while !queue.isEmpty, rounds < 1000 {
            rounds += 1
            let (from, event) = queue.removeFirst()
            if from === server { seen.server.append(event) } else { seen.client.append(event) }
            guard case .send(let bytes, _) = event else { continue }
            let to = from === server ? client : server
            let source = from === server ? serverAddress : clientAddress
            queue += to.receive(bytes, from: source, now: now).map { (to, $0) }
        }
        return seen
    }
}

@Suite struct PeerTransportTests {
    @Test func connectsAndCarriesSRTP() throws {
        let now = ContinuousClock.now
        let pair = try TransportPair(now: now)
        let seen = pair.pump(pair.client.start(now: now), from: pair.client, now: now)
        #expect(pair.client.isConnected)
        #expect(pair.server.isConnected)
        #expect(pair.server.remoteAddress == pair.clientAddress)
        #expect(pair.client.roundTripTime == .zero, "ICE checks measure the RTT (no time passes in memory)")
        #expect(pair.server.roundTripTime == nil)
        #expect(seen.server.contains { if case .connected = $0 { true } else { false } })

        // RTP both ways.
        let rtp: [UInt8] = [0x80, 96, 0x12, 0x34, 0, 0, 0x10, 0, 0xCA, 0xFE, 0xBA, 0xBE] + Array(repeating: 0x55, count: 100)
        var outgoing = rtp
        let protected = try #require(pair.client.protectRTP(&outgoing))
        #expect(Array(buffer: protected) != rtp)
        let received = pair.server.receive(protected, from: pair.clientAddress, now: now)
        guard case .rtp(let plain)? = received.first else {
            Issue.record("no RTP: \(received)")
            return
        }
        #expect(plain == rtp)
        // A replay is dropped and counted; so is a tampered packet.
        #expect(pair.server.receive(protected, from: pair.clientAddress, now: now).isEmpty)
        #expect(pair.server.drops.srtpReplay == 1)
        var tampered = rtp
        tampered[3] = 0x35
        var bytes = Array(buffer: try #require(pair.client.protectRTP(&tampered)))
        bytes[20] ^= 0xFF
        #expect(pair.server.receive(ByteBuffer(bytes: bytes), from: pair.clientAddress, now: now).isEmpty)
        #expect(pair.server.drops.srtpAuth == 1)

        // RTCP from the server to the client.
        let pli: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 1, 0xCA, 0xFE, 0xBA, 0xBE]
        let protectedRTCP = try #require(pair.server.protectRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 0xCAFE_BABE))]))
        #expect(protectedRTCP.to == pair.clientAddress)
        guard case .rtcp(let plainRTCP)? = pair.client.receive(protectedRTCP.datagram, from: pair.serverAddress, now: now).first else {
            Issue.record("no RTCP")
            return
        }
        #expect(plainRTCP == pli)
    }

    @Test func mediaFromAnotherAddressIsIgnored() throws {
        let now = ContinuousClock.now
        let pair = try TransportPair(now: now)
        _ = pair.pump(pair.client.start(now: now), from: pair.client, now: now)
        var rtp: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7, 1, 2, 3]
        let protected = try #require(pair.client.protectRTP(&rtp))
        let stranger = TransportAddress(address: IPAddress("127.0.0.9")!, port: 1)
        #expect(pair.server.receive(protected, from: stranger, now: now).isEmpty)
    }

    @Test func serverClosesWhenConsentExpires() throws {
        let now = ContinuousClock.now
        let pair = try TransportPair(now: now)
        _ = pair.pump(pair.client.start(now: now), from: pair.client, now: now)
        let later = pair.server.handleTimers(now: now.advanced(by: .seconds(31)))
        guard case .closed(let reason)? = later.last else {
            Issue.record("no close: \(later)")
            return
        }
        #expect(reason.contains("consent"))
        #expect(pair.server.isClosed)
    }

    /// Checks unanswered for a while mean the path is gone only if no media came either: on a
    /// lossy path two checks in a row can be lost while media still flows.
    @Test func aPathThatStillCarriesMediaIsNotCalledGone() throws {
        let now = ContinuousClock.now
        let pair = try TransportPair(now: now)
        _ = pair.pump(pair.client.start(now: now), from: pair.client, now: now)
        #expect(pair.client.checksUnanswered(for: .seconds(6), now: now + .seconds(7)), "no answer and no media")
        let rtcp = try #require(pair.server.protectRTCP([.pictureLossIndication(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 2))]))
        #expect(!pair.client.receive(rtcp.datagram, from: pair.serverAddress, now: now + .seconds(5)).isEmpty)
        #expect(!pair.client.checksUnanswered(for: .seconds(6), now: now + .seconds(7)), "media came 2 s ago")
        #expect(pair.client.checksUnanswered(for: .seconds(6), now: now + .seconds(11)), "and then stopped too")
    }

    @Test func clientGivesUpWithoutAnswers() throws {
        let now = ContinuousClock.now
        let pair = try TransportPair(now: now)
        _ = pair.client.start(now: now)
        let events = pair.client.handleTimers(now: now.advanced(by: .seconds(30)))
        guard case .closed? = events.last else {
            Issue.record("client did not give up: \(events)")
            return
        }
    }
}

@Suite struct ICERestartTests {
    /// After an ICE restart the client reaches the server on another path (here its ICE-TCP
    /// connection): checks with the new credentials select it, DTLS is not done again, and SRTP
    /// goes on with the same keys. Checks with the old credentials are refused.
    @Test func restartMovesMediaToTheNewPathKeepingDTLSAndSRTP() throws {
        let now = ContinuousClock.now
        let pair = try TransportPair(now: now)
        _ = pair.pump(pair.client.start(now: now), from: pair.client, now: now)
        #expect(pair.client.isConnected && pair.server.isConnected)
        let oldLocal = pair.server.iceCredentials.local

        let serverTCP = TransportAddress(address: IPAddress("127.0.0.1")!, port: 7881, transport: .tcp)
        let clientTCP = TransportAddress(address: IPAddress("127.0.0.1")!, port: 50_999, transport: .tcp)
        let serverICE = ICECredentials.random()
        let clientICE = ICECredentials.random()
        _ = pair.server.restartICE(.lite(ICELiteAgent(local: serverICE, remoteUfrag: clientICE.ufrag, now: now)), local: serverICE, remote: clientICE, now: now)
        #expect(pair.server.iceCredentials.local == serverICE)
        #expect(pair.server.remoteAddress == pair.clientAddress, "media keeps its path until a new one is chosen")

        let agent = ICEControllingAgent(local: clientICE, remote: serverICE, remoteAddresses: [serverTCP], now: now)
        let checks = pair.client.restartICE(.controlling(agent), local: clientICE, remote: serverICE, now: now)
        guard case .send(let check, to: serverTCP)? = checks.first else {
            Issue.record("no check on the new path: \(checks)")
            return
        }
        let answered = pair.server.receive(check, from: clientTCP, now: now)
        #expect(answered.contains { if case .selected(clientTCP) = $0 { true } else { false } })
        #expect(!answered.contains { if case .connected = $0 { true } else { false } }, "DTLS is not done again")
        #expect(pair.server.remoteAddress == clientTCP)
        guard case .send(let response, to: clientTCP)? = answered.first else {
            Issue.record("no answer: \(answered)")
            return
        }
        let heard = pair.client.receive(response, from: serverTCP, now: now)
        #expect(heard.contains { if case .selected(serverTCP) = $0 { true } else { false } })
        #expect(pair.client.remoteAddress == serverTCP)

        // SRTP carries on with the same keys over the new path.
        var rtp: [UInt8] = [0x80, 96, 0, 9, 0, 0, 0, 1, 0, 0, 0, 7, 1, 2, 3]
        let plain = rtp
        let protected = try #require(pair.client.protectRTP(&rtp))
        guard case .rtp(let decrypted)? = pair.server.receive(protected, from: clientTCP, now: now).first else {
            Issue.record("no RTP on the new path")
            return
        }
        #expect(decrypted == plain)

        // A check with the credentials from before the restart is refused.
        let stale = STUNMessage(
            type: .bindingRequest, transactionID: .random(),
            attributes: [.username("\(oldLocal.ufrag):\(pair.client.iceCredentials.local.ufrag)"), .iceControlling(1), .useCandidate])
            .serialize(integrityKey: STUNIntegrity.shortTermKey(password: oldLocal.pwd), fingerprint: true)
        #expect(pair.server.receive(stale, from: pair.clientAddress, now: now).isEmpty)
        #expect(pair.server.remoteAddress == clientTCP)
    }
}
