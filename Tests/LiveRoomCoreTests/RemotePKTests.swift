import LiveRoomProtocol
import Testing

@testable import LiveRoomCore

/// Cross-room PK between rooms on two nodes (cluster mode): two room machines, one per node,
/// with their PK messages carried between them by hand as the servers carry them.
@Suite struct RemotePKTests {
    /// Node n1 holds room A (hostA publishing, fanA), node n2 room B (hostB, fanB).
    struct TwoNodes {
        var n1 = Harness()
        var n2 = Harness()

        init() {
            for harness in [\TwoNodes.n1, \TwoNodes.n2] {
                var configuration = self[keyPath: harness].machine.configuration
                configuration.roomsOnOtherNodes = true
                self[keyPath: harness].machine = RoomsStateMachine(configuration: configuration)
            }
            n1.enter("hostA", room: "A", role: .anchor)
            n1.enter("fanA", room: "A")
            n2.enter("hostB", room: "B", role: .anchor)
            n2.enter("fanB", room: "B")
            _ = n1.machine.publishStarted(n1.sessions["hostA"]!, audio: true, video: true)
            n2.allowPK(from: "A", into: "B")
        }

        /// hostA asks for a link with hostB; n2 answers; the actions on (n1, n2).
        mutating func connect() -> (n1: [RoomsStateMachine.Action], n2: [RoomsStateMachine.Action]) {
            let asked = n1.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA")
            guard case .pkPeer(.link(let session, let caller, let state, let callee, let since))? = asked.first, asked.count == 1 else {
                Issue.record("expected one link message, got \(asked)")
                return ([], [])
            }
            let (result, onN2) = n2.machine.remoteLinkRequested(caller: caller, node: "n1", state: state, callee: callee, since: since)
            let onN1 = n1.machine.remoteLinkAnswered(session: session, caller: caller, callee: callee, node: "n2", result: result, since: since)
            return (onN1, onN2)
        }

        /// The PK messages in `actions`.
        static func peer(_ actions: [RoomsStateMachine.Action]) -> [PKPeerCommand] {
            actions.compactMap { if case .pkPeer(let command) = $0 { command } else { nil } }
        }
    }

    @Test func aLinkAcrossNodesIsMadeOnBothAndEachRoomSeesTheOtherAnchor() throws {
        var nodes = TwoNodes()
        let (onN1, onN2) = nodes.connect()
        #expect(nodes.n1.events(onN1, for: "hostA") == [.onConnectOtherRoom(userId: "hostB", errCode: 0, errMsg: ""), .onRemoteUserEnterRoom(userId: "hostB")])
        #expect(nodes.n1.events(onN1, for: "fanA") == [.onRemoteUserEnterRoom(userId: "hostB")], "hostB does not publish yet")
        #expect(nodes.n2.events(onN2, for: "fanB") == [
            .onRemoteUserEnterRoom(userId: "hostA"), .onUserVideoAvailable(userId: "hostA", available: true), .onUserAudioAvailable(userId: "hostA", available: true),
        ])
        // Each node records (and so sends webhooks for) its own room's side only.
        let link = PKLink(caller: PKEnd(roomId: "A", userId: "hostA"), callee: PKEnd(roomId: "B", userId: "hostB"), since: nodes.n1.millis)
        #expect(nodes.n1.records(onN1) == [.pkLinked(link, onlyRoom: "A")])
        #expect(nodes.n2.records(onN2) == [.pkLinked(link, onlyRoom: "B")])
        #expect(nodes.n1.machine.remoteNode(ofRoom: "B") == "n2" && nodes.n2.machine.remoteNode(ofRoom: "A") == "n1")
        #expect(nodes.n1.machine.pkLinks(of: "A") == [link] && nodes.n2.machine.pkLinks(of: "B") == [link])

        // fanB subscribes to hostA in room A, which the server serves from a mirror of n1's.
        let subscribe = try nodes.n2.machine.subscription(of: nodes.n2.sessions["fanB"]!, to: "hostA", sdp: "o")
        #expect(subscribe == [.media(.subscribe(session: nodes.n2.sessions["fanB"]!, roomId: "A", userId: "fanB", publisherId: "hostA", sdp: "o"))])
        #expect(nodes.n2.machine.visiblePublishers(in: "B") == ["hostA"])
        #expect(nodes.n2.machine.pkPublisherStates(in: "B").map(\.state.userId) == ["hostA"], "a mix in room B sees hostA")
        // A newcomer to room B learns of hostA and what it sends.
        let late = nodes.n2.enter("late", room: "B")
        #expect(nodes.n2.events(late, for: "late").contains(.onUserVideoAvailable(userId: "hostA", available: true)))
    }

    @Test func whatAnAnchorSendsReachesTheOtherNodesRoom() throws {
        var nodes = TwoNodes()
        _ = nodes.connect()
        // hostA mutes its audio: n1 tells n2, whose room hears of it.
        let muted = nodes.n1.send(.muteLocalAudio(true), from: "hostA")
        let messages = TwoNodes.peer(muted)
        let expected = AnchorState(publishing: PublishState(audio: true, video: true), audioMuted: true)
        #expect(messages == [.anchorState(PKEnd(roomId: "A", userId: "hostA"), expected, node: "n2")])
        let heard = nodes.n2.machine.remoteAnchorChanged(PKEnd(roomId: "A", userId: "hostA"), state: expected, from: "n1")
        #expect(nodes.n2.events(heard, for: "fanB") == [.onUserAudioAvailable(userId: "hostA", available: false)])
        // The same state again, or one from a node the link is not with, changes nothing.
        #expect(nodes.n2.machine.remoteAnchorChanged(PKEnd(roomId: "A", userId: "hostA"), state: expected, from: "n1").isEmpty)
        #expect(nodes.n2.machine.remoteAnchorChanged(PKEnd(roomId: "A", userId: "hostA"), state: AnchorState(publishing: nil), from: "n3").isEmpty)
        #expect(nodes.n2.machine.remoteAnchorChanged(PKEnd(roomId: "A", userId: "nobody"), state: AnchorState(publishing: nil), from: "n1").isEmpty)

        // hostB starts publishing: room A hears of it through n1.
        let published = nodes.n2.machine.publishStarted(nodes.n2.sessions["hostB"]!, audio: false, video: true)
        guard case .anchorState(let end, let state, "n1")? = TwoNodes.peer(published).first else {
            Issue.record("no state message for n1 in \(published)")
            return
        }
        let seen = nodes.n1.machine.remoteAnchorChanged(end, state: state, from: "n2")
        #expect(nodes.n1.events(seen, for: "fanA") == [.onUserVideoAvailable(userId: "hostB", available: true)])
        #expect(nodes.n1.machine.visiblePublishers(in: "A") == ["hostA", "hostB"])
    }

    @Test func aLinkEndedOnEitherNodeEndsOnTheOther() {
        var nodes = TwoNodes()
        _ = nodes.connect()
        // hostB leaves room B: n2 tells n1, whose room sees hostB go.
        let left = nodes.n2.send(.exitRoom, from: "hostB")
        guard case .unlink(let link, "n1")? = TwoNodes.peer(left).first else {
            Issue.record("no unlink for n1 in \(left)")
            return
        }
        #expect(nodes.n2.machine.remoteNode(ofRoom: "A") == nil, "n2 forgets hostA")
        #expect(nodes.n2.events(left, for: "fanB").contains(.onRemoteUserLeaveRoom(userId: "hostA", reason: 0)))
        let heard = nodes.n1.machine.remoteUnlinked(caller: link.caller, callee: link.callee, from: "n2")
        #expect(nodes.n1.events(heard, for: "fanA") == [.onRemoteUserLeaveRoom(userId: "hostB", reason: 0)])
        #expect(TwoNodes.peer(heard).isEmpty, "the node told is not told back")
        #expect(nodes.n1.machine.pkLinks(of: "A").isEmpty && nodes.n1.machine.peerNodes.isEmpty)

        // disconnectOtherRoom on the caller's node ends it there and tells the other.
        var again = TwoNodes()
        _ = again.connect()
        let ended = again.n1.send(.disconnectOtherRoom, from: "hostA")
        #expect(again.n1.events(ended, for: "hostA").first == .onDisconnectOtherRoom(errCode: 0, errMsg: ""))
        #expect(TwoNodes.peer(ended).count == 1)
        let told = again.n2.machine.remoteUnlinked(caller: link.caller, callee: link.callee, from: "n1")
        #expect(told.contains(.media(.unsubscribe(session: again.n2.sessions["fanB"]!, publisherId: "hostA", roomId: "A"))))
        // An unlink from a node the link is not with is ignored.
        var third = TwoNodes()
        _ = third.connect()
        #expect(third.n2.machine.remoteUnlinked(caller: link.caller, callee: link.callee, from: "n3").isEmpty)
        #expect(third.n2.machine.pkLinks(of: "B").count == 1)
    }

    @Test func aLostNodeEndsItsLinksWithoutTellingIt() {
        var nodes = TwoNodes()
        _ = nodes.connect()
        let lost = nodes.n1.machine.remoteNodeLost("n2")
        #expect(nodes.n1.events(lost, for: "fanA") == [.onRemoteUserLeaveRoom(userId: "hostB", reason: 0)])
        #expect(TwoNodes.peer(lost).isEmpty)
        #expect(nodes.n1.machine.remoteNodeLost("n2").isEmpty)
    }

    @Test func theOtherNodeChecksItsSideAndTheCallerIsCheckedAgainOnItsAnswer() {
        var nodes = TwoNodes()
        // An audience member, or nobody, cannot be linked with.
        let caller = PKEnd(roomId: "A", userId: "hostA")
        let state = AnchorState(publishing: nil)
        for (callee, code) in [(PKEnd(roomId: "B", userId: "fanB"), ErrorCode.pkUserNotFound), (PKEnd(roomId: "C", userId: "x"), ErrorCode.pkRoomNotFound)] {
            let (result, actions) = nodes.n2.machine.remoteLinkRequested(caller: caller, node: "n1", state: state, callee: callee, since: 1)
            guard case .failure(let error) = result else {
                Issue.record("\(callee) was linked")
                continue
            }
            #expect(error.code == code && actions.isEmpty)
        }
        // A caller whose room is open on this node too is refused (one room, two homes).
        nodes.n2.enter("other", room: "A", role: .anchor)
        let (twice, _) = nodes.n2.machine.remoteLinkRequested(caller: caller, node: "n1", state: state, callee: PKEnd(roomId: "B", userId: "hostB"), since: 1)
        #expect((try? twice.get()) == nil)

        // The other node's refusal reaches the caller with its code.
        let session = nodes.n1.sessions["hostA"]!
        let refused = nodes.n1.machine.remoteLinkAnswered(
            session: session, caller: caller, callee: PKEnd(roomId: "B", userId: "fanB"), node: "n2",
            result: .failure(LiveRoomError(ErrorCode.pkUserNotFound, "not an anchor")), since: 1)
        #expect(nodes.n1.events(refused, for: "hostA") == [.onConnectOtherRoom(userId: "fanB", errCode: ErrorCode.pkUserNotFound, errMsg: "not an anchor")])

        // The caller left while the other node answered: the link is undone there.
        var left = TwoNodes()
        let asked = left.n1.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA")
        guard case .pkPeer(.link(let s, let c, let st, let callee, let since))? = asked.first else {
            Issue.record("no link message")
            return
        }
        let (result, _) = left.n2.machine.remoteLinkRequested(caller: c, node: "n1", state: st, callee: callee, since: since)
        _ = left.n1.send(.exitRoom, from: "hostA")
        let answered = left.n1.machine.remoteLinkAnswered(session: s, caller: c, callee: callee, node: "n2", result: result, since: since)
        #expect(TwoNodes.peer(answered) == [.unlink(PKLink(caller: c, callee: callee, since: since), node: "n2")])
        #expect(left.n1.machine.pkLinks(of: "A").isEmpty)
    }

    @Test func aRequestAcrossNodesIsShownRejectedAndAcceptedIntoALink() throws {
        var nodes = TwoNodes()
        let (hostA, hostB) = (PKEnd(roomId: "A", userId: "hostA"), PKEnd(roomId: "B", userId: "hostB"))
        // Room B allows nobody: a link without hostB's consent is refused on its node.
        nodes.n2.allowPK(into: "B")
        let (stranger, _) = nodes.connect()
        #expect(nodes.n1.events(stranger, for: "hostA").map { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { 0 } } == [ErrorCode.pkConsentRequired])
        #expect(nodes.n2.machine.pkLinks(of: "B").isEmpty && nodes.n1.machine.pkLinks(of: "A").isEmpty)
        // hostA asks: n1 asks n2, which shows hostB the request.
        #expect(TwoNodes.peer(nodes.n1.send(.requestPK(room: .string("B"), userId: "hostB"), from: "hostA")) == [.request(caller: hostA, callee: hostB)])
        var (shown, onN2) = nodes.n2.machine.remotePKRequested(caller: hostA, node: "n1", callee: hostB, at: nodes.n2.now.monotonic)
        #expect((try? shown.get()) != nil)
        #expect(nodes.n2.events(onN2, for: "hostB") == [.onPKRequest(userId: "hostA", room: .string("A"), timeoutSec: 30)])
        #expect(nodes.n1.machine.remotePKRequestDelivered(caller: hostA, callee: hostB, result: shown).isEmpty)

        // hostB rejects: n1 tells hostA, and the request is gone on both.
        let rejected = nodes.n2.send(.answerPK(room: .string("A"), userId: "hostA", accept: false), from: "hostB")
        guard case .answer(_, _, let refusal?, "n1")? = TwoNodes.peer(rejected).first else { throw Failure("no refusal for n1: \(rejected)") }
        let heard = nodes.n1.machine.remotePKAnswered(caller: hostA, callee: hostB, error: refusal, from: "n2", at: nodes.n1.now)
        #expect(nodes.n1.events(heard, for: "hostA") == [.onConnectOtherRoom(userId: "hostB", errCode: ErrorCode.pkRejected, errMsg: "\"hostB\" rejected the PK request")])
        let again = nodes.n2.send(.answerPK(room: .string("A"), userId: "hostA", accept: true), from: "hostB")
        #expect(nodes.n2.events(again, for: "hostB").count == 1, "no request waits any more: \(again)")

        // Asked again and accepted: n1 links as connectOtherRoom does, and hostB hears it when n2 makes the link.
        _ = nodes.n1.send(.requestPK(room: .string("B"), userId: "hostB"), from: "hostA")
        (shown, onN2) = nodes.n2.machine.remotePKRequested(caller: hostA, node: "n1", callee: hostB, at: nodes.n2.now.monotonic)
        let accepted = nodes.n2.send(.answerPK(room: .string("A"), userId: "hostA", accept: true), from: "hostB")
        #expect(TwoNodes.peer(accepted) == [.answer(caller: hostA, callee: hostB, error: nil, node: "n1")])
        #expect(nodes.n2.events(accepted, for: "hostB").isEmpty, "hostB hears when the link is made")
        let linking = nodes.n1.machine.remotePKAnswered(caller: hostA, callee: hostB, error: nil, from: "n2", at: nodes.n1.now)
        guard case .link(let session, let caller, let state, let callee, let since)? = TwoNodes.peer(linking).first else { throw Failure("no link: \(linking)") }
        let (result, linkedOnN2) = nodes.n2.machine.remoteLinkRequested(caller: caller, node: "n1", state: state, callee: callee, since: since)
        #expect(nodes.n2.events(linkedOnN2, for: "hostB") == [.onConnectOtherRoom(userId: "hostA", errCode: 0, errMsg: ""), .onRemoteUserEnterRoom(userId: "hostA"),
            .onUserVideoAvailable(userId: "hostA", available: true), .onUserAudioAvailable(userId: "hostA", available: true)])
        let linkedOnN1 = nodes.n1.machine.remoteLinkAnswered(session: session, caller: caller, callee: callee, node: "n2", result: result, since: since)
        #expect(nodes.n1.events(linkedOnN1, for: "hostA") == [.onConnectOtherRoom(userId: "hostB", errCode: 0, errMsg: ""), .onRemoteUserEnterRoom(userId: "hostB")])
        #expect(nodes.n1.machine.pkLinks(of: "A").count == 1 && nodes.n2.machine.pkLinks(of: "B").count == 1)
    }

    @Test func aRequestAcrossNodesThatCannotGoOnEndsWithAnAnswerOnBothSides() throws {
        var nodes = TwoNodes()
        let (hostA, hostB, fanB) = (PKEnd(roomId: "A", userId: "hostA"), PKEnd(roomId: "B", userId: "hostB"), PKEnd(roomId: "B", userId: "fanB"))
        // The other node refuses to show it (an audience member): hostA hears why.
        _ = nodes.n1.send(.requestPK(room: .string("B"), userId: "fanB"), from: "hostA")
        let (refused, nothing) = nodes.n2.machine.remotePKRequested(caller: hostA, node: "n1", callee: fanB, at: nodes.n2.now.monotonic)
        #expect(nothing.isEmpty)
        let told = nodes.n1.machine.remotePKRequestDelivered(caller: hostA, callee: fanB, result: refused)
        #expect(nodes.n1.events(told, for: "hostA").map { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { 0 } } == [ErrorCode.pkUserNotFound])

        // Nobody answers: hostA's own node times it out; n2 forgets it without a word.
        _ = nodes.n1.send(.requestPK(room: .string("B"), userId: "hostB"), from: "hostA")
        _ = nodes.n2.machine.remotePKRequested(caller: hostA, node: "n1", callee: hostB, at: nodes.n2.now.monotonic)
        nodes.n1.advance(ms: 31_000)
        nodes.n2.advance(ms: 31_000)
        let timedOut = nodes.n1.machine.expirePKRequests(now: nodes.n1.now.monotonic)
        #expect(nodes.n1.events(timedOut, for: "hostA").map { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { 0 } } == [ErrorCode.pkRequestTimeout])
        #expect(nodes.n2.machine.expirePKRequests(now: nodes.n2.now.monotonic).isEmpty)

        // Accepted after n1 gave up: n1 says so, and hostB hears that the link will not come.
        _ = nodes.n2.machine.remotePKRequested(caller: hostA, node: "n1", callee: hostB, at: nodes.n2.now.monotonic)
        let late = nodes.n2.send(.answerPK(room: .string("A"), userId: "hostA", accept: true), from: "hostB")
        #expect(TwoNodes.peer(late) == [.answer(caller: hostA, callee: hostB, error: nil, node: "n1")])
        guard case .answer(_, _, let expired?, "n2")? = TwoNodes.peer(nodes.n1.machine.remotePKAnswered(caller: hostA, callee: hostB, error: nil, from: "n2", at: nodes.n1.now)).first
        else { throw Failure("n1 did not say the request had gone") }
        let heard = nodes.n2.machine.remotePKAnswered(caller: hostA, callee: hostB, error: expired, from: "n1", at: nodes.n2.now)
        #expect(nodes.n2.events(heard, for: "hostB").map { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { 0 } } == [ErrorCode.pkRequestTimeout])

        // An accepted request whose link never comes times out for the anchor who accepted it.
        _ = nodes.n2.machine.remotePKRequested(caller: hostA, node: "n1", callee: hostB, at: nodes.n2.now.monotonic)
        _ = nodes.n2.send(.answerPK(room: .string("A"), userId: "hostA", accept: true), from: "hostB")
        nodes.n2.advance(ms: 31_000)
        let gaveUp = nodes.n2.machine.expirePKRequests(now: nodes.n2.now.monotonic)
        #expect(nodes.n2.events(gaveUp, for: "hostB").map { if case .onConnectOtherRoom(_, let code, _) = $0 { code } else { 0 } } == [ErrorCode.pkRequestTimeout])
    }

    @Test func onOneNodeARoomThatIsNotThereIsStillNotFound() {
        var h = Harness()
        h.enter("hostA", room: "A", role: .anchor)
        let answer = h.send(.connectOtherRoom(room: .string("B"), userId: "hostB"), from: "hostA")
        #expect(h.events(answer, for: "hostA") == [.onConnectOtherRoom(userId: "hostB", errCode: ErrorCode.pkRoomNotFound, errMsg: "room \"B\" does not exist")])
        let request = h.send(.requestPK(room: .string("B"), userId: "hostB"), from: "hostA")
        #expect(h.events(request, for: "hostA") == [.onConnectOtherRoom(userId: "hostB", errCode: ErrorCode.pkRoomNotFound, errMsg: "room \"B\" does not exist")])
    }
}

/// A test's step that did not find what it needed.
private struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
