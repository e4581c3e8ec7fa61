import LiveRoomAuth
import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// Drives a RoomsStateMachine with sessions named by user and checks the actions.
struct Harness {
    static let secret = "test-secret"
    static let appId: UInt64 = 1_400_000_000
    let base = ContinuousClock.now
    var machine: RoomsStateMachine
    var millis: Int64 = 1_700_000_000_000
    var sessions: [String: SessionID] = [:]
    var nextSession: SessionID = 1

    init(maxAnchors: Int = 50, maxRoomsPerUser: Int = 10, maxRooms: Int = 1000, requirePrivateMapKey: Bool = false) {
        machine = RoomsStateMachine(
            configuration: .init(
                sdkAppId: Self.appId, secretKey: Self.secret, maxAnchorsPerRoom: maxAnchors, maxRoomsPerUser: maxRoomsPerUser, maxRooms: maxRooms,
                requirePrivateMapKey: requirePrivateMapKey))
    }

    /// A PrivateMapKey for `user` in string room `room`, or in numeric room `roomNumber`.
    func key(_ user: String, room: String = "r1", roomNumber: UInt32? = nil, _ privileges: PrivateMapKey.Privileges) -> String {
        PrivateMapKey.make(
            sdkAppId: Self.appId, secretKey: Self.secret, userId: user, room: roomNumber.map { .numeric($0) } ?? .string(room), privileges: privileges,
            time: millis / 1000, expire: 3600)
    }

    var now: EventTime { EventTime(monotonic: base.advanced(by: .milliseconds(millis - 1_700_000_000_000)), unixMillis: millis) }

    mutating func advance(ms: Int64) { millis += ms }

    /// Room `room`'s PK allow-list lets the anchors of `rooms` link with its anchors without a request.
    mutating func allowPK(from rooms: String..., into room: String) { _ = machine.setPKAllowList(rooms.map { .string($0) }, in: room) }

    func sig(_ user: String) -> String {
        UserSig.make(sdkAppId: Self.appId, secretKey: Self.secret, identifier: user, time: millis / 1000, expire: 3600).encoded()
    }

    /// A new connection for `connection` (a name; defaults to the user id) entering the room:
    /// string room `room`, or numeric room `roomNumber` when given (TRTC's `roomId`, which wins).
    @discardableResult
    mutating func enter(
        _ user: String, room: String = "r1", roomNumber: UInt32 = 0, role: Role = .audience, connection: String? = nil, privateMapKey: String = ""
    ) -> [RoomsStateMachine.Action] {
        let name = connection ?? user
        let session = nextSession
        nextSession += 1
        sessions[name] = session
        let params = EnterRoomParams(
            sdkAppId: Self.appId, userId: user, userSig: sig(user), roomId: roomNumber, strRoomId: room, role: role, privateMapKey: privateMapKey)
        return machine.handle(.enterRoom(params), from: session, at: now)
    }

    @discardableResult
    mutating func send(_ request: RoomRequest, from name: String) -> [RoomsStateMachine.Action] {
        machine.handle(request, from: sessions[name]!, at: now)
    }

    /// The events each named connection got, in order.
    func events(_ actions: [RoomsStateMachine.Action], for name: String) -> [ServerEvent] {
        let session = sessions[name]!
        return actions.compactMap {
            if case .send(let s, let e, _) = $0, s == session { return e }
            return nil
        }
    }

    func records(_ actions: [RoomsStateMachine.Action]) -> [RoomRecord] {
        actions.compactMap {
            if case .record(let r) = $0 { return r }
            return nil
        }
    }
}

@Suite struct EnterAndExitTests {
    @Test func anchorsAreAnnouncedAudienceIsNot() {
        var h = Harness()
        let a = h.enter("anchor1", role: .anchor)
        #expect(h.events(a, for: "anchor1") == [.onEnterRoom(result: 1)])
        #expect(h.records(a).first == .roomCreated(roomId: "r1", at: h.millis))

        let v = h.enter("viewer1")
        #expect(h.events(v, for: "viewer1") == [.onEnterRoom(result: 1), .onRemoteUserEnterRoom(userId: "anchor1")])
        #expect(h.events(v, for: "anchor1").isEmpty, "audience members are not announced")

        let b = h.enter("anchor2", role: .anchor)
        #expect(h.events(b, for: "anchor1") == [.onRemoteUserEnterRoom(userId: "anchor2")])
        #expect(h.events(b, for: "viewer1") == [.onRemoteUserEnterRoom(userId: "anchor2")])

        let x = h.send(.exitRoom, from: "anchor2")
        #expect(h.events(x, for: "anchor2") == [.onExitRoom(reason: 0)])
        #expect(h.events(x, for: "viewer1") == [.onRemoteUserLeaveRoom(userId: "anchor2", reason: 0)])
    }

    @Test func roomDissolvesWhenEmpty() {
        var h = Harness()
        h.enter("a", role: .anchor)
        h.enter("b")
        h.send(.exitRoom, from: "a")
        #expect(h.machine.describe("r1")?.users.map(\.userId) == ["b"])
        let last = h.send(.exitRoom, from: "b")
        #expect(h.records(last).contains(.roomDissolved(roomId: "r1", at: h.millis, reason: "empty")))
        #expect(h.machine.describe("r1") == nil)
    }

    @Test func disconnectCountsAsTimeout() {
        var h = Harness()
        h.enter("a", role: .anchor)
        h.enter("b")
        let actions = h.machine.disconnected(h.sessions["a"]!, at: h.now)
        #expect(h.events(actions, for: "b") == [.onRemoteUserLeaveRoom(userId: "a", reason: 1)])
    }

    @Test func oneUserIsInAtMostTheAllowedRoomsAndTheServerHoldsAtMostTheAllowedRooms() {
        var h = Harness(maxRoomsPerUser: 3, maxRooms: 5)
        for room in ["r1", "r2", "r3"] { h.enter("u", room: room, connection: "u-\(room)") }
        let refused = h.enter("u", room: "r4", connection: "u-r4")
        #expect(h.events(refused, for: "u-r4").first.map { if case .onEnterRoom(let r, _) = $0 { r } else { 0 } } == ErrorCode.tooManyRoomsForUser)
        #expect(h.machine.membership(of: h.sessions["u-r4"]!) == nil)
        // Entering one of the same rooms again replaces that session and is not a fourth room.
        let again = h.enter("u", room: "r2", connection: "u-r2-again")
        #expect(h.events(again, for: "u-r2-again") == [.onEnterRoom(result: 1)])
        // Leaving one frees a place.
        _ = h.machine.disconnected(h.sessions["u-r1"]!, at: h.now)
        let later = h.enter("u", room: "r4", connection: "u-r4b")
        #expect(h.events(later, for: "u-r4b") == [.onEnterRoom(result: 1)])

        // Rooms r2, r3, r4 exist; two more may be created, then only existing rooms may be entered.
        h.enter("v", room: "r5")
        h.enter("v", room: "r6", connection: "v6")
        let full = h.enter("w", room: "r7")
        #expect(h.events(full, for: "w").first.map { if case .onEnterRoom(let r, _) = $0 { r } else { 0 } } == ErrorCode.tooManyRooms)
        let existing = h.enter("x", room: "r5")
        #expect(h.events(existing, for: "x") == [.onEnterRoom(result: 1)])
    }

    @Test func secondEnterReplacesFirstSession() {
        var h = Harness()
        h.enter("a", role: .anchor, connection: "a-old")
        h.enter("v")
        let actions = h.enter("a", role: .anchor, connection: "a-new")
        let told = h.events(actions, for: "a-old")
        #expect(told.count == 2 && told.last == .onExitRoom(reason: 1), "\(told)")
        guard case .onError(let code, let message, _)? = told.first else { Issue.record("no reason given: \(told)"); return }
        #expect(code == ErrorCode.replacedBySession && message.contains("another connection"), "\(message)")
        #expect(h.events(actions, for: "a-new") == [.onEnterRoom(result: 1)])
        #expect(h.events(actions, for: "v").isEmpty, "still the same anchor for the others")
        // The old connection is out of the room.
        let stale = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "x")), from: "a-old")
        #expect(h.events(stale, for: "a-old").first.map { if case .onError(let c, _, _) = $0 { c } else { 0 } } == ErrorCode.notInRoom)
        #expect(h.machine.describe("r1")?.users.count == 2)
    }

    @Test func enterTwiceOnOneConnectionIsRefused() {
        var h = Harness()
        h.enter("a", role: .anchor)
        let actions = h.machine.handle(
            .enterRoom(EnterRoomParams(sdkAppId: Harness.appId, userId: "a", userSig: h.sig("a"), strRoomId: "r2", role: .anchor)),
            from: h.sessions["a"]!, at: h.now)
        #expect(h.events(actions, for: "a").first == .onEnterRoom(result: ErrorCode.enterRoomRefused, errMsg: "this connection is already in room \"r1\"; call exitRoom first"))
    }

    @Test(arguments: [
        (EnterRoomParams(sdkAppId: 1, userId: "u", userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidSdkAppId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: "", strRoomId: "", role: .anchor), ErrorCode.invalidRoomId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "", userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidUserId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: String(repeating: "x", count: 33), userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidUserId),
        // TRTC's character sets: a newline (a forged log line), a slash, a space or non-ASCII letters are refused.
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: "", strRoomId: "r\nforged=1", role: .anchor), ErrorCode.invalidRoomId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: "", strRoomId: "../r", role: .anchor), ErrorCode.invalidRoomId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: "", strRoomId: "商店", role: .anchor), ErrorCode.invalidRoomId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u\r\nforged", userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidUserId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "a b", userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidUserId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "a@b.c", userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidUserId),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: "", strRoomId: "r", role: .anchor), ErrorCode.invalidUserSig),
        (EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: "garbage", strRoomId: "r", role: .anchor), ErrorCode.invalidUserSig),
        (EnterRoomParams(
            sdkAppId: Harness.appId, userId: "u",
            userSig: UserSig.make(sdkAppId: Harness.appId, secretKey: "wrong", identifier: "u", time: 1_700_000_000, expire: 3600).encoded(),
            strRoomId: "r", role: .anchor), ErrorCode.userSigCheckFailed),
        (EnterRoomParams(
            sdkAppId: Harness.appId, userId: "u",
            userSig: UserSig.make(sdkAppId: Harness.appId, secretKey: Harness.secret, identifier: "other", time: 1_700_000_000, expire: 3600).encoded(),
            strRoomId: "r", role: .anchor), ErrorCode.userSigCheckFailed),
        (EnterRoomParams(
            sdkAppId: Harness.appId, userId: "u",
            userSig: UserSig.make(sdkAppId: Harness.appId, secretKey: Harness.secret, identifier: "u", time: 1_600_000_000, expire: 3600).encoded(),
            strRoomId: "r", role: .anchor), ErrorCode.userSigCheckFailed),
    ])
    func badEnterParameters(params: EnterRoomParams, code: Int) {
        var h = Harness()
        let actions = h.machine.handle(.enterRoom(params), from: 99, at: h.now)
        guard case .send(99, .onEnterRoom(let result, let message?), _)? = actions.first else {
            Issue.record("no onEnterRoom: \(actions)")
            return
        }
        #expect(result == code)
        #expect(!message.isEmpty)
        #expect(h.machine.roomIds.isEmpty, "a refused enter creates no room")
    }

    @Test func idsWithEveryCharacterTRTCAllowsEnter() {
        var h = Harness()
        let room = "Shop 1 !#$%&()+-:;<=.>?@[]^_{}|~,"
        let actions = h.enter("host_1-A", room: room, role: .anchor)
        #expect(h.events(actions, for: "host_1-A") == [.onEnterRoom(result: 1, errMsg: nil)])
        #expect(h.machine.roomIds == [room])
    }

    @Test func anchorLimit() {
        var h = Harness(maxAnchors: 2)
        h.enter("a1", role: .anchor)
        h.enter("a2", role: .anchor)
        let third = h.enter("a3", role: .anchor)
        #expect(h.events(third, for: "a3").first == .onEnterRoom(result: ErrorCode.tooManyAnchors, errMsg: "room \"r1\" already has 2 anchors, the most allowed"))
        // Audience can still enter, and a replaced anchor frees its own seat.
        let viewer = h.enter("v")
        #expect(h.events(viewer, for: "v").first == .onEnterRoom(result: 1))
        let replacement = h.enter("a2", role: .anchor, connection: "a2b")
        #expect(h.events(replacement, for: "a2b").first == .onEnterRoom(result: 1))
    }

    @Test func enterReturnsATypedOutcome() {
        var h = Harness(maxAnchors: 1)
        h.enter("a1", role: .anchor)
        func params(_ user: String, sig: String? = nil) -> EnterRoomParams {
            EnterRoomParams(sdkAppId: Harness.appId, userId: user, userSig: sig ?? h.sig(user), strRoomId: "r1", role: .anchor)
        }
        #expect(h.machine.enter(params("a2"), from: 50, at: h.now) == .refused(LiveRoomError(ErrorCode.tooManyAnchors, "room \"r1\" already has 1 anchors, the most allowed")))
        guard case .refused(let bad) = h.machine.enter(params("a2", sig: "garbage"), from: 51, at: h.now) else {
            Issue.record("a bad UserSig was let in")
            return
        }
        #expect(bad.code == ErrorCode.invalidUserSig || bad.code == ErrorCode.userSigCheckFailed, "\(bad)")
        #expect(h.machine.membership(of: 50) == nil && h.machine.membership(of: 51) == nil, "refused sessions stay out")
        // The replacing session of a1 gets in: the old one is told, the new one hears onEnterRoom.
        guard case .entered(let actions) = h.machine.enter(params("a1"), from: 52, at: h.now) else {
            Issue.record("a1's new session was refused")
            return
        }
        #expect(actions.contains(.send(1, .onExitRoom(reason: 1), .normal)))
        #expect(actions.contains(.send(52, .onEnterRoom(result: 1), .normal)))
        #expect(h.machine.membership(of: 52)! == ("r1", "a1"))
    }

    @Test func requestsBeforeEnterAreRefused() {
        var h = Harness()
        let actions = h.machine.handle(.requestMic, from: 7, at: h.now)
        #expect(actions == [.send(7, .onError(errCode: ErrorCode.notInRoom, errMsg: "enter a room first", requestType: "requestMic"), .normal)])
    }
}

@Suite struct MicConnectionTests {
    @Test func switchRoleToAnchorNeedsApproval() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        let refused = h.send(.switchRole(.anchor), from: "fan")
        guard case .onSwitchRole(let code, let message, .audience)? = h.events(refused, for: "fan").first else {
            Issue.record("no onSwitchRole")
            return
        }
        #expect(code == ErrorCode.micApprovalRequired)
        #expect(message.contains("requestMic"))
        #expect(h.events(refused, for: "host").isEmpty)
    }

    @Test func anchorMaySwitchBackAndForth() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        let down = h.send(.switchRole(.audience), from: "host")
        #expect(h.events(down, for: "host") == [.onSwitchRole(errCode: 0, errMsg: "", role: .audience)])
        #expect(h.events(down, for: "fan") == [.onRemoteUserLeaveRoom(userId: "host", reason: 3)])
        let up = h.send(.switchRole(.anchor), from: "host")
        #expect(h.events(up, for: "fan") == [.onRemoteUserEnterRoom(userId: "host")])
    }

    @Test func requestAcceptedBringsAudienceOnMic() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("host2", role: .anchor)
        h.enter("fan")
        h.enter("other")
        let ask = h.send(.requestMic, from: "fan")
        #expect(h.events(ask, for: "host") == [.onMicRequest(userId: "fan")])
        #expect(h.events(ask, for: "host2") == [.onMicRequest(userId: "fan")])
        #expect(h.events(ask, for: "other").isEmpty)

        let accept = h.send(.acceptMic(userId: "fan"), from: "host")
        #expect(h.events(accept, for: "fan") == [
            .onMicRequestResult(userId: "host", accepted: true, reason: "accepted by host"), .onSwitchRole(errCode: 0, errMsg: "", role: .anchor),
        ])
        #expect(h.events(accept, for: "other") == [.onRemoteUserEnterRoom(userId: "fan")])
        #expect(h.events(accept, for: "host") == [.onRemoteUserEnterRoom(userId: "fan")])
        #expect(h.machine.describe("r1")?.users.first { $0.userId == "fan" }?.onMic == true)

        // A second accept finds no request.
        let again = h.send(.acceptMic(userId: "fan"), from: "host2")
        #expect(h.events(again, for: "host2").first.map { if case .onError(let c, _, _) = $0 { c } else { 0 } } == ErrorCode.noSuchUserOrRequest)

        // end-mic sends the co-host back.
        let end = h.send(.endMic(userId: "fan"), from: "host2")
        #expect(h.events(end, for: "fan") == [.onSwitchRole(errCode: 0, errMsg: "", role: .audience)])
        #expect(h.events(end, for: "other") == [.onRemoteUserLeaveRoom(userId: "fan", reason: 3)])
        // Approval ended with the mic.
        let up = h.send(.switchRole(.anchor), from: "fan")
        #expect(h.events(up, for: "fan").first.map { if case .onSwitchRole(let c, _, _) = $0 { c } else { 0 } } == ErrorCode.micApprovalRequired)
    }

    @Test func requestRejected() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        h.send(.requestMic, from: "fan")
        let reject = h.send(.rejectMic(userId: "fan"), from: "host")
        #expect(h.events(reject, for: "fan") == [.onMicRequestResult(userId: "host", accepted: false, reason: "rejected by host")])
        #expect(h.machine.describe("r1")?.users.first { $0.userId == "fan" }?.role == .audience)
    }

    @Test func invitationAccepted() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        let invite = h.send(.inviteMic(userId: "fan"), from: "host")
        #expect(h.events(invite, for: "fan") == [.onMicInvitation(userId: "host")])
        let accept = h.send(.acceptInvitation, from: "fan")
        #expect(h.events(accept, for: "host") == [
            .onMicInvitationResult(userId: "fan", accepted: true, reason: "accepted"), .onRemoteUserEnterRoom(userId: "fan"),
        ])
        #expect(h.events(accept, for: "fan") == [.onSwitchRole(errCode: 0, errMsg: "", role: .anchor)])
    }

    @Test func invitationRejected() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        h.send(.inviteMic(userId: "fan"), from: "host")
        let reject = h.send(.rejectInvitation, from: "fan")
        #expect(h.events(reject, for: "host") == [.onMicInvitationResult(userId: "fan", accepted: false, reason: "rejected by fan")])
        let late = h.send(.acceptInvitation, from: "fan")
        #expect(h.events(late, for: "fan").first.map { if case .onError(let c, _, _) = $0 { c } else { 0 } } == ErrorCode.noSuchUserOrRequest)
    }

    @Test func onlyAnchorsAnswerAndOnlyCoHostsAreEnded() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("host2", role: .anchor)
        h.enter("fan")
        h.enter("fan2")
        h.send(.requestMic, from: "fan")
        func code(_ actions: [RoomsStateMachine.Action], _ name: String) -> Int? {
            h.events(actions, for: name).first.map { if case .onError(let c, _, _) = $0 { c } else { 0 } }
        }
        #expect(code(h.send(.acceptMic(userId: "fan"), from: "fan2"), "fan2") == ErrorCode.anchorOnly)
        #expect(code(h.send(.inviteMic(userId: "fan"), from: "fan2"), "fan2") == ErrorCode.anchorOnly)
        #expect(code(h.send(.endMic(userId: "host2"), from: "host"), "host") == ErrorCode.notCoHost)
        #expect(code(h.send(.inviteMic(userId: "nobody"), from: "host"), "host") == ErrorCode.noSuchUserOrRequest)
        #expect(code(h.send(.requestMic, from: "host"), "host") == ErrorCode.audienceOnly)
    }

    @Test func micAcceptRespectsAnchorLimit() {
        var h = Harness(maxAnchors: 1)
        h.enter("host", role: .anchor)
        h.enter("fan")
        h.send(.requestMic, from: "fan")
        let accept = h.send(.acceptMic(userId: "fan"), from: "host")
        guard case .onMicRequestResult("host", false, let reason)? = h.events(accept, for: "fan").first else {
            Issue.record("no refusal: \(accept)")
            return
        }
        #expect(reason.contains("anchors"))
        #expect(h.machine.describe("r1")?.users.first { $0.userId == "fan" }?.role == .audience)
    }

    @Test func leavingDropsPendingRequests() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        h.send(.requestMic, from: "fan")
        h.send(.exitRoom, from: "fan")
        h.enter("fan")
        let accept = h.send(.acceptMic(userId: "fan"), from: "host")
        #expect(h.events(accept, for: "host").first.map { if case .onError(let c, _, _) = $0 { c } else { 0 } } == ErrorCode.noSuchUserOrRequest)
    }
}

@Suite struct RoomMessageTests {
    @Test func customMessageReachesEveryoneElseWithSeq() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("v1")
        h.enter("v2")
        let popup = #"{"cmd":"item_popup_msg","msg":{"itemNumber":1,"itemPrice":199.0,"itemTitle":"Tea","itemUrl":"https://shop/1"}}"#
        let first = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: popup)), from: "host")
        #expect(h.events(first, for: "v1") == [.onRecvCustomCmdMsg(userId: "host", cmdID: 1, seq: 1, data: popup)])
        #expect(h.events(first, for: "v2") == [.onRecvCustomCmdMsg(userId: "host", cmdID: 1, seq: 1, data: popup)])
        #expect(h.events(first, for: "host").isEmpty)
        let second = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 2, data: "b")), from: "host")
        #expect(h.events(second, for: "v1") == [.onRecvCustomCmdMsg(userId: "host", cmdID: 2, seq: 2, data: "b")])
        // Audience may send too; their seq is their own.
        let fromViewer = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 3, data: "hi")), from: "v2")
        #expect(h.events(fromViewer, for: "host") == [.onRecvCustomCmdMsg(userId: "v2", cmdID: 3, seq: 1, data: "hi")])
    }

    @Test(arguments: [(0, "x"), (11, "x"), (1, String(repeating: "x", count: 1025))])
    func invalidCustomMessages(cmdID: Int, data: String) {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("v")
        let actions = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: cmdID, data: data)), from: "host")
        #expect(h.events(actions, for: "v").isEmpty)
        #expect(h.events(actions, for: "host").first.map { if case .onError(let c, _, let t) = $0 { "\(c) \(t ?? "")" } else { "" } }
            == "\(ErrorCode.invalidCustomMessage) sendCustomCmdMsg")
    }

    @Test func thirtyMessagesPerSecond() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("v")
        for i in 0..<30 {
            let a = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "m\(i)")), from: "host")
            #expect(h.events(a, for: "v").count == 1)
        }
        let over = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "over")), from: "host")
        #expect(h.events(over, for: "v").isEmpty)
        guard case .onError(let code, let message, _)? = h.events(over, for: "host").first else {
            Issue.record("no error for message 31")
            return
        }
        #expect(code == ErrorCode.customMessageRateLimited)
        #expect(message.contains("30 messages"))
        // After 100 ms, three more tokens.
        h.advance(ms: 100)
        for _ in 0..<3 {
            #expect(h.events(h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "later")), from: "host"), for: "v").count == 1)
        }
        #expect(h.events(h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "later")), from: "host"), for: "v").isEmpty)
    }

    @Test func eightKilobytesPerSecond() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("v")
        let kb = String(repeating: "k", count: 1024)
        for _ in 0..<8 {
            #expect(h.events(h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: kb)), from: "host"), for: "v").count == 1)
        }
        let over = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "x")), from: "host")
        guard case .onError(let code, let message, _)? = h.events(over, for: "host").first else {
            Issue.record("no error past 8 KB")
            return
        }
        #expect(code == ErrorCode.customMessageRateLimited)
        #expect(message.contains("8192 bytes"))
        h.advance(ms: 1000)
        #expect(h.events(h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: kb)), from: "host"), for: "v").count == 1)
    }
}

@Suite struct AdminTests {
    @Test func dismissTellsEveryone() throws {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("v")
        let actions = try h.machine.dismissRoom("r1", at: h.now)
        #expect(h.events(actions, for: "host") == [.onExitRoom(reason: 2)])
        #expect(h.events(actions, for: "v") == [.onExitRoom(reason: 2)])
        #expect(h.machine.describe("r1") == nil)
        #expect(throws: LiveRoomError.self) { try h.machine.dismissRoom("r1", at: h.now) }
        #expect(h.machine.membership(of: h.sessions["v"]!) == nil)
    }

    @Test func removeUsers() throws {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("guest", role: .anchor)
        h.enter("v")
        let (actions, notFound) = try h.machine.removeUsers(["guest", "ghost"], from: "r1", at: h.now)
        #expect(notFound == ["ghost"])
        #expect(h.events(actions, for: "guest") == [.onExitRoom(reason: 1)])
        #expect(h.events(actions, for: "v") == [.onRemoteUserLeaveRoom(userId: "guest", reason: 2)])
    }

    @Test func groupMessageIsHighPriorityFromAdministrator() throws {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("v")
        let actions = try h.machine.sendGroupMessage("popup", to: "r1", priority: .high)
        #expect(actions.count == 2)
        #expect(actions.allSatisfy {
            if case .send(_, .onRecvCustomCmdMsg("administrator", 0, 1, "popup"), .high) = $0 { true } else { false }
        })
        #expect(throws: LiveRoomError.self) { try h.machine.sendGroupMessage("x", to: "nope", priority: .normal) }
    }

    @Test func describeListsUsersInOrder() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.advance(ms: 5)
        h.enter("v")
        let room = h.machine.describe("r1")
        #expect(room?.users.map(\.userId) == ["host", "v"])
        #expect(room?.users.map(\.role) == [.anchor, .audience])
        #expect(room?.createdAt == 1_700_000_000_000)
    }
}

@Suite struct RoomChangeRateTests {
    @Test func togglingAMuteIsLimitedAndTheRoomHearsOnlyWhatWasAdmitted() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("viewer")
        _ = h.machine.publishStarted(h.sessions["host"]!, audio: true, video: true)
        var broadcasts = 0
        for index in 0..<25 {
            let actions = h.send(.muteLocalAudio(index % 2 == 0), from: "host")
            broadcasts += h.events(actions, for: "viewer").count
            let errors = h.events(actions, for: "host").compactMap { event -> Int? in
                if case .onError(let code, _, "muteLocalAudio"?) = event { return code }
                return nil
            }
            #expect(errors == (index < 20 ? [] : [ErrorCode.roomChangeRateLimited]), "request \(index)")
        }
        #expect(broadcasts == 20, "the burst of 20 was told to the room, the rest refused")

        // The budget refills at 10 a second; custom messages have their own limits.
        h.advance(ms: 1000)
        for _ in 0..<10 { #expect(h.events(h.send(.muteLocalAudio(true), from: "host"), for: "host").isEmpty) }
        #expect(h.events(h.send(.muteLocalAudio(true), from: "host"), for: "host").count == 1)
        #expect(h.events(h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "still")), from: "host"), for: "viewer").count == 1)
    }
}

@Suite struct ShopRequestTests {
    func catalogueCommands(_ actions: [RoomsStateMachine.Action]) -> [CatalogueCommand] {
        actions.compactMap {
            if case .catalogue(let command) = $0 { return command }
            return nil
        }
    }

    @Test func anchorsChangeTheCatalogueAndAnyoneInTheRoomListsAndBuys() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        let host = h.sessions["host"]!
        let fan = h.sessions["fan"]!
        #expect(catalogueCommands(h.send(.addProduct(["itemNumber": 1]), from: "host")) == [.add(session: host, roomId: "r1", fields: ["itemNumber": 1])])
        #expect(catalogueCommands(h.send(.popProduct(itemNumber: 1, custom: true), from: "host")) == [
            .pop(session: host, roomId: "r1", userId: "host", itemNumber: 1, custom: true)
        ])
        for request in [RoomRequest.addProduct([:]), .editProduct(itemNumber: 1, changes: [:]), .removeProduct(itemNumber: 1), .popProduct(itemNumber: 1, custom: false), .unpopProduct] {
            let actions = h.send(request, from: "fan")
            #expect(catalogueCommands(actions).isEmpty)
            guard case .onError(ErrorCode.anchorOnly, _, request.type)? = h.events(actions, for: "fan").first else {
                Issue.record("\(request.type) by the audience: \(h.events(actions, for: "fan"))")
                continue
            }
        }
        #expect(catalogueCommands(h.send(.listProducts(offset: 100, limit: 50), from: "fan")) == [.list(session: fan, roomId: "r1", offset: 100, limit: 50)])
        #expect(catalogueCommands(h.send(.buyProduct(itemNumber: 1, quantity: 2, requestId: "r"), from: "fan")) == [
            .buy(session: fan, roomId: "r1", userId: "fan", itemNumber: 1, quantity: 2, requestId: "r")
        ])
    }

    /// A page of the catalogue costs a fifth of a room change: a client pages through the
    /// largest catalogue (40 pages of 13 products) at once, but a flood of listings is refused.
    @Test func cataloguePagesCountAFifthAgainstTheRoomChangeBudget() {
        var h = Harness()
        h.enter("fan", role: .audience)
        func listed(_ count: Int) -> Int {
            (0..<count).count { n in !catalogueCommands(h.send(.listProducts(offset: n * 13, limit: 100), from: "fan")).isEmpty }
        }
        #expect(listed(40) == 40)
        h.advance(ms: 10_000)
        let flood = listed(300)
        #expect(flood > 40 && flood < 300, "\(flood) of 300 listings in a burst")
    }

    @Test func buyingCountsAgainstTheRoomChangeBudget() {
        var h = Harness()
        h.enter("fan")
        var bought = 0
        var refused = 0
        for n in 0..<30 {
            let actions = h.send(.buyProduct(itemNumber: 1, quantity: 1, requestId: "r\(n)"), from: "fan")
            bought += catalogueCommands(actions).count
            if case .onError(ErrorCode.roomChangeRateLimited, _, "buyProduct")? = h.events(actions, for: "fan").first { refused += 1 }
        }
        #expect(bought == 20 && refused == 10, "a burst of 20, then refused")
        h.advance(ms: 1000)
        #expect(catalogueCommands(h.send(.buyProduct(itemNumber: 1, quantity: 1, requestId: "later"), from: "fan")).count == 1)
    }
}

@Suite struct SeatChangeTests {
    func seats(_ h: inout Harness) -> [String] {
        h.machine.takeSeatChanges().map { "\($0.session):\($0.seat.map { "\($0.roomId)/\($0.userId)" } ?? "-")" }
    }

    @Test func enteringLeavingReplacingAndDismissingAreEachToldOnce() throws {
        var h = Harness()
        h.enter("a", role: .anchor)
        h.enter("b")
        #expect(seats(&h) == ["1:r1/a", "2:r1/b"])
        #expect(seats(&h).isEmpty, "each change is told once")
        h.enter("b", connection: "b2")
        #expect(seats(&h) == ["2:-", "3:r1/b"], "a newer session of the same user takes the seat over")
        h.send(.exitRoom, from: "a")
        _ = h.machine.disconnected(h.sessions["a"]!, at: h.now)
        #expect(seats(&h) == ["1:-"], "a disconnect after exitRoom changes nothing more")
        h.enter("c", room: "r2")
        _ = try h.machine.dismissRoom("r1", at: h.now)
        #expect(seats(&h) == ["4:r2/c", "3:-"])
    }

    @Test func aRefusedEnterChangesNoSeat() {
        var h = Harness(maxRoomsPerUser: 1)
        h.enter("a", room: "r1")
        _ = h.machine.takeSeatChanges()
        let refused = h.enter("a", room: "r2", connection: "a-elsewhere")
        #expect(h.events(refused, for: "a-elsewhere").first.map { if case .onEnterRoom(let result, _) = $0 { result < 0 } else { false } } == true)
        #expect(seats(&h).isEmpty)
    }
}
