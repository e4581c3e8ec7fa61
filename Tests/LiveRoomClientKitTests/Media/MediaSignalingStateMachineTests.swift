import LiveRoomProtocol
import Testing

@testable import LiveRoomClientKit

@Suite struct MediaSignalingStateMachineTests {
    @Test func anchorPublishesOnEnterAndAnswer() {
        var machine = MediaSignalingStateMachine(userId: "host", wantsToPublish: true)
        #expect(machine.entered(role: .anchor) == [.publish])
        #expect(machine.publishAnswered(sdp: "A") == [.startPublishing(answer: "A")])
        #expect(machine.publishAnswered(sdp: "B").isEmpty, "a second answer is ignored")
        #expect(machine.isPublishing)
    }

    @Test func withoutPublishOptionNothingIsPublished() {
        var machine = MediaSignalingStateMachine(userId: "host", wantsToPublish: false)
        #expect(machine.entered(role: .anchor).isEmpty)
    }

    @Test func micApprovalStartsAndEndMicStopsPublishing() {
        var machine = MediaSignalingStateMachine(userId: "fan", wantsToPublish: true)
        #expect(machine.entered(role: .audience).isEmpty)
        // acceptMic by an anchor: an unsolicited onSwitchRole(0) makes us anchor.
        #expect(machine.switchedRole(errCode: 0) == [.publish])
        #expect(machine.role == .anchor)
        _ = machine.publishAnswered(sdp: "A")
        // endMic: back to audience.
        #expect(machine.switchedRole(errCode: 0) == [.unpublish])
        #expect(machine.role == .audience)
        #expect(!machine.isPublishing)
    }

    @Test func ownSwitchRoleRequestsSetTheRole() {
        var machine = MediaSignalingStateMachine(userId: "host", wantsToPublish: true)
        _ = machine.entered(role: .anchor)
        _ = machine.publishAnswered(sdp: "A")
        machine.requestedRoleSwitch(to: .anchor)
        #expect(machine.switchedRole(errCode: 0).isEmpty, "already anchor: no change")
        machine.requestedRoleSwitch(to: .audience)
        #expect(machine.switchedRole(errCode: 0) == [.unpublish])
        machine.requestedRoleSwitch(to: .anchor)
        #expect(machine.switchedRole(errCode: -7003).isEmpty)
        #expect(machine.role == .audience)
        machine.requestedRoleSwitch(to: .anchor)
        #expect(machine.switchedRole(errCode: 0) == [.publish])
    }

    @Test func publishErrorAllowsALaterPublish() {
        var machine = MediaSignalingStateMachine(userId: "host", wantsToPublish: true)
        _ = machine.entered(role: .anchor)
        #expect(machine.publishFailed().isEmpty)
        #expect(!machine.isPublishing)
        machine.requestedRoleSwitch(to: .audience)
        _ = machine.switchedRole(errCode: 0)
        machine.requestedRoleSwitch(to: .anchor)
        #expect(machine.switchedRole(errCode: 0) == [.publish])
    }

    @Test func subscribesWhenMediaBecomesAvailableAndClosesWhenNone() {
        var machine = MediaSignalingStateMachine(userId: "fan", wantsToPublish: false)
        _ = machine.entered(role: .audience)
        #expect(machine.availabilityChanged(userId: "host", kind: .video, available: true) == [.subscribe(userId: "host")])
        #expect(machine.availabilityChanged(userId: "host", kind: .audio, available: true).isEmpty)
        #expect(machine.subscribeAnswered(userId: "host", sdp: "S") == [.startSubscription(userId: "host", answer: "S")])
        #expect(machine.availabilityChanged(userId: "host", kind: .video, available: false).isEmpty, "audio still flows")
        #expect(machine.availabilityChanged(userId: "host", kind: .audio, available: false) == [.closeSubscription(userId: "host")])
        #expect(machine.subscribedUsers.isEmpty)
        // Publishing again subscribes again.
        #expect(machine.availabilityChanged(userId: "host", kind: .audio, available: true) == [.subscribe(userId: "host")])
    }

    @Test func ownAvailabilityIsIgnored() {
        var machine = MediaSignalingStateMachine(userId: "host", wantsToPublish: true)
        #expect(machine.availabilityChanged(userId: "host", kind: .video, available: true).isEmpty)
    }

    @Test func answerForAnAnchorThatStoppedIsUnsubscribed() {
        var machine = MediaSignalingStateMachine(userId: "fan", wantsToPublish: false)
        _ = machine.availabilityChanged(userId: "host", kind: .video, available: true)
        _ = machine.availabilityChanged(userId: "host", kind: .video, available: false)
        #expect(machine.subscribeAnswered(userId: "host", sdp: "S") == [.unsubscribe(userId: "host")])
    }

    @Test func subscribeErrorsFailTheOldestOffer() {
        var machine = MediaSignalingStateMachine(userId: "fan", wantsToPublish: false)
        _ = machine.availabilityChanged(userId: "a", kind: .video, available: true)
        _ = machine.availabilityChanged(userId: "b", kind: .video, available: true)
        _ = machine.subscribeFailed()
        #expect(machine.subscribedUsers == ["b"])
        // a can be subscribed again on its next availability change.
        #expect(machine.availabilityChanged(userId: "a", kind: .audio, available: true) == [.subscribe(userId: "a")])
    }

    @Test func leavingAnchorClosesItsSubscription() {
        var machine = MediaSignalingStateMachine(userId: "fan", wantsToPublish: false)
        _ = machine.availabilityChanged(userId: "host", kind: .video, available: true)
        _ = machine.subscribeAnswered(userId: "host", sdp: "S")
        #expect(machine.remoteUserLeft(userId: "host") == [.closeSubscription(userId: "host")])
        #expect(machine.remoteUserLeft(userId: "host").isEmpty)
    }

    @Test func reportedRoleWinsOverGuessing() {
        var machine = MediaSignalingStateMachine(userId: "me", wantsToPublish: true)
        #expect(machine.entered(role: .anchor) == [.publish])
        _ = machine.publishAnswered(sdp: "v=0")
        // A no-op switch to anchor reported as anchor must not be taken for a toggle.
        #expect(machine.switchedRole(errCode: 0, reported: .anchor).isEmpty)
        #expect(machine.switchedRole(errCode: 0, reported: .audience) == [.unpublish])
    }
}
