import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

@Suite struct PublishingTests {
    func media(_ actions: [RoomsStateMachine.Action]) -> [MediaCommand] {
        actions.compactMap { if case .media(let m) = $0 { m } else { nil } }
    }

    func errorCode(_ events: [ServerEvent]) -> Int? {
        events.first.flatMap { if case .onError(let c, _, _) = $0 { c } else { nil } }
    }

    @Test func onlyAnchorsPublish() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        #expect(errorCode(h.events(h.send(.publish(sdp: "v=0"), from: "fan"), for: "fan")) == ErrorCode.audienceCannotPublish)
        let publish = h.send(.publish(sdp: "offer"), from: "host")
        #expect(media(publish) == [.publish(session: h.sessions["host"]!, roomId: "r1", userId: "host", sdp: "offer")])
    }

    @Test func availabilityFollowsPublishMuteAndLeave() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        let started = h.machine.publishStarted(h.sessions["host"]!, audio: true, video: true)
        #expect(h.events(started, for: "fan") == [
            .onUserVideoAvailable(userId: "host", available: true), .onUserAudioAvailable(userId: "host", available: true),
        ])
        #expect(h.events(started, for: "host").isEmpty)

        // A late entrant learns what is available.
        let late = h.enter("late")
        #expect(h.events(late, for: "late").contains(.onUserVideoAvailable(userId: "host", available: true)))

        let mute = h.send(.muteLocalVideo(true), from: "host")
        #expect(h.events(mute, for: "fan") == [.onUserVideoAvailable(userId: "host", available: false)])
        #expect(h.events(h.send(.muteLocalVideo(true), from: "host"), for: "fan").isEmpty, "no change, no event")
        let unmute = h.send(.muteLocalVideo(false), from: "host")
        #expect(h.events(unmute, for: "fan") == [.onUserVideoAvailable(userId: "host", available: true)])

        let leave = h.send(.exitRoom, from: "host")
        #expect(media(leave).contains(.stopPublishing(roomId: "r1", userId: "host")))
        #expect(media(leave).contains(.closeSession(h.sessions["host"]!)))
        #expect(h.events(leave, for: "fan").prefix(2) == [
            .onUserVideoAvailable(userId: "host", available: false), .onUserAudioAvailable(userId: "host", available: false),
        ])
    }

    @Test func subscribeNeedsAPublisher() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        #expect(errorCode(h.events(h.send(.subscribe(userId: "host", sdp: "o"), from: "fan"), for: "fan")) == ErrorCode.notPublishing)
        _ = h.machine.publishStarted(h.sessions["host"]!, audio: true, video: false)
        let subscribe = h.send(.subscribe(userId: "host", sdp: "o"), from: "fan")
        #expect(media(subscribe) == [.subscribe(session: h.sessions["fan"]!, roomId: "r1", userId: "fan", publisherId: "host", sdp: "o")])
    }

    @Test func coHostStopsPublishingWhenMicEnds() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        h.enter("watcher")
        h.send(.inviteMic(userId: "fan"), from: "host")
        h.send(.acceptInvitation, from: "fan")
        #expect(media(h.send(.publish(sdp: "o"), from: "fan")).count == 1)
        _ = h.machine.publishStarted(h.sessions["fan"]!, audio: true, video: true)
        let end = h.send(.endMic(userId: "fan"), from: "host")
        #expect(media(end) == [.stopPublishing(roomId: "r1", userId: "fan")])
        #expect(h.events(end, for: "watcher") == [
            .onUserVideoAvailable(userId: "fan", available: false), .onUserAudioAvailable(userId: "fan", available: false),
            .onRemoteUserLeaveRoom(userId: "fan", reason: 3),
        ])
        #expect(h.machine.publishStarted(h.sessions["fan"]!, audio: true, video: true).isEmpty, "audience cannot start publishing late")
    }
}
