import Foundation
import LiveRoomCore
import LiveRoomProtocol
import Testing

@testable import LiveRoomServer

/// Each room is an actor of its own: a member's request is carried out by its room, not by the
/// hub, and a room that is busy holds up no other room.
@Suite("Rooms apart", .timeLimit(.minutes(1)))
struct RoomsApartTests {
    /// Holds a thread (and so the lane or the loop it serves) until released.
    final class Hold: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)

        /// Runs `schedule`'s job, which holds its thread; returns once it holds it.
        func start(_ schedule: (@escaping @Sendable () -> Void) -> Void) async {
            await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                schedule {
                    started.resume()
                    self.semaphore.wait()
                }
            }
        }

        func release() {
            semaphore.signal()
        }
    }

    /// A custom message from `sender` to `receiver` through their room's actor.
    static func message(in room: Room, from sender: Client, _ data: String) {
        Task { await room.receive(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: data)), from: sender.session, elapsedMs: 0) }
    }

    @Test func aMembersRequestDoesNotWaitForTheHub() async throws {
        let h = try await HubHarness()
        let (a, b) = (try await h.entered("a", room: "quiet"), try await h.entered("b", room: "quiet"))
        let room = try #require(await h.hub.room("quiet"))
        // The hub's thread is held; the room goes on.
        let hold = Hold()
        await hold.start { job in RoomHub.executorLoop.execute(job) }
        defer { hold.release() }
        Self.message(in: room, from: a, "while the hub is busy")
        try await b.next("onRecvCustomCmdMsg") { $0["data"] == "while the hub is busy" }
        // An enter goes through the hub, so it waits for it.
        let late = Task { try await h.entered("late", room: "quiet") }
        try await Task.sleep(for: .milliseconds(200))
        #expect(b.events.allSatisfy { $0["userId"] != "late" }, "nobody entered while the hub was held")
        hold.release()
        _ = try await late.value
    }

    @Test func aBusyRoomDoesNotDelayAnother() async throws {
        let h = try await HubHarness()
        let (a, b) = (try await h.entered("a", room: "busy"), try await h.entered("b", room: "busy"))
        let (c, d) = (try await h.entered("c", room: "quiet"), try await h.entered("d", room: "quiet"))
        let (busy, quiet) = (try #require(await h.hub.room("busy")), try #require(await h.hub.room("quiet")))
        #expect(busy.lane !== quiet.lane)
        // Room "busy" is held by work on its lane: its message waits, the quiet room's does not.
        let hold = Hold()
        await hold.start { job in Task(executorPreference: busy.lane) { job() } }
        defer { hold.release() }
        Self.message(in: busy, from: a, "busy room")
        Self.message(in: quiet, from: c, "quiet room")
        try await d.next("onRecvCustomCmdMsg") { $0["data"] == "quiet room" }
        #expect(b.events.allSatisfy { $0["data"] != "busy room" }, "the busy room's message waits for its work")
        hold.release()
        try await b.next("onRecvCustomCmdMsg") { $0["data"] == "busy room" }
    }

    @Test func roomsLinkByMessageAndAnEmptiedRoomIsForgotten() async throws {
        let h = try await HubHarness()
        let hostA = try await h.entered("hostA", role: .anchor, room: "A")
        let hostB = try await h.entered("hostB", role: .anchor, room: "B")
        // Each room keeps its side of the link: room B's machine knows room A as a room it
        // reaches by message (on this node, whose id is "").
        // A room that is not here is not found, for a link and for a request.
        hostA.send(.connectOtherRoom(room: .string("Z"), userId: "hostZ"))
        #expect(try await hostA.next("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkRoomNotFound)
        hostA.send(.requestPK(room: .string("Z"), userId: "hostZ"))
        #expect(try await hostA.next("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkRoomNotFound)
        // hostB has not agreed: refused. Its room's allow-list then names room A.
        hostA.send(.connectOtherRoom(room: .string("B"), userId: "hostB"))
        #expect(try await hostA.next("onConnectOtherRoom")["errCode"]?.intValue == ErrorCode.pkConsentRequired)
        hostB.send(.setPKAllowList(rooms: [.string("A")]))
        try await hostB.next("onPKAllowList")
        hostA.send(.connectOtherRoom(room: .string("B"), userId: "hostB"))
        #expect(try await hostA.next("onConnectOtherRoom")["errCode"] == 0)
        try await hostB.next("onRemoteUserEnterRoom") { $0["userId"] == "hostA" }
        let roomB = try #require(await h.hub.room("B"))
        #expect(await roomB.read { $0.roomIds } == ["B"])
        #expect(await roomB.read { $0.pkLinks(of: "B").map(\.caller.userId) } == ["hostA"])
        #expect(await roomB.read { $0.remoteNode(ofRoom: "A") } == "")
        // The handshake between rooms too.
        hostB.send(.disconnectOtherRoom)
        try await hostA.next("onRemoteUserLeaveRoom") { $0["userId"] == "hostB" }
        hostB.send(.requestPK(room: .string("A"), userId: "hostA"))
        try await hostA.next("onPKRequest") { $0["userId"] == "hostB" }
        hostA.send(.answerPK(room: .string("B"), userId: "hostB", accept: true))
        #expect(try await hostB.next("onConnectOtherRoom")["errCode"] == 0)
        #expect(try await hostA.next("onConnectOtherRoom")["userId"] == "hostB")
        // Room A empties: its actor is forgotten, and room B sees the link end.
        hostA.send(.exitRoom)
        try await hostB.next("onRemoteUserLeaveRoom") { $0["userId"] == "hostA" }
        let deadline = ContinuousClock.now + .seconds(5)
        while await h.hub.room("A") != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await h.hub.room("A") == nil && h.hub.seats.laneCount == 1)
        #expect(await h.hub.metricsSnapshot().rooms == 1)
    }

    /// Enters that race into different rooms (each room its own actor) still keep the server's
    /// limits: a user in at most `maxRoomsPerUser` rooms, at most `maxRooms` rooms.
    @Test func enteringManyRoomsAtOnceKeepsTheServersLimits() async throws {
        let h = try await HubHarness(maxRoomsPerUser: 2, maxRooms: 3)
        var clients: [Client] = []
        for _ in 0..<5 { clients.append(await Client(hub: h.hub)) }
        for (index, client) in clients.enumerated() {
            client.send(.enterRoom(EnterRoomParams(sdkAppId: HubHarness.appId, userId: "u", userSig: HubHarness.sig("u"), strRoomId: "r\(index)", role: .audience)))
        }
        var results: [Int] = []
        for client in clients { results.append(try await client.next("onEnterRoom")["result"]?.intValue ?? 0) }
        #expect(results.filter { $0 > 0 }.count == 2, "\(results)")
        #expect(results.filter { $0 == ErrorCode.tooManyRoomsForUser }.count == 3, "\(results)")
        #expect(await h.hub.metricsSnapshot().rooms == 2, "a refused enter leaves no room behind")

        // Two more users each open a new room: the third room fits, the fourth does not.
        let v = await Client(hub: h.hub)
        let w = await Client(hub: h.hub)
        v.send(.enterRoom(EnterRoomParams(sdkAppId: HubHarness.appId, userId: "v", userSig: HubHarness.sig("v"), strRoomId: "new1", role: .audience)))
        #expect(try await v.next("onEnterRoom")["result"]?.intValue ?? 0 > 0)
        // "v" (one room of two) enters one of u's rooms from two connections at once: the second
        // enters a room it is on its way into, which does not count as a third.
        let shared = try #require(results.firstIndex { $0 > 0 })
        let (x, y) = (await Client(hub: h.hub), await Client(hub: h.hub))
        for client in [x, y] {
            client.send(.enterRoom(EnterRoomParams(sdkAppId: HubHarness.appId, userId: "v", userSig: HubHarness.sig("v"), strRoomId: "r\(shared)", role: .audience)))
        }
        #expect(try await x.next("onEnterRoom")["result"]?.intValue ?? 0 > 0)
        #expect(try await y.next("onEnterRoom")["result"]?.intValue ?? 0 > 0)
        w.send(.enterRoom(EnterRoomParams(sdkAppId: HubHarness.appId, userId: "w", userSig: HubHarness.sig("w"), strRoomId: "new2", role: .audience)))
        #expect(try await w.next("onEnterRoom")["result"]?.intValue == ErrorCode.tooManyRooms)
        #expect(await h.hub.roomKeys().count == 3)
    }
}
