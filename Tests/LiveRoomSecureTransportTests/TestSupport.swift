@testable import LiveRoomSecureTransport

/// Certificates are slow-ish to make; tests share a few.
enum Certificates {
    static let client = try! DTLSCertificate()
    static let server = try! DTLSCertificate()
    static let stranger = try! DTLSCertificate()
}

/// A deterministic pseudo-random generator (SplitMix64) so fuzz-style tests repeat.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &self) }
    }
}

/// A client and a server transport joined by an in-memory "network" and a manual clock.
final class LoopbackLink {
    enum Side { case client, server }

    let client: DTLSTransport
    let server: DTLSTransport
    /// The manual clock: only tests move it.
    var now: ContinuousClock.Instant = .now
    /// Non-`.send` outputs each side produced, in order.
    private(set) var clientEvents: [DTLSTransport.Output] = []
    private(set) var serverEvents: [DTLSTransport.Output] = []
    /// Datagrams in flight.
    var toServer: [[UInt8]] = []
    var toClient: [[UInt8]] = []
    /// Largest datagram seen.
    private(set) var largestDatagram = 0
    /// Datagrams sent by each side.
    private(set) var sentByClient = 0
    private(set) var sentByServer = 0

    init(
        clientExpects: DTLSFingerprint = Certificates.server.fingerprint,
        serverExpects: DTLSFingerprint = Certificates.client.fingerprint,
        clientConfiguration: DTLSTransport.Configuration = .init(),
        serverConfiguration: DTLSTransport.Configuration = .init()
    ) throws {
        client = try DTLSTransport(
            certificate: Certificates.client, role: .client, remoteFingerprint: clientExpects,
            configuration: clientConfiguration)
        server = try DTLSTransport(
            certificate: Certificates.server, role: .server, remoteFingerprint: serverExpects,
            configuration: serverConfiguration)
    }

    /// Routes `outputs` of `side`: datagrams go in flight to the other side, the rest is recorded.
    func absorb(_ outputs: [DTLSTransport.Output], from side: Side) {
        for output in outputs {
            switch (output, side) {
            case (.send(let datagram), .client):
                largestDatagram = max(largestDatagram, datagram.count)
                sentByClient += 1
                toServer.append(datagram)
            case (.send(let datagram), .server):
                largestDatagram = max(largestDatagram, datagram.count)
                sentByServer += 1
                toClient.append(datagram)
            case (_, .client): clientEvents.append(output)
            case (_, .server): serverEvents.append(output)
            }
        }
    }

    func start() {
        absorb(server.start(now: now), from: .server)
        absorb(client.start(now: now), from: .client)
    }

    /// Delivers datagrams until none are in flight, at most `maxRounds` exchanges.
    /// - Returns: whether the network went quiet.
    @discardableResult
    func pump(maxRounds: Int = 20) -> Bool {
        for _ in 0..<maxRounds {
            if toServer.isEmpty && toClient.isEmpty { return true }
            let forServer = toServer, forClient = toClient
            toServer = []
            toClient = []
            for datagram in forServer { absorb(server.receive(datagram: datagram, now: now), from: .server) }
            for datagram in forClient { absorb(client.receive(datagram: datagram, now: now), from: .client) }
        }
        return toServer.isEmpty && toClient.isEmpty
    }

    var clientKeys: SRTPKeyingMaterial? { Self.keys(in: clientEvents) }
    var serverKeys: SRTPKeyingMaterial? { Self.keys(in: serverEvents) }

    static func keys(in events: [DTLSTransport.Output]) -> SRTPKeyingMaterial? {
        for case .connected(let keys) in events { return keys }
        return nil
    }

    static func failure(in events: [DTLSTransport.Output]) -> DTLSError? {
        for case .failed(let error) in events { return error }
        return nil
    }
}
