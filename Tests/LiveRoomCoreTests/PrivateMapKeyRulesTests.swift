import LiveRoomAuth
import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// With `requirePrivateMapKey`, the key's privileges decide creating the room, entering, entering
/// or switching as an anchor, sending and receiving; mic approval grants sending.
@Suite struct PrivateMapKeyRulesTests {
    static let audioVideo = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
    static let audioOnly = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nm=video 0 UDP/TLS/RTP/SAVPF 96\r\n"

    func refusal(_ events: [ServerEvent]) -> (code: Int, message: String)? {
        for event in events {
            switch event {
            case .onEnterRoom(let result, let message) where result < 0: return (result, message ?? "")
            case .onError(let code, let message, _): return (code, message)
            case .onSwitchRole(let code, let message, _) where code != 0: return (code, message)
            default: continue
            }
        }
        return nil
    }

    /// Enters and returns the refusal, if any (the harness learns the session first).
    func enterRefusal(
        _ h: inout Harness, _ user: String, room: String = "r1", roomNumber: UInt32 = 0, role: Role = .audience, privateMapKey: String = ""
    ) -> (code: Int, message: String)? {
        let actions = h.enter(user, room: room, roomNumber: roomNumber, role: role, privateMapKey: privateMapKey)
        return refusal(h.events(actions, for: user))
    }

    func media(_ actions: [RoomsStateMachine.Action]) -> [MediaCommand] {
        actions.compactMap { if case .media(let m) = $0 { m } else { nil } }
    }

    @Test func enteringNeedsAKeyForThisUserAndRoomWithTheRightBits() {
        var h = Harness(requirePrivateMapKey: true)
        #expect(enterRefusal(&h, "host", role: .anchor)?.message.contains("requires a PrivateMapKey") == true)
        let otherRoom = h.key("host", room: "r2", .all)
        #expect(enterRefusal(&h, "host", role: .anchor, privateMapKey: otherRoom)?.message.contains(#"is for room "r2", not room "r1""#) == true)
        let otherUser = h.key("fan", .all)
        #expect(enterRefusal(&h, "host", role: .anchor, privateMapKey: otherUser)?.code == ErrorCode.privilegeCheckFailed)
        // Entering a room that does not exist yet creates it, which needs bit 1.
        let noCreate = h.key("host", [.enterRoom, .sendAudio, .sendVideo])
        #expect(enterRefusal(&h, "host", role: .anchor, privateMapKey: noCreate)?.message.contains("creating room") == true)
        #expect(h.machine.describe("r1") == nil, "nothing was created")
        #expect(enterRefusal(&h, "host", role: .anchor, privateMapKey: h.key("host", .all)) == nil)

        // Receive-only (42): enters as audience, never as anchor; no enter bit, no entry.
        let receiveOnly = h.key("fan", .enterAndReceive)
        let asAnchor = enterRefusal(&h, "fan", role: .anchor, privateMapKey: receiveOnly)
        #expect(asAnchor?.code == ErrorCode.privilegeCheckFailed && asAnchor?.message.contains("entering as an anchor") == true, "\(String(describing: asAnchor))")
        let noEnter = h.key("fan2", [.receiveAudio, .receiveVideo])
        #expect(enterRefusal(&h, "fan2", privateMapKey: noEnter)?.message.contains("entering the room needs enter room (2)") == true)
        #expect(enterRefusal(&h, "fan", privateMapKey: receiveOnly) == nil)
    }

    @Test func sendingAndReceivingFollowTheBitsAndMicApprovalGrantsSending() {
        var h = Harness(requirePrivateMapKey: true)
        h.enter("host", role: .anchor, privateMapKey: h.key("host", .all))
        h.enter("voice", role: .anchor, privateMapKey: h.key("voice", [.enterRoom, .sendAudio, .receiveAudio]))
        h.enter("fan", privateMapKey: h.key("fan", .enterAndReceive))
        h.enter("ears", privateMapKey: h.key("ears", [.enterRoom, .receiveAudio]))

        // An audio-only key publishes audio, not video.
        let video = refusal(h.events(h.send(.publish(sdp: Self.audioVideo), from: "voice"), for: "voice"))
        #expect(video?.code == ErrorCode.privilegeCheckFailed && video?.message.contains("sending video needs send video (16)") == true, "\(String(describing: video))")
        #expect(media(h.send(.publish(sdp: Self.audioOnly), from: "voice")).count == 1)

        _ = h.machine.publishStarted(h.sessions["host"]!, audio: true, video: true)
        #expect(refusal(h.events(h.send(.subscribe(userId: "host", sdp: Self.audioVideo), from: "ears"), for: "ears"))?.message.contains("receiving video") == true)
        #expect(media(h.send(.subscribe(userId: "host", sdp: Self.audioOnly), from: "ears")).count == 1)
        #expect(media(h.send(.subscribe(userId: "host", sdp: Self.audioVideo), from: "fan")).count == 1)

        // A receive-only audience member approved on mic may send: the server grants it.
        h.send(.requestMic, from: "fan")
        h.send(.acceptMic(userId: "fan"), from: "host")
        #expect(h.machine.role(of: h.sessions["fan"]!) == .anchor)
        #expect(media(h.send(.publish(sdp: Self.audioVideo), from: "fan")).count == 1)
        // Off the mic the grant ends with the approval.
        h.send(.switchRole(.audience), from: "fan")
        #expect(refusal(h.events(h.send(.switchRole(.anchor), from: "fan"), for: "fan"))?.code == ErrorCode.micApprovalRequired)
    }

    @Test func aNumericRoomKeyAdmitsOnlyTheNumericRoomAndAStringKeyOnlyTheStringRoom() {
        var h = Harness(requirePrivateMapKey: true)
        // A key for numeric room 123 does not open string room "123", nor a key for "123" room 123.
        let numeric = h.key("host", roomNumber: 123, .all)
        let string = h.key("host", room: "123", .all)
        let wrongKind = enterRefusal(&h, "host", room: "123", role: .anchor, privateMapKey: numeric)
        #expect(wrongKind?.code == ErrorCode.privilegeCheckFailed && wrongKind?.message.contains(#"is for room 123, not room "123""#) == true, "\(String(describing: wrongKind))")
        let wrongKindBack = enterRefusal(&h, "host", roomNumber: 123, role: .anchor, privateMapKey: string)
        #expect(wrongKindBack?.message.contains(#"is for room "123", not room 123"#) == true, "\(String(describing: wrongKindBack))")
        #expect(h.machine.roomIds.isEmpty)
        // Each key opens its own room.
        #expect(enterRefusal(&h, "host", roomNumber: 123, role: .anchor, privateMapKey: numeric) == nil)
        #expect(enterRefusal(&h, "host", room: "123", role: .anchor, privateMapKey: string) == nil)
        #expect(h.machine.roomIds == ["*123", "123"])
        // A key for another number is refused too.
        #expect(enterRefusal(&h, "fan", roomNumber: 123, privateMapKey: h.key("fan", roomNumber: 124, .all))?.message.contains("room 124, not room 123") == true)
    }

    @Test func withoutTheRequirementKeysAreIgnored() {
        var h = Harness()
        #expect(enterRefusal(&h, "host", role: .anchor, privateMapKey: "not a key") == nil)
        #expect(media(h.send(.publish(sdp: Self.audioVideo), from: "host")).count == 1)
    }

    @Test func mediaKindsAreReadFromTheOfferMLines() {
        #expect(RoomsStateMachine.mediaKinds(in: Self.audioVideo) == (true, true))
        #expect(RoomsStateMachine.mediaKinds(in: Self.audioOnly) == (true, false))
        #expect(RoomsStateMachine.mediaKinds(in: "m=video 9 X 96\nm=application 9 X") == (false, true))
        #expect(RoomsStateMachine.mediaKinds(in: "") == (false, false))
    }
}
