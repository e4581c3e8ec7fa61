import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// Cross-room PK in the room core: who sees whom, where subscriptions go, forward modes,
/// and what ends a link.
@Suite struct PKTests {
    func media(_ actions: [RoomsStateMachine.Action]) -> [MediaCommand] {
        actions.compactMap { if case .media(let m) = $0 { m } else { nil } }
    }

    /// hostA (publishing audio and video) and fanA in room A, hostB and fanB in room B, linked by hostA.
    func linked() -> Harness {
        var h = Harness()
        h.enter("hostA", room: "A", role: .anchor)
        h.enter("fanA", room: "A")
        h.enter("hostB", room: "B", role: .anchor)
        h.enter("fanB", room: "B")
        _ = h.machine.publishStarted(h.sessions["hostA"]!, audio: true, video: true)
        h.allowPK(from: "A", into: "B")
        #expect(h.events(h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA"), for: "hostA") == [
            .onConnectOtherRoom(userId: "hostB", errCode: 0, errMsg: ""),
            .onRemoteUserEnterRoom(userId: "hostB"),
        ])
        return h
    }

    @Test func bothRoomsSeeTheOtherAnchorAndSubscribeInItsRoom() {
        var h = linked()
        #expect(h.machine.pkAnchors(in: "B") == [PKEnd(roomId: "A", userId: "hostA")])
        // A newcomer to room B learns of hostA and what it sends.
        let late = h.enter("late", room: "B")
        #expect(h.events(late, for: "late").contains(.onUserVideoAvailable(userId: "hostA", available: true)))
        let subscribe = h.send(.subscribe(userId: "hostA", sdp: "o"), from: "fanB")
        #expect(media(subscribe) == [.subscribe(session: h.sessions["fanB"]!, roomId: "A", userId: "fanB", publisherId: "hostA", sdp: "o")])
        // hostA's mute reaches room B too.
        #expect(h.events(h.send(.muteLocalAudio(true), from: "hostA"), for: "fanB") == [.onUserAudioAvailable(userId: "hostA", available: false)])
        #expect(h.machine.pkPublisherStates(in: "B").map(\.roomId) == ["A"])
    }

    /// What WHEP (the watch page) plays: the room's own publishers, then the PK anchors it sees
    /// who publish; a subscription to a PK anchor goes to its room, as signaling's does.
    @Test func aRoomsPlayablePublishersIncludeItsPublishingPKAnchors() throws {
        var h = linked()
        #expect(h.machine.visiblePublishers(in: "B") == ["hostA"], "hostB does not publish")
        _ = h.machine.publishStarted(h.sessions["hostB"]!, audio: false, video: true)
        #expect(h.machine.visiblePublishers(in: "B") == ["hostB", "hostA"])
        #expect(h.machine.visiblePublishers(in: "A") == ["hostA", "hostB"])
        #expect(h.machine.session(of: "fanB", in: "B") == h.sessions["fanB"])
        #expect(h.machine.session(of: "fanB", in: "A") == nil)
        let actions = try h.machine.subscription(of: h.sessions["fanB"]!, to: "hostA", sdp: "o")
        #expect(media(actions) == [.subscribe(session: h.sessions["fanB"]!, roomId: "A", userId: "fanB", publisherId: "hostA", sdp: "o")])
        #expect(throws: LiveRoomError.self) { try h.machine.subscription(of: h.sessions["fanB"]!, to: "nobody", sdp: "o") }
        _ = h.send(.disconnectOtherRoom, from: "hostA")
        #expect(h.machine.visiblePublishers(in: "B") == ["hostB"])
        #expect(throws: LiveRoomError.self) { try h.machine.subscription(of: h.sessions["fanB"]!, to: "hostA", sdp: "o") }
    }

    @Test func roomAndUserIdsAreCheckedAsTRTCChecksThem() {
        let h = Harness()
        for good in ["room1", "shop 1", "a!#$%&()+-:;<=.>?@[]^_{}|~,", String(repeating: "r", count: 64)] {
            #expect(h.machine.isValidStringRoomId(good), "\(good)")
        }
        for bad in ["", "bad\nroom", "a/b", "é", String(repeating: "r", count: 65)] {
            #expect(!h.machine.isValidStringRoomId(bad), "\(bad)")
        }
        #expect(h.machine.isValidUserId("viewer-1a_B") && h.machine.isValidUserId(String(repeating: "u", count: 32)))
        for bad in ["", "no spaces", "<b>", String(repeating: "u", count: 33)] {
            #expect(!h.machine.isValidUserId(bad), "\(bad)")
        }
    }

    @Test func aForwardModeHidesAKindAndPausesSubscriptions() {
        var h = linked()
        let audioOnly = h.send(.updateOtherRoomForwardMode(room: .string("A"), mode: .audio), from: "hostB")
        #expect(h.events(audioOnly, for: "fanB") == [.onUserVideoAvailable(userId: "hostA", available: false)])
        #expect(media(audioOnly).contains(.setForwarding(
            sessions: [h.sessions["hostB"]!, h.sessions["fanB"]!], publisherRoomId: "A", publisherId: "hostA", audio: true, video: false)))
        // A subscription made now is paused from the start; room A is not affected.
        let subscribe = media(h.send(.subscribe(userId: "hostA", sdp: "o"), from: "fanB"))
        #expect(subscribe.last == .setForwarding(sessions: [h.sessions["fanB"]!], publisherRoomId: "A", publisherId: "hostA", audio: true, video: false))
        #expect(h.machine.pkPublisherStates(in: "B").first?.state.video == false)
        // Only rooms it is linked with, and only anchors.
        #expect(h.events(h.send(.updateOtherRoomForwardMode(room: .string("C"), mode: .none), from: "hostB"), for: "hostB") == [
            .onUpdateOtherRoomForwardMode(errCode: ErrorCode.pkNotConnected, errMsg: "your room has no PK link with room \"C\""),
        ])
    }

    @Test func leavingSwitchingRoleAndDismissingEndLinks() {
        var h = linked()
        let left = h.send(.exitRoom, from: "hostA")
        #expect(h.events(left, for: "fanB").suffix(1) == [.onRemoteUserLeaveRoom(userId: "hostA", reason: 0)])
        #expect(media(left).contains(.unsubscribe(session: h.sessions["fanB"]!, publisherId: "hostA", roomId: "A")))
        #expect(h.machine.pkLinks(of: "B").isEmpty)

        h = linked()
        #expect(h.events(h.send(.switchRole(.audience), from: "hostB"), for: "fanA").contains(.onRemoteUserLeaveRoom(userId: "hostB", reason: 0)))
        #expect(h.machine.pkLinks(of: "A").isEmpty)

        h = linked()
        let dismissed = try! h.machine.dismissRoom("A", at: h.now)
        #expect(h.events(dismissed, for: "fanB").contains(.onRemoteUserLeaveRoom(userId: "hostA", reason: 0)))
        #expect(h.events(dismissed, for: "fanA") == [.onExitRoom(reason: 2)], "the dismissed room hears only that")
        #expect(h.machine.pkLinks(of: "B").isEmpty)
    }

    @Test func pkRequestsCountAgainstTheRoomChangeBudgetAndUnansweredOnesExpire() {
        var h = Harness()
        h.enter("hostA", room: "A", role: .anchor)
        for n in 0..<25 { h.enter("host\(n)", room: "R\(n)", role: .anchor) }
        var asked = 0
        var refused = 0
        for n in 0..<25 {
            let actions = h.send(.requestPK(room: .string("R\(n)"), userId: "host\(n)"), from: "hostA")
            if !h.events(actions, for: "host\(n)").isEmpty { asked += 1 }
            if case .onError(ErrorCode.roomChangeRateLimited, _, "requestPK")? = h.events(actions, for: "hostA").first { refused += 1 }
        }
        #expect(asked == 10 && refused == 5, "10 requests wait at most; a burst of 20, then refused: \(asked) asked")
        // Nobody answers: each asker hears -3326 once the timeout has passed, and nothing is kept.
        h.advance(ms: 31_000)
        let expired = h.events(h.machine.expirePKRequests(now: h.now.monotonic), for: "hostA")
        #expect(expired.count == 10 && expired.allSatisfy {
            if case .onConnectOtherRoom(_, ErrorCode.pkRequestTimeout, _) = $0 { true } else { false }
        })
        #expect(h.machine.pkRequests.isEmpty)
    }

    @Test func aLinkNeedsTheOtherAnchorsConsent() throws {
        var h = Harness()
        h.enter("hostA", room: "A", role: .anchor)
        h.enter("hostB", room: "B", role: .anchor)
        h.enter("fanB", room: "B")
        func code(_ actions: [RoomsStateMachine.Action], for name: String) -> Int? {
            h.events(actions, for: name).compactMap { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { nil } }.first
        }
        // A stranger's link is refused, and room B sees nothing of it.
        let refused = h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA")
        #expect(code(refused, for: "hostA") == ErrorCode.pkConsentRequired)
        #expect(h.events(refused, for: "fanB").isEmpty && h.machine.pkLinks(of: "B").isEmpty)

        // Only an anchor sets the allow-list; the shop then checks that it owns the room's shop.
        #expect(h.events(h.send(.setPKAllowList(rooms: [.string("A")]), from: "fanB"), for: "fanB").map(\.name) == ["onError"])
        let set = h.send(.setPKAllowList(rooms: [.string("A"), .string("B")]), from: "hostB")
        #expect(set == [.catalogue(.pkAllowList(session: h.sessions["hostB"]!, roomId: "B", rooms: [.string("A")]))], "its own room is left out")
        #expect(h.events(h.machine.setPKAllowList([.string("A")], in: "B"), for: "hostB") == [.onPKAllowList(rooms: [.string("A")])])
        #expect(code(h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA"), for: "hostA") == 0)
        _ = h.send(.disconnectOtherRoom, from: "hostA")

        // Cleared, the link needs a request again; an accepted one links.
        _ = h.machine.setPKAllowList([], in: "B")
        #expect(code(h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA"), for: "hostA") == ErrorCode.pkConsentRequired)
        _ = h.send(.requestPK(room: .string("B"), userId: "hostB"), from: "hostA")
        #expect(code(h.send(.answerPK(room: .string("A"), userId: "hostA", accept: true), from: "hostB"), for: "hostA") == 0)
        #expect(h.machine.pkLinks(of: "B").count == 1)

        // A server run open (TRTC's behaviour) links without consent.
        var configuration = h.machine.configuration
        configuration.openPKLinks = true
        var open = Harness()
        open.machine = RoomsStateMachine(configuration: configuration)
        open.enter("hostA", room: "A", role: .anchor)
        open.enter("hostB", room: "B", role: .anchor)
        let linked = open.events(open.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA"), for: "hostA")
        #expect(linked.first == .onConnectOtherRoom(userId: "hostB", errCode: 0, errMsg: ""))
    }

    @Test func waitingRequestsAreBoundedAndHoldNoSlots() {
        var h = Harness()
        h.enter("hostB", room: "B", role: .anchor)
        // Eleven strangers ask hostB: ten wait, the eleventh hears -7404.
        var codes: [Int] = []
        for n in 0...10 {
            h.enter("host\(n)", room: "R\(n)", role: .anchor)
            let asked = h.send(.requestPK(room: .string("B"), userId: "hostB"), from: "host\(n)")
            codes.append(h.events(asked, for: "host\(n)").compactMap { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { nil } }.first ?? 0)
        }
        #expect(codes == Array(repeating: 0, count: 10) + [ErrorCode.tooManyPKRequests])
        // The waiting requests take none of room B's three PK slots: its partners still link.
        for partner in ["P1", "P2", "P3"] {
            h.enter("host\(partner)", room: partner, role: .anchor)
            h.allowPK(from: "P1", "P2", "P3", into: "B")
            let linked = h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "host\(partner)")
            #expect(h.events(linked, for: "host\(partner)").first == .onConnectOtherRoom(userId: "hostB", errCode: 0, errMsg: ""))
        }
    }

    @Test func collidingUserIdsAreRefused() {
        var h = Harness()
        h.enter("host", room: "A", role: .anchor)
        h.enter("host", room: "B", role: .anchor, connection: "hostInB")
        let answer = h.events(h.send(.connectOtherRoom(room: .string("B"), userId: "host"), from: "host"), for: "host")
        #expect(answer.first.flatMap { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { nil } } == ErrorCode.pkInvalidParameter)
    }
}
