import Testing

@testable import LiveRoomSecureTransport

@Suite struct DTLSHandshakeTests {
    @Test func clientAndServerConnectWithMirroredKeys() throws {
        let link = try LoopbackLink()
        link.start()
        #expect(link.sentByClient > 0, "client sends its ClientHello on start")
        #expect(link.sentByServer == 0, "a passive server waits")
        #expect(link.pump(), "handshake did not settle")

        let clientKeys = try #require(link.clientKeys, "client events: \(link.clientEvents)")
        let serverKeys = try #require(link.serverKeys, "server events: \(link.serverEvents)")
        #expect(link.clientEvents.count == 1 && link.serverEvents.count == 1)
        #expect(link.client.state == .connected && link.server.state == .connected)
        #expect(link.client.keyingMaterial == clientKeys)

        #expect(clientKeys.profile == .aeadAES128GCM, "GCM is offered first")
        #expect(serverKeys.profile == clientKeys.profile)
        #expect(clientKeys.role == .client && serverKeys.role == .server)
        #expect(clientKeys.localKey == serverKeys.remoteKey)
        #expect(clientKeys.localSalt == serverKeys.remoteSalt)
        #expect(clientKeys.remoteKey == serverKeys.localKey)
        #expect(clientKeys.remoteSalt == serverKeys.localSalt)
        #expect(clientKeys.localKey != clientKeys.remoteKey)
        #expect(clientKeys.localKey.count == 16 && clientKeys.localSalt.count == 12)
        #expect(clientKeys.localKey.contains { $0 != 0 })

        #expect(link.largestDatagram <= 1200)
        #expect(link.client.nextTimeout == nil || link.server.nextTimeout == nil)

        let serverCertificate = try #require(link.client.remoteCertificateDER)
        #expect(DTLSCertificate.fingerprint(ofCertificateDER: serverCertificate) == Certificates.server.fingerprint)
        #expect(link.server.remoteCertificateDER == Certificates.client.derEncoded)
    }

    @Test func concurrentHandshakesShareOneCertificate() async throws {
        let profiles = try await withThrowingTaskGroup(of: SRTPProtectionProfile?.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let link = try LoopbackLink()
                    link.start()
                    link.pump()
                    guard let keys = link.clientKeys, link.serverKeys?.remoteKey == keys.localKey else { return nil }
                    // Sessions created concurrently too (srtp_init runs once).
                    let session = try SRTPSession(keyingMaterial: keys, direction: .outbound)
                    return session.profile
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(profiles == Array(repeating: .aeadAES128GCM, count: 8))
    }

    @Test func negotiatesCMWhenTheClientOffersOnlyCM() throws {
        let link = try LoopbackLink(clientConfiguration: .init(srtpProfiles: [.aes128CMHMACSHA1_80]))
        link.start()
        #expect(link.pump())
        let clientKeys = try #require(link.clientKeys)
        let serverKeys = try #require(link.serverKeys)
        #expect(clientKeys.profile == .aes128CMHMACSHA1_80 && serverKeys.profile == .aes128CMHMACSHA1_80)
        #expect(clientKeys.localSalt.count == 14)
        #expect(clientKeys.localKey == serverKeys.remoteKey && clientKeys.localSalt == serverKeys.remoteSalt)
    }

    @Test func smallMTUSplitsFlightsIntoSmallDatagrams() throws {
        let link = try LoopbackLink(
            clientConfiguration: .init(mtu: 300), serverConfiguration: .init(mtu: 300))
        link.start()
        #expect(link.pump())
        #expect(link.clientKeys != nil && link.serverKeys != nil)
        #expect(link.largestDatagram <= 300)
    }

    @Test(arguments: [LoopbackLink.Side.client, .server])
    func wrongExpectedFingerprintFails(_ deceived: LoopbackLink.Side) throws {
        let wrong = Certificates.stranger.fingerprint
        let link = try deceived == .client ? LoopbackLink(clientExpects: wrong) : LoopbackLink(serverExpects: wrong)
        link.start()
        link.pump()

        let (checker, other) = deceived == .client ? (link.clientEvents, link.serverEvents) : (link.serverEvents, link.clientEvents)
        let error = try #require(LoopbackLink.failure(in: checker), "events: \(checker)")
        #expect(error.code == .fingerprintMismatch, "\(error)")
        #expect(error.sentAlert == 42, "bad_certificate")
        #expect(LoopbackLink.keys(in: checker) == nil)
        #expect(LoopbackLink.keys(in: other) == nil, "the peer must not connect either: \(other)")
        let peerError = try #require(LoopbackLink.failure(in: other), "events: \(other)")
        #expect(peerError.code == .alertReceived && peerError.receivedAlert == 42, "\(peerError)")
        #expect(link.client.state == .failed && link.server.state == .failed)
        #expect(link.client.nextTimeout == nil && link.server.nextTimeout == nil)
    }

    @Test func lostFirstFlightIsRetransmittedAfterTheTimeout() async throws {
        let timeout = Duration.milliseconds(20)
        let link = try LoopbackLink(clientConfiguration: .init(initialRetransmissionTimeout: timeout))
        link.start()
        try #require(!link.toServer.isEmpty)
        let lost = link.toServer
        link.toServer = []  // the ClientHello is lost

        let deadline = try #require(link.client.nextTimeout)
        #expect(deadline > link.now && deadline <= link.now + timeout)
        link.absorb(link.client.handleTimeout(now: link.now), from: .client)
        #expect(link.toServer.isEmpty, "nothing is due yet")

        // OpenSSL's own timer reads the wall clock; let it run out too.
        try await Task.sleep(for: timeout * 2)
        link.now = deadline + .milliseconds(1)
        link.absorb(link.client.handleTimeout(now: link.now), from: .client)
        // The same handshake message again, in a record with a new record sequence number.
        #expect(link.toServer.count == lost.count)
        #expect(link.toServer.map { $0.dropFirst(13) } == lost.map { $0.dropFirst(13) }, "the same flight goes out again")
        #expect(link.toServer.map { DTLSRecordHeader($0)?.sequenceNumber } != lost.map { DTLSRecordHeader($0)?.sequenceNumber })
        let next = try #require(link.client.nextTimeout)
        #expect(next - link.now > timeout, "the timer backs off: \(next - link.now)")

        #expect(link.pump())
        #expect(link.clientKeys != nil && link.serverKeys != nil, "\(link.clientEvents) \(link.serverEvents)")
    }

    @Test func lostFinalFlightIsResentWhenTheClientRetransmits() async throws {
        let timeout = Duration.milliseconds(20)
        let link = try LoopbackLink(clientConfiguration: .init(initialRetransmissionTimeout: timeout))
        link.start()
        // Deliver until the server has connected, then lose its final flight.
        for _ in 0..<10 where link.serverKeys == nil {
            let forServer = link.toServer, forClient = link.toClient
            link.toServer = []
            link.toClient = []
            for d in forServer { link.absorb(link.server.receive(datagram: d, now: link.now), from: .server) }
            for d in forClient { link.absorb(link.client.receive(datagram: d, now: link.now), from: .client) }
        }
        try #require(link.serverKeys != nil)
        link.toClient = []
        #expect(link.clientKeys == nil)

        try await Task.sleep(for: timeout * 2)
        link.now = try #require(link.client.nextTimeout) + .milliseconds(1)
        link.absorb(link.client.handleTimeout(now: link.now), from: .client)
        #expect(!link.toServer.isEmpty, "client retransmits its last flight")
        #expect(link.pump())
        #expect(link.clientKeys != nil)
        #expect(link.clientKeys?.localKey == link.serverKeys?.remoteKey)
        #expect(link.serverEvents.count == 1, "the server connects only once: \(link.serverEvents)")
    }

    @Test func closeNotifyClosesThePeer() throws {
        let link = try LoopbackLink()
        link.start()
        #expect(link.pump())
        try #require(link.clientKeys != nil && link.serverKeys != nil)

        link.absorb(link.client.close(), from: .client)
        #expect(link.toServer.count == 1, "one close_notify")
        #expect(link.client.state == .closed)
        #expect(link.pump())
        #expect(link.serverEvents.last == .closed)
        #expect(link.server.state == .closed)
        #expect(link.clientEvents.count == 1, "the closed client ignores the server's reply: \(link.clientEvents)")
        #expect(link.client.close().isEmpty && link.server.close().isEmpty)
    }
}
