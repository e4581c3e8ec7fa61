import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// TRTC's integer `roomId` and string `strRoomId` are separate namespaces: numeric room 123 and
/// string room "123" are two rooms that never see each other.
@Suite struct RoomNamespaceTests {
    /// Numeric room 123 holds `host` (anchor) and `fan`; string room "123" holds `other` (anchor) and `watcher`.
    func twoRooms() -> Harness {
        var h = Harness()
        h.enter("host", roomNumber: 123, role: .anchor)
        h.enter("fan", roomNumber: 123)
        h.enter("other", room: "123", role: .anchor)
        h.enter("watcher", room: "123")
        return h
    }

    @Test func numericAndStringRoomsOfTheSameDigitsAreDifferentRooms() {
        var h = Harness()
        let host = h.enter("host", roomNumber: 123, role: .anchor)
        #expect(h.records(host).first == .roomCreated(roomId: RoomID.number(123).key, at: h.millis))
        h.enter("fan", roomNumber: 123)
        // The string room of the same digits is created anew, and its anchor is not announced to the numeric room.
        let other = h.enter("other", room: "123", role: .anchor)
        #expect(h.records(other).first == .roomCreated(roomId: "123", at: h.millis))
        #expect(h.events(other, for: "host").isEmpty && h.events(other, for: "fan").isEmpty)
        #expect(h.events(other, for: "other") == [.onEnterRoom(result: 1)], "no anchor of the numeric room is shown")
        let watcher = h.enter("watcher", room: "123")
        #expect(h.events(watcher, for: "watcher") == [.onEnterRoom(result: 1), .onRemoteUserEnterRoom(userId: "other")])

        #expect(h.machine.describe(RoomID.number(123).key)?.users.map(\.userId) == ["fan", "host"], "entered at the same millisecond: by user id")
        #expect(h.machine.describe("123")?.users.map(\.userId) == ["other", "watcher"])
        #expect(h.machine.describe(RoomID.number(123).key)?.room == .number(123))
        #expect(h.machine.describe("123")?.room == .string("123"))
    }

    @Test func membersOfOneDoNotSeeTheOthersEvents() {
        var h = twoRooms()
        let message = h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "hi", reliable: true, ordered: true)), from: "host")
        #expect(h.events(message, for: "fan") == [.onRecvCustomCmdMsg(userId: "host", cmdID: 1, seq: 1, data: "hi")])
        #expect(h.events(message, for: "watcher").isEmpty && h.events(message, for: "other").isEmpty)

        _ = h.machine.publishStarted(h.sessions["other"]!, audio: true, video: true)
        let mute = h.send(.muteLocalVideo(true), from: "other")
        #expect(h.events(mute, for: "watcher") == [.onUserVideoAvailable(userId: "other", available: false)])
        #expect(h.events(mute, for: "fan").isEmpty && h.events(mute, for: "host").isEmpty)

        // The numeric room's audience cannot subscribe to the string room's anchor.
        let subscribe = h.send(.subscribe(userId: "other", sdp: "v=0\r\n"), from: "fan")
        #expect(h.events(subscribe, for: "fan") == [.error(LiveRoomError(ErrorCode.notPublishing, #"user "other" is not publishing in room 123"#), requestType: "subscribe")])

        let leave = h.send(.exitRoom, from: "host")
        #expect(h.events(leave, for: "fan") == [.onRemoteUserLeaveRoom(userId: "host", reason: 0)])
        #expect(h.events(leave, for: "watcher").isEmpty && h.events(leave, for: "other").isEmpty)
    }

    @Test func dismissingTheNumericRoomLeavesTheStringRoom() throws {
        var h = twoRooms()
        let actions = try h.machine.dismissRoom(RoomID.number(123).key, at: h.now)
        #expect(h.events(actions, for: "host") == [.onExitRoom(reason: 2)] && h.events(actions, for: "fan") == [.onExitRoom(reason: 2)])
        #expect(h.events(actions, for: "other").isEmpty && h.events(actions, for: "watcher").isEmpty)
        #expect(h.machine.roomIds == ["123"])
        #expect(throws: LiveRoomError(ErrorCode.noSuchUserOrRequest, "room 123 does not exist")) {
            _ = try h.machine.dismissRoom(RoomID.number(123).key, at: h.now)
        }
        let removed = try h.machine.removeUsers(["watcher", "host"], from: "123", at: h.now)
        #expect(removed.notFound == ["host"])
    }

    @Test func roomIdWinsOverStrRoomIdAndNeitherIsRefused() {
        var h = Harness()
        let both = h.machine.handle(
            .enterRoom(EnterRoomParams(sdkAppId: Harness.appId, userId: "u", userSig: h.sig("u"), roomId: 123, strRoomId: "shop1", role: .anchor)),
            from: 1, at: h.now)
        #expect(both.contains(.send(1, .onEnterRoom(result: 1), .normal)))
        #expect(h.machine.roomIds == [RoomID.number(123).key])

        let neither = h.machine.handle(
            .enterRoom(EnterRoomParams(sdkAppId: Harness.appId, userId: "v", userSig: h.sig("v"), roomId: 0, strRoomId: "", role: .anchor)),
            from: 2, at: h.now)
        #expect(neither.first == .send(2, .onEnterRoom(result: ErrorCode.invalidRoomId, errMsg: "strRoomId is empty and roomId is not set"), .normal))
    }

    @Test func aStringRoomCannotTakeANumericRoomsKey() {
        var h = Harness()
        h.enter("host", roomNumber: 5, role: .anchor)
        // "*5" is the numeric room's key, and `*` is not a strRoomId character.
        let forged = h.enter("intruder", room: RoomID.number(5).key, role: .anchor)
        #expect(h.events(forged, for: "intruder").first == .onEnterRoom(
            result: ErrorCode.invalidRoomId, errMsg: "strRoomId may hold only letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,"))
        #expect(h.machine.describe(RoomID.number(5).key)?.users.map(\.userId) == ["host"])
    }

    @Test func messagesNameANumericRoomByItsNumber() {
        var h = Harness(maxAnchors: 1)
        h.enter("host", roomNumber: 42, role: .anchor)
        let second = h.enter("second", roomNumber: 42, role: .anchor)
        #expect(h.events(second, for: "second").first == .onEnterRoom(result: ErrorCode.tooManyAnchors, errMsg: "room 42 already has 1 anchors, the most allowed"))
        let again = h.machine.handle(
            .enterRoom(EnterRoomParams(sdkAppId: Harness.appId, userId: "host", userSig: h.sig("host"), roomId: 7, role: .anchor)),
            from: h.sessions["host"]!, at: h.now)
        #expect(again.first == .send(h.sessions["host"]!, .onEnterRoom(result: ErrorCode.enterRoomRefused, errMsg: "this connection is already in room 42; call exitRoom first"), .normal))
    }
}
