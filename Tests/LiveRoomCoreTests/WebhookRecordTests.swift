import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// The records webhooks are made from: media availability changes and PK links.
@Suite struct WebhookRecordTests {
    func media(_ h: Harness, _ actions: [RoomsStateMachine.Action]) -> [RoomRecord] {
        h.records(actions).filter { if case .mediaChanged = $0 { true } else { false } }
    }

    @Test func publishMuteUnmuteAndStopAreRecordedEvenWithNobodyElseInTheRoom() {
        var h = Harness()
        h.enter("host", role: .anchor)
        let started = h.machine.publishStarted(h.sessions["host"]!, audio: true, video: true)
        #expect(media(h, started) == [.mediaChanged(roomId: "r1", userId: "host", video: true, audio: true)])
        #expect(media(h, h.send(.muteLocalVideo(true), from: "host")) == [.mediaChanged(roomId: "r1", userId: "host", video: false, audio: nil)])
        #expect(media(h, h.send(.muteLocalVideo(true), from: "host")).isEmpty, "no change, no record")
        #expect(media(h, h.send(.muteLocalAudio(true), from: "host")) == [.mediaChanged(roomId: "r1", userId: "host", video: nil, audio: false)])
        #expect(media(h, h.send(.muteLocalAudio(false), from: "host")) == [.mediaChanged(roomId: "r1", userId: "host", video: nil, audio: true)])
        // Becoming audience stops the media first, then the role changes.
        let switched = h.records(h.send(.switchRole(.audience), from: "host"))
        #expect(switched.first == .mediaChanged(roomId: "r1", userId: "host", video: nil, audio: false), "\(switched)")
        #expect(switched.last == .roleChanged(roomId: "r1", userId: "host", role: .audience, at: h.millis))
    }

    @Test func leavingRecordsOnlyTheExit() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        _ = h.machine.publishStarted(h.sessions["host"]!, audio: true, video: true)
        let left = h.records(h.send(.exitRoom, from: "host"))
        #expect(left == [.userLeft(roomId: "r1", userId: "host", at: h.millis, reason: "exit")])
        // A second session of the same user replaces the first: the old one leaves, no media records.
        h.enter("host", role: .anchor, connection: "host-1")
        _ = h.machine.publishStarted(h.sessions["host-1"]!, audio: true, video: false)
        let replaced = h.records(h.enter("host", role: .anchor, connection: "host-2"))
        #expect(!replaced.contains { if case .mediaChanged = $0 { true } else { false } }, "\(replaced)")
        #expect(replaced.contains(.userLeft(roomId: "r1", userId: "host", at: h.millis, reason: "replaced")))
    }

    @Test func pkLinksAreRecordedWhenMadeAndEnded() {
        var h = Harness()
        h.enter("hostA", room: "a", role: .anchor)
        h.enter("hostB", room: "b", role: .anchor)
        // A link by consent: hostB accepts hostA's request.
        #expect(h.records(h.send(.requestPK(room: .string("b"), userId: "hostB"), from: "hostA")).isEmpty)
        let made = h.records(h.send(.answerPK(room: .string("a"), userId: "hostA", accept: true), from: "hostB"))
        let link = PKLink(caller: PKEnd(roomId: "a", userId: "hostA"), callee: PKEnd(roomId: "b", userId: "hostB"), since: h.millis)
        #expect(made == [.pkLinked(link, onlyRoom: nil)])
        let ended = h.records(h.send(.exitRoom, from: "hostB"))
        #expect(ended.first == .pkUnlinked(link, onlyRoom: nil), "\(ended)")
    }
}
