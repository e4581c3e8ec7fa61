import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// Rooms say when their publishers may have changed (what a mix of the room draws), so the
/// server asks only those rooms' tasks to look again.
@Suite struct PublisherNewsTests {
    func news(_ h: Harness, _ actions: [RoomsStateMachine.Action]) -> Set<String> {
        h.machine.roomsWithPublisherNews(in: actions)
    }

    @Test func anAnchorAloneSaysWhenItPublishesMutesAndLeaves() {
        var h = Harness()
        h.enter("host", role: .anchor)
        #expect(news(h, h.machine.publishStarted(h.sessions["host"]!, audio: true, video: true)) == ["r1"])
        #expect(news(h, h.send(.muteLocalVideo(true), from: "host")) == ["r1"])
        #expect(news(h, h.send(.muteLocalVideo(true), from: "host")).isEmpty, "no change")
        h.enter("fan")
        #expect(news(h, h.send(.sendCustomCmdMsg(CustomCmdMsg(cmdID: 1, data: "hi")), from: "fan")).isEmpty)
        #expect(news(h, h.send(.requestMic, from: "fan")).isEmpty)
        #expect(news(h, h.send(.switchRole(.audience), from: "host")) == ["r1"])
        #expect(news(h, h.send(.exitRoom, from: "host")) == ["r1"])
    }

    @Test func linkedRoomsHearOfEachOthersAnchors() {
        var h = Harness()
        h.enter("hostA", room: "A", role: .anchor)
        h.enter("hostB", room: "B", role: .anchor)
        _ = h.machine.publishStarted(h.sessions["hostA"]!, audio: true, video: true)
        h.allowPK(from: "A", into: "B")
        #expect(news(h, h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA")) == ["A", "B"])
        // hostA's mute changes what a mix of room B draws too.
        #expect(news(h, h.send(.muteLocalAudio(true), from: "hostA")) == ["A", "B"])
        // Room B stops receiving hostA's video: only B's view changed.
        #expect(news(h, h.send(.updateOtherRoomForwardMode(room: .string("A"), mode: .audio), from: "hostB")) == ["B"])
        #expect(news(h, h.send(.disconnectOtherRoom, from: "hostA")) == ["A", "B"])
    }
}
