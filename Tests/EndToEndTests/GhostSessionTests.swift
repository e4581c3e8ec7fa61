import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomProtocol
import LiveRoomSecureTransport
import LiveRoomTransport
import LiveRoomWire
import Testing

/// WHIP/WHEP sessions whose peer never connects end at the media connect deadline: their seats
/// and memberships are freed and the room is told.
@Suite(.serialized, .timeLimit(.minutes(2))) struct GhostSessionTests {
    /// A valid offer from a peer that will never send a packet.
    static func ghostOffer(direction: SDPDirection) throws -> String {
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let local = TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active)
        let sections = [
            SDPNegotiation.OfferedSection(kind: .audio, direction: direction, codecs: [(.opus, 111)], localSSRC: direction == .sendonly ? 1 : nil),
            SDPNegotiation.OfferedSection(kind: .video, direction: direction, codecs: [(.vp8, 96)], localSSRC: direction == .sendonly ? 2 : nil),
        ]
        return SDPNegotiation.offer(sections, local: local, sessionID: 1, streamID: "ghost").serialize()
    }

    static func post(_ server: TestServer, _ path: String, user: String, offer: String) async throws -> Int {
        var request = URLRequest(url: URL(string: server.url + path)!)
        request.httpMethod = "POST"
        request.setValue("application/sdp", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(server.userSig(user))", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(offer.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as! HTTPURLResponse).statusCode
    }

    static func userCount(_ server: TestServer, room: String, in scope: ProcessScope) async throws -> Int {
        let (answer, _) = try await server.admin("DescribeRoom", ["SdkAppId": .number(Double(TestServer.sdkAppId)), "RoomId": .string(room)], in: scope)
        return answer["Response"]?["UserList"]?.arrayValue?.count ?? 0
    }

    @Test func twoHundredGhostWHIPAndWHEPSessionsFreeTheirSeatsAtTheDeadlineWithRSSUnder200MiB() async throws {
        let scope = try ProcessScope()
        defer { scope.stopAll() }
        let server = try await TestServer.start(in: scope, extra: ["--max-anchors", "2", "--media-connect-timeout", "2"])
        let watcher = try await server.entered("watcher", in: scope)

        // 200 WHIP ghosts: two get the room's two anchor seats, the rest are refused.
        let publishOffer = try Self.ghostOffer(direction: .sendonly)
        var statuses: [Int: Int] = [:]
        for index in 0..<200 { statuses[try await Self.post(server, "/whip/room1/ghost\(index)", user: "ghost\(index)", offer: publishOffer), default: 0] += 1 }
        #expect(statuses == [201: 2, 403: 198], "\(statuses)")
        // While they hold the seats the real host is locked out.
        let early = try server.join("host", role: "anchor", in: scope)
        let refused = try await early.waitForEvent("onEnterRoom")
        #expect(refused["result"] == .number(Double(ErrorCode.tooManyAnchors)), "\(refused.jsonText)")

        // At the deadline both ghosts leave, and the room is told.
        try await watcher.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(10)) { $0["userId"] == "ghost0" }
        try await watcher.waitForEvent("onRemoteUserLeaveRoom", timeout: .seconds(10)) { $0["userId"] == "ghost1" }
        let host = try await server.enteredWithMedia("host", role: "anchor", media: ["--publish", "color:00FF00"] + MediaEndToEndTests.small, in: scope)
        try await host.waitForEvent("onPublishAnswer")
        try await watcher.waitForEvent("onUserVideoAvailable", timeout: .seconds(10)) { $0["userId"] == "host" && $0["available"] == true }

        // 100 WHEP ghosts of the host: members until the deadline, then gone.
        let playOffer = try Self.ghostOffer(direction: .recvonly)
        for index in 0..<100 { #expect(try await Self.post(server, "/whep/room1/viewer\(index)", user: "viewer\(index)", offer: playOffer) == 201) }
        #expect(try await Self.userCount(server, room: "room1", in: scope) == 102)
        #expect(server.residentMiB < 200, "\(server.residentMiB) MiB")
        let deadline = ContinuousClock.now + .seconds(10)
        var count = 102
        while count > 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            count = try await Self.userCount(server, room: "room1", in: scope)
        }
        #expect(count == 2, "the host and the watcher stay")
        #expect(server.residentMiB < 200, "\(server.residentMiB) MiB")
        try await server.checkServesANormalRoom(in: scope)
    }
}
