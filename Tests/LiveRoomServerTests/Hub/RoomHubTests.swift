import Foundation
import LiveRoomAuth
import LiveRoomCore
import LiveRoomPublishTasks
import LiveRoomProtocol
import LiveRoomSecureTransport
import LiveRoomSFU
import LiveRoomStore
import LiveRoomTransport
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import LiveRoomServer

/// A hub with a fake media port, and signaling clients that read what it sends them.
struct HubHarness {
    static let appId: UInt64 = 1_400_000_001
    static let secret = "hub-test-secret"
    let hub: RoomHub
    let media = FakeMediaPort()

    /// A hub whose rooms' shops keep their catalogues in `catalogue` (none without).
    init(maxAnchors: Int = 50, maxRoomsPerUser: Int = 10, maxRooms: Int = 1000, catalogue: RoomStore? = nil) async throws {
        let logger = Logger(label: "hub-test")
        let settings = HubSettings(
            rooms: .init(sdkAppId: Self.appId, secretKey: Self.secret, maxAnchorsPerRoom: maxAnchors, maxRoomsPerUser: maxRoomsPerUser, maxRooms: maxRooms))
        let services = HubServices(settings: settings, catalogue: catalogue, recorder: RoomRecorder(store: try RoomStore(), logger: logger), logger: logger)
        hub = RoomHub(services: services, logger: logger)
        await hub.attach(media)
    }

    static func sig(_ user: String) -> String {
        UserSig.make(sdkAppId: appId, secretKey: secret, identifier: user, time: Int64(Date.now.timeIntervalSince1970), expire: 3600).encoded()
    }

    /// A connection that entered `room` (or numeric room `roomNumber`) as `user`.
    func entered(_ user: String, role: Role = .audience, room: String = "room1", roomNumber: UInt32 = 0) async throws -> Client {
        let client = await Client(hub: hub)
        client.send(.enterRoom(EnterRoomParams(sdkAppId: Self.appId, userId: user, userSig: Self.sig(user), roomId: roomNumber, strRoomId: room, role: role)))
        let entered = try await client.next("onEnterRoom")
        #expect(entered["result"]?.intValue.map { $0 >= 0 } == true, "\(entered.jsonText)")
        return client
    }

    /// Waits until `condition` holds for the fake media port's calls.
    func mediaCalls(_ condition: ([FakeMediaPort.Call]) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition(media.calls) {
            guard ContinuousClock.now < deadline else {
                Issue.record("media port calls: \(media.calls)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A signaling connection to the hub: requests in, events collected from its outbox.
final class Client: Sendable {
    let hub: RoomHub
    let session: SessionID
    private let connectedAt = ContinuousClock.now
    private let received = EventLog()
    private let consumed = Mutex(0)

    init(hub: RoomHub) async {
        self.hub = hub
        let (session, outbox) = await hub.connect()
        self.session = session
        let received = self.received
        let channel = NIOAsyncTestingChannel()
        Task { await outbox.write(to: channel) }
        Task {
            while let frame = try? await channel.waitForOutboundWrite(as: WebSocketFrame.self) {
                if let event = try? JSONValue.parse(String(buffer: frame.unmaskedData)) { received.events.withLock { $0.append(event) } }
            }
        }
    }

    func send(_ request: RoomRequest) {
        send(.room(request))
    }

    func send(_ request: PublishTaskRequest) {
        send(.publishTask(request))
    }

    func send(_ request: SignalingRequest) {
        let (hub, session, connectedAt) = (self.hub, self.session, self.connectedAt)
        Task { await hub.receive(request, from: session, connectedAt: connectedAt) }
    }

    /// Every event so far.
    var events: [JSONValue] { received.events.withLock { $0 } }

    /// The next event named `name` (after those already returned) that matches `condition`.
    @discardableResult
    func next(_ name: String, where condition: (JSONValue) -> Bool = { _ in true }) async throws -> JSONValue {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let start = consumed.withLock { $0 }
            let events = self.events
            if let index = events.indices.dropFirst(start).first(where: { events[$0]["event"]?.stringValue == name && condition(events[$0]) }) {
                consumed.withLock { $0 = index + 1 }
                return events[index]
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TimedOut(description: "no \(name) in \(events.map(\.jsonText))")
    }
}

/// The events a client got, filled by its outbox's reader.
final class EventLog: Sendable {
    let events = Mutex<[JSONValue]>([])
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

@Suite("RoomHub against a fake media port", .timeLimit(.minutes(1)))
struct RoomHubTests {
    @Test func enterPublishSubscribeAndLeave() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        let fan = try await h.entered("fan")
        try await fan.next("onRemoteUserEnterRoom") { $0["userId"] == "host" }

        host.send(.publish(sdp: "offer"))
        let answer = try await host.next("onPublishAnswer")
        #expect(answer["sdp"] == "answer to host")
        try await fan.next("onUserVideoAvailable") { $0["userId"] == "host" && $0["available"] == true }
        try await fan.next("onUserAudioAvailable") { $0["userId"] == "host" && $0["available"] == true }
        #expect(await h.hub.room("room1")?.read { $0.publishers(in: "room1") } == ["host"])

        fan.send(.subscribe(userId: "host", sdp: "offer"))
        let subscribed = try await fan.next("onSubscribeAnswer")
        #expect(subscribed["userId"] == "host" && subscribed["sdp"] == "answer for host")
        fan.send(.unsubscribe(userId: "host"))
        try await h.mediaCalls { $0.contains(.unsubscribe(owner: fan.session, publisherId: "host")) }

        host.send(.exitRoom)
        try await host.next("onExitRoom")
        try await fan.next("onRemoteUserLeaveRoom") { $0["userId"] == "host" }
        try await h.mediaCalls { $0.contains(.close(owner: host.session)) && $0.contains(.stopPublishing(roomId: "room1", userId: "host")) }
        #expect(h.media.calls.prefix(2) == [
            .publish(owner: host.session, roomId: "room1", userId: "host"), .subscribe(owner: fan.session, roomId: "room1", publisherId: "host"),
        ])
        let snapshot = await h.hub.metricsSnapshot()
        #expect(snapshot.rooms == 1 && snapshot.users == 1 && snapshot.publishers == 0 && snapshot.signalingConnections == 2)
    }

    @Test func iceRestartsReachTheMediaPortAndAnswerTheClient() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        let fan = try await h.entered("fan")
        let certificate = try DTLSCertificate()
        let ice = ICECredentials.random()
        let offer = SDPNegotiation.offer(
            [.init(kind: .video, direction: .sendonly, codecs: [(.vp8, 96)], localSSRC: 1)],
            local: TransportDescription(iceUfrag: ice.ufrag, icePwd: ice.pwd, fingerprint: PeerTransport.sdpFingerprint(of: certificate), setup: .active),
            sessionID: 1, streamID: "host"
        ).serialize()
        // Nothing to restart before publishing.
        host.send(.restartIce(userId: nil, sdp: offer))
        let refused = try await host.next("onError")
        #expect(refused["errCode"]?.intValue == ErrorCode.notPublishing && refused["requestType"] == "restartIce", "\(refused.jsonText)")

        host.send(.publish(sdp: "offer"))
        _ = try await host.next("onPublishAnswer")
        host.send(.restartIce(userId: nil, sdp: offer))
        let answer = try await host.next("onIceRestartAnswer")
        #expect(answer["sdp"] == "restarted answer" && answer["userId"] == nil)
        fan.send(.restartIce(userId: "host", sdp: offer))
        #expect(try await fan.next("onIceRestartAnswer")["userId"] == "host")
        #expect(h.media.calls.contains(.restartICE(owner: host.session, target: .publishing)))
        #expect(h.media.calls.contains(.restartICE(owner: fan.session, target: .subscription(publisherId: "host"))))

        fan.send(.restartIce(userId: "host", sdp: "not sdp"))
        let bad = try await fan.next("onError")
        #expect(bad["errCode"]?.intValue == ErrorCode.badSessionDescription, "\(bad.jsonText)")
    }

    @Test func aRefusedOfferIsAnErrorAndTheRoomHearsNothing() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        host.send(.publish(sdp: FakeMediaPort.badOffer))
        let error = try await host.next("onError")
        #expect(error["errCode"]?.intValue == ErrorCode.badSessionDescription, "\(error.jsonText)")
        #expect(await h.hub.room("room1")?.read { $0.publishers(in: "room1") }.isEmpty == true)
    }

    @Test func whipPublishesAndWhepPlays() async throws {
        let h = try await HubHarness()
        let fan = try await h.entered("fan")
        let (session, answer) = try await h.hub.mediaSessions.enterForHTTP(
            roomId: "room1", userId: "camera", userSig: HubHarness.sig("camera"), publish: true, anchor: nil, offer: "offer")
        #expect(answer == "answer to camera")
        try await fan.next("onUserVideoAvailable") { $0["userId"] == "camera" }
        #expect(await h.hub.mediaSessions.isHTTPSession(session, roomId: "room1", userId: "camera"))
        #expect(await !h.hub.mediaSessions.isHTTPSession(fan.session, roomId: "room1", userId: "fan"), "a WebSocket session is not a WHIP resource")

        let (viewer, played) = try await h.hub.mediaSessions.enterForHTTP(
            roomId: "room1", userId: "viewer", userSig: HubHarness.sig("viewer"), publish: false, anchor: nil, offer: "offer")
        #expect(played == "answer for camera")
        #expect(h.media.calls.contains(.subscribe(owner: viewer, roomId: "room1", publisherId: "camera")))

        await h.hub.mediaSessions.leaveForHTTP(session)
        try await fan.next("onRemoteUserLeaveRoom") { $0["userId"] == "camera" }
        #expect(h.media.calls.contains(.close(owner: session)))
    }

    /// The watch page is in the room over signaling and plays over WHEP as the same user: the
    /// WHEP session must not enter again (which would replace the signaling session), and
    /// ending it ends only the subscription.
    @Test func whepOfAUserInTheRoomOverSignalingIsThatSessionsSubscription() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        host.send(.publish(sdp: "offer"))
        try await host.next("onPublishAnswer")
        let fan = try await h.entered("fan")
        let (resource, answer) = try await h.hub.mediaSessions.enterForHTTP(
            roomId: "room1", userId: "fan", userSig: HubHarness.sig("fan"), publish: false, anchor: "host", offer: "offer")
        #expect(answer == "answer for host")
        #expect(h.media.calls.contains(.subscribe(owner: fan.session, roomId: "room1", publisherId: "host")))
        #expect(resource != fan.session)
        #expect(await h.hub.mediaSessions.isHTTPSession(resource, roomId: "room1", userId: "fan"))
        #expect(await !h.hub.mediaSessions.isHTTPSession(resource, roomId: "room1", userId: "host"))
        #expect(await h.hub.describe("room1")?.users.map(\.userId).sorted() == ["fan", "host"])
        // A bad UserSig is refused even though the user is in the room.
        await #expect(throws: MediaSessions.HTTPRefusal.self) {
            _ = try await h.hub.mediaSessions.enterForHTTP(roomId: "room1", userId: "fan", userSig: "garbage", publish: false, anchor: "host", offer: "offer")
        }
        await h.hub.mediaSessions.leaveForHTTP(resource)
        #expect(h.media.calls.contains(.unsubscribe(owner: fan.session, publisherId: "host")))
        #expect(!h.media.calls.contains(.close(owner: fan.session)))
        #expect(await !h.hub.mediaSessions.isHTTPSession(resource, roomId: "room1", userId: "fan"))
        // The signaling session is still in the room and hears it.
        host.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "still here")))
        try await fan.next("onRecvCustomCmdMsg") { $0["data"] == "still here" }
    }

    /// A PK anchor the room sees plays over WHEP, subscribed to in its own room.
    @Test func whepPlaysAPKAnchorOfALinkedRoom() async throws {
        let h = try await HubHarness()
        let hostA = try await h.entered("hostA", role: .anchor, room: "roomA")
        let hostB = try await h.entered("hostB", role: .anchor, room: "roomB")
        for host in [hostA, hostB] {
            host.send(.publish(sdp: "offer"))
            try await host.next("onPublishAnswer")
        }
        // Before the link, roomB's anchor is not roomA's to play.
        do {
            _ = try await h.hub.mediaSessions.enterForHTTP(roomId: "roomA", userId: "early", userSig: HubHarness.sig("early"), publish: false, anchor: "hostB", offer: "offer")
            Issue.record("hostB played in roomA without a link")
        } catch {
            #expect(error.status == 404, "\(error.message)")
        }
        hostB.send(.setPKAllowList(rooms: [.string("roomA")]))
        try await hostB.next("onPKAllowList")
        hostA.send(.connectOtherRoom(room: .string("roomB"), userId: "hostB"))
        let linked = try await hostA.next("onConnectOtherRoom")
        #expect(linked["errCode"] == 0, "\(linked.jsonText)")
        let fan = try await h.entered("fan", room: "roomA")
        try await fan.next("onUserVideoAvailable") { $0["userId"] == "hostB" }
        _ = try await h.hub.mediaSessions.enterForHTTP(roomId: "roomA", userId: "fan", userSig: HubHarness.sig("fan"), publish: false, anchor: "hostB", offer: "offer")
        #expect(h.media.calls.contains(.subscribe(owner: fan.session, roomId: "roomB", publisherId: "hostB")))
        // A WHEP-only viewer plays it too.
        let (viewer, _) = try await h.hub.mediaSessions.enterForHTTP(
            roomId: "roomA", userId: "viewer", userSig: HubHarness.sig("viewer"), publish: false, anchor: "hostB", offer: "offer")
        #expect(h.media.calls.contains(.subscribe(owner: viewer, roomId: "roomB", publisherId: "hostB")))
    }

    @Test func refusedWHIPAndWHEPEntersGetAnHTTPStatus() async throws {
        let h = try await HubHarness(maxAnchors: 1)
        _ = try await h.entered("host", role: .anchor)
        func refusal(_ user: String, sig: String? = nil, publish: Bool = true, anchor: String? = nil, room: String = "room1") async -> MediaSessions.HTTPRefusal? {
            do {
                _ = try await h.hub.mediaSessions.enterForHTTP(
                    roomId: room, userId: user, userSig: sig ?? HubHarness.sig(user), publish: publish, anchor: anchor, offer: "offer")
                return nil
            } catch {
                return error
            }
        }
        let badSig = await refusal("camera", sig: "garbage")
        #expect(badSig?.status == 401, "\(String(describing: badSig))")
        let full = await refusal("camera")
        #expect(full?.status == 403)
        #expect(full?.message == "\(ErrorCode.tooManyAnchors): room \"room1\" already has 1 anchors, the most allowed")
        let nobody = await refusal("viewer", publish: false, room: "empty")
        #expect(nobody?.status == 409)
        let notPublishing = await refusal("viewer", publish: false, anchor: "host")
        #expect(notPublishing?.status == 404)
        // Nobody was let in, and only the WHEP sessions that got in were closed again.
        #expect(await h.hub.describe("room1")?.users.map(\.userId) == ["host"])
        #expect(await h.hub.describe("empty") == nil)
        #expect(!h.media.calls.contains { if case .publish = $0 { true } else { false } })
    }

    @Test func aRoomTaskEntersItsRobotAndItsTapFollowsTheAnchors() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        host.send(.publish(sdp: "offer"))
        try await host.next("onPublishAnswer")
        let fan = try await h.entered("fan")

        let target: JSONValue = ["mode": "mixStreamToRoom", "mixStreamIdentity": ["userId": "mix"]]
        let encoder: JSONValue = ["videoEncodedWidth": 320, "videoEncodedHeight": 240, "videoEncodedFPS": 15]
        host.send(.startPublishMediaStream(target: target, encoderParam: encoder, mixingConfig: nil))
        let started = try await host.next("onStartPublishMediaStream")
        #expect(started["code"] == 0, "\(started.jsonText)")
        let taskId = try #require(started["taskId"]?.stringValue)
        try await fan.next("onRemoteUserEnterRoom") { $0["userId"] == "mix" }
        try await fan.next("onUserVideoAvailable") { $0["userId"] == "mix" && $0["available"] == true }
        let hostKey = SFURouter.PublisherKey(roomId: "room1", userId: "host")
        let mixKey = SFURouter.PublisherKey(roomId: "room1", userId: "mix")
        #expect(h.media.calls.contains(.publishLocal(mixKey)))
        #expect(h.media.calls.last == .setTap(1, publishers: [hostKey]), "the mix taps the host, not itself")
        #expect(await h.hub.metricsSnapshot().publishTasks == 1)

        // A second anchor publishes: the tap takes both; they leave: back to the host.
        let guest = try await h.entered("guest", role: .anchor)
        guest.send(.publish(sdp: "offer"))
        let guestKey = SFURouter.PublisherKey(roomId: "room1", userId: "guest")
        try await h.mediaCalls { $0.last == .setTap(1, publishers: [hostKey, guestKey]) }
        guest.send(.exitRoom)
        try await h.mediaCalls { $0.last == .setTap(1, publishers: [hostKey]) }

        // The robot's user id is taken now: a second room task as "mix" is refused.
        host.send(.startPublishMediaStream(target: ["mode": "mixStreamToRoom", "mixStreamIdentity": ["userId": "fan"]], encoderParam: encoder, mixingConfig: nil))
        let refused = try await host.next("onStartPublishMediaStream")
        #expect(refused["code"]?.intValue == ErrorCode.conflictingTask && refused["taskId"] == "", "\(refused.jsonText)")
        #expect(await h.hub.metricsSnapshot().publishTasks == 1)

        host.send(.stopPublishMediaStream(taskId: taskId))
        let stopped = try await host.next("onStopPublishMediaStream")
        #expect(stopped["code"] == 0)
        try await fan.next("onRemoteUserLeaveRoom") { $0["userId"] == "mix" }
        // The tap goes, then the robot stops publishing and leaves (its session closes).
        #expect(Array(h.media.calls.suffix(4).prefix(2)) == [.setTap(1, publishers: []), .stopLocal(mixKey)])
        #expect(h.media.calls.last == .stopPublishing(roomId: "room1", userId: "mix"))
        #expect(await h.hub.metricsSnapshot().publishTasks == 0)
    }

    @Test func adminTasksAnswerTheCallAndDismissingTheRoomStopsThem() async throws {
        let h = try await HubHarness()
        let host = try await h.entered("host", role: .anchor)
        let config = PublishTaskConfig(
            target: PublishTarget(mode: .mixStreamToRoom, mixStreamIdentity: MixUser(userId: "mix")),
            encoderParam: StreamEncoderParam(videoEncodedWidth: 320, videoEncodedHeight: 240))
        await #expect(throws: LiveRoomError.self) { try await h.hub.tasks.startAdminTask(config, roomId: "nowhere") }
        let taskId = try await h.hub.tasks.startAdminTask(config, roomId: "room1")
        try await host.next("onRemoteUserEnterRoom") { $0["userId"] == "mix" }
        await #expect(throws: LiveRoomError.self) { try await h.hub.tasks.startAdminTask(config, roomId: "room1") }

        try await h.hub.dismissRoom("room1")
        #expect(await h.hub.metricsSnapshot().publishTasks == 0)
        do {
            try await h.hub.tasks.stopAdminTask(taskId)
            Issue.record("the task outlived its room")
        } catch {
            #expect(error.code == ErrorCode.taskNotFound)
        }
        #expect(h.media.calls.contains(.stopLocal(SFURouter.PublisherKey(roomId: "room1", userId: "mix"))))
    }
}
