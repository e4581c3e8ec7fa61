import Testing

@testable import LiveRoomSecureTransport

/// Datagrams from the network are untrusted; none of these may crash, and the documented
/// outcome is "ignored" or `.failed`.
@Suite struct DTLSGarbageTests {
    /// Random datagrams that cannot be DTLS (first byte outside 20...63 or too short).
    static func nonDTLS(_ rng: inout SplitMix64, count: Int) -> [[UInt8]] {
        var result: [[UInt8]] = [[], [22], Array(repeating: 22, count: 12)]
        for _ in 0..<count {
            var datagram = rng.bytes(Int.random(in: 1...1500, using: &rng))
            datagram[0] = [UInt8(0), 1, 19, 64, 128, 0x80, 0x90, 255].randomElement(using: &rng)!
            result.append(datagram)
        }
        return result
    }

    /// Random datagrams that start like DTLS: some with random framing, some well framed
    /// (correct versions and lengths) around random handshake bodies, random alerts,
    /// ChangeCipherSpec, or random "encrypted" epoch-1 records.
    static func dtlsLooking(_ rng: inout SplitMix64, count: Int) -> [[UInt8]] {
        (0..<count).map { i in
            func record(type: UInt8, epoch: UInt8, body: [UInt8]) -> [UInt8] {
                [type, 0xFE, 0xFD, 0, epoch, 0, 0, 0, 0, UInt8(i >> 8), UInt8(i & 0xFF), UInt8(body.count >> 8), UInt8(body.count & 0xFF)]
                    + body
            }
            switch i % 6 {
            case 0:
                var datagram = rng.bytes(Int.random(in: 13...1300, using: &rng))
                datagram[0] = [20, 21, 22, 23, 24, 25, 63].randomElement(using: &rng)!
                return datagram
            case 1:
                return record(type: 22, epoch: 0, body: rng.bytes(Int.random(in: 12...400, using: &rng)))
            case 2:
                // A handshake fragment header that claims a plausible message type and lengths.
                let bodyLength = Int.random(in: 0...300, using: &rng)
                let header: [UInt8] = [
                    [1, 2, 11, 12, 13, 14, 15, 16, 20].randomElement(using: &rng)!,
                    0, UInt8(bodyLength >> 8), UInt8(bodyLength & 0xFF), 0, UInt8.random(in: 0...3, using: &rng),
                    0, 0, 0, 0, UInt8(bodyLength >> 8), UInt8(bodyLength & 0xFF),
                ]
                return record(type: 22, epoch: 0, body: header + rng.bytes(bodyLength))
            case 3:
                return record(type: 21, epoch: 0, body: [1, UInt8.random(in: 0...255, using: &rng)])
            case 4:
                return record(type: 20, epoch: 0, body: [1])
            default:
                return record(type: [21, 22, 23].randomElement(using: &rng)!, epoch: 1, body: rng.bytes(Int.random(in: 1...300, using: &rng)))
            }
        }
    }

    @Test func nonDTLSDatagramsAreIgnoredAtEveryStage() throws {
        var rng = SplitMix64(state: 1)
        let garbage = Self.nonDTLS(&rng, count: 50)
        let link = try LoopbackLink()
        for datagram in garbage {
            #expect(link.client.receive(datagram: datagram, now: link.now).isEmpty)
            #expect(link.server.receive(datagram: datagram, now: link.now).isEmpty)
        }
        #expect(link.server.state == .idle, "garbage does not start a passive server")
        link.start()
        for datagram in garbage {
            #expect(link.server.receive(datagram: datagram, now: link.now).isEmpty)
        }
        #expect(link.pump())
        #expect(link.clientKeys != nil && link.serverKeys != nil)
        for datagram in garbage {
            #expect(link.client.receive(datagram: datagram, now: link.now).isEmpty)
            #expect(link.server.receive(datagram: datagram, now: link.now).isEmpty)
        }
        #expect(link.client.state == .connected && link.server.state == .connected)
    }

    @Test func dtlsLookingGarbageDuringTheHandshakeIsIgnoredOrFails() throws {
        var rng = SplitMix64(state: 2)
        for round in 0..<20 {
            let link = try LoopbackLink()
            link.start()
            for datagram in Self.dtlsLooking(&rng, count: 5) {
                link.absorb(link.server.receive(datagram: datagram, now: link.now), from: .server)
                link.absorb(link.client.receive(datagram: datagram, now: link.now), from: .client)
            }
            link.pump()
            for (events, transport) in [(link.clientEvents, link.client), (link.serverEvents, link.server)] {
                if let keys = LoopbackLink.keys(in: events) {
                    #expect(transport.state == .connected, "round \(round)")
                    #expect(keys == transport.keyingMaterial)
                } else {
                    #expect(transport.state != .connected, "round \(round)")
                }
            }
            if let clientKeys = link.clientKeys, let serverKeys = link.serverKeys {
                #expect(clientKeys.localKey == serverKeys.remoteKey, "round \(round)")
            }
        }
    }

    @Test func dtlsLookingGarbageAfterTheHandshakeIsIgnored() throws {
        var rng = SplitMix64(state: 3)
        let link = try LoopbackLink()
        link.start()
        #expect(link.pump())
        let keys = try #require(link.clientKeys)
        for datagram in Self.dtlsLooking(&rng, count: 300) {
            #expect(link.client.receive(datagram: datagram, now: link.now).isEmpty)
            #expect(link.server.receive(datagram: datagram, now: link.now).isEmpty)
        }
        // Plaintext records are stale after the handshake and encrypted ones do not
        // authenticate: all of it is ignored and the session survives.
        #expect(link.client.keyingMaterial == keys)
        #expect(link.client.state == .connected && link.server.state == .connected)
    }

    @Test func receiveBeforeStartIsIgnoredByTheClient() throws {
        let link = try LoopbackLink()
        // A real ClientHello from another client, delivered to our idle client.
        let other = try DTLSTransport(
            certificate: Certificates.stranger, role: .client, remoteFingerprint: Certificates.client.fingerprint)
        for case .send(let hello) in other.start(now: link.now) {
            #expect(link.client.receive(datagram: hello, now: link.now).isEmpty)
        }
        #expect(link.client.state == .idle)
    }
}

/// Found by `dtlsLookingGarbageAfterTheHandshakeIsIgnored`: OpenSSL 3.0 answers an
/// encrypted record shorter than the AES-GCM overhead with internal_error and fails.
@Suite struct DTLSShortEncryptedRecordRegressionTests {
    @Test(arguments: [UInt8(21), 22, 23])
    func shortEncryptedRecordsDoNotKillTheSession(_ contentType: UInt8) throws {
        let link = try LoopbackLink()
        link.start()
        #expect(link.pump())
        for length in 0..<64 {
            let datagram: [UInt8] = [contentType, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 9, 0, UInt8(length)]
                + Array(repeating: 0x5A, count: length)
            #expect(link.client.receive(datagram: datagram, now: link.now).isEmpty, "length \(length)")
        }
        #expect(link.client.state == .connected)
        link.absorb(link.server.close(), from: .server)
        #expect(link.pump())
        #expect(link.clientEvents.last == .closed, "the session still works")
    }
}
