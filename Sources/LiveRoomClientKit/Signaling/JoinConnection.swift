import HummingbirdWSClient
import LiveRoomProtocol
import LiveRoomTransport
import LiveRoomWire

/// One signaling connection of a ``JoinSession``: what its tasks share (the writer, the
/// session's state and media) and what each does: carry out the media state machine's
/// decisions, pass on the media plane's notifications, send standard input's commands, and act
/// on the server's events.
struct JoinConnection: Sendable {
    let outbound: WebSocketOutboundWriter
    let state: JoinSession.State
    let media: MediaSession
    let printer: EventPrinter
    let options: JoinOptions
    let role: Role
    /// Whether this connection resumes a session whose connection dropped.
    let recovering: Bool

    func write(_ request: RoomRequest) async throws {
        try await outbound.write(.text(request.json.jsonText))
    }

    /// Sends exitRoom once; if onExitRoom does not come within 5 s, closes the connection.
    func leave() async {
        guard state.leaving.withLock({ let was = $0; $0 = true; return !was }) else { return }
        try? await write(RoomRequest.exitRoom)
        try? await Task.sleep(for: .seconds(5))
        if !Task.isCancelled { try? await outbound.close(.normalClosure, reason: "no answer to exitRoom") }
    }

    /// Carries out the media state machine's decisions.
    func perform(_ actions: [MediaSignalingStateMachine.Action]) async {
        for action in actions {
            do {
                switch action {
                case .publish:
                    let offer = try await media.makePublishOffer()
                    try await write(RoomRequest.publish(sdp: offer))
                case .unpublish:
                    await media.stopPublishing()
                    try await write(RoomRequest.unpublish)
                case .subscribe(let userId):
                    let offer = try await media.makeSubscribeOffer(userId: userId)
                    try await write(RoomRequest.subscribe(userId: userId, sdp: offer))
                case .unsubscribe(let userId):
                    try await write(RoomRequest.unsubscribe(userId: userId))
                case .startPublishing(let answer):
                    do {
                        try await media.startPublishing(answer: answer)
                    } catch {
                        printer.printError(LiveRoomError(ErrorCode.badSessionDescription, "cannot use the publish answer: \(error)"), requestType: "publish")
                        await perform(state.media.withLock { $0.publishFailed() })
                    }
                case .startSubscription(let userId, let answer):
                    do {
                        try await media.startSubscription(userId: userId, answer: answer)
                    } catch {
                        printer.printError(LiveRoomError(ErrorCode.badSessionDescription, "cannot use the subscribe answer for \(userId): \(error)"), requestType: "subscribe")
                        state.media.withLock { $0.subscriptionClosed(userId: userId) }
                    }
                case .closeSubscription(let userId):
                    await media.closeSubscription(userId: userId)
                }
            } catch {
                // The connection is going away; the session ends with it.
            }
        }
    }

    /// Notifications from the media plane: a lost connection, an ICE restart to send.
    func relayMediaNotifications() async {
        for await notification in media.notifications {
            switch notification {
            case .publishClosed(let reason):
                if reason != PeerTransport.peerClosedReason {
                    printer.printError(
                        LiveRoomError(ErrorCode.mediaConnectionLost, "the publishing connection was lost (\(reason)); publishing stopped"),
                        requestType: "publish")
                }
                await perform(state.media.withLock { $0.publishFailed() })
            case .subscriptionClosed(let userId, let reason):
                if reason != PeerTransport.peerClosedReason {
                    printer.printError(
                        LiveRoomError(ErrorCode.mediaConnectionLost, "the connection receiving \(userId) was lost (\(reason))"),
                        requestType: "subscribe")
                }
                state.media.withLock { $0.subscriptionClosed(userId: userId) }
            case .iceRestart(let userId, let offer):
                try? await write(RoomRequest.restartIce(userId: userId, sdp: offer))
            }
        }
    }

    /// Commands from standard input until it ends or the connection does.
    func run(_ commands: AsyncStream<String>, relay: CommandRelay) async {
        for await line in commands {
            do throws(LiveRoomError) {
                switch try ClientCommand.parse(line) {
                case nil: continue
                case .leave:
                    await leave()
                    return
                case .sendSEI(let data, let repeatCount):
                    do {
                        guard state.media.withLock({ $0.role }) == .anchor else {
                            throw LiveRoomError(ErrorCode.audienceCannotPublish, "only anchors send SEI: it rides on the video they publish")
                        }
                        try state.limiter.withLock { limiter throws(LiveRoomError) in
                            try limiter.admit(size: data.count, what: "SEI message", now: .now)
                        }
                        try await media.sendSEI(data: data, repeatCount: repeatCount)
                    } catch let error as LiveRoomError {
                        printer.printError(error, requestType: "sendSEIMsg")
                    } catch {
                        printer.printError(LiveRoomError(ErrorCode.seiNeedsVideo, "\(error)"), requestType: "sendSEIMsg")
                    }
                case .pop(let itemNumber, let custom, let sei):
                    state.popSEI.withLock { $0 = sei ? itemNumber : nil }
                    try? await write(RoomRequest.popProduct(itemNumber: itemNumber, custom: custom))
                case .request(let request):
                    if case .room(.sendCustomCmdMsg(let message)) = request {
                        state.limiter.withLock { $0.record(size: message.data.utf8.count, now: .now) }
                    }
                    switch request {
                    case .room(.switchRole(let role)): state.media.withLock { $0.requestedRoleSwitch(to: role) }
                    case .room(.muteLocalVideo(let mute)): await media.setMuted(.video, mute)
                    case .room(.muteLocalAudio(let mute)): await media.setMuted(.audio, mute)
                    default: break
                    }
                    try? await outbound.write(.text(request.json.jsonText))
                }
            } catch {
                printer.printError(error, requestType: "command")
            }
        }
        // End of input: leave, unless a duration says when (or this connection is over).
        if options.duration == nil, !Task.isCancelled, relay.inputEnded { await leave() }
    }

    /// One event from the server, printed and acted on; false when the session ends with it
    /// (onExitRoom, a refused enterRoom).
    func receive(_ json: JSONValue) async -> Bool {
        // An event this client does not know is printed and otherwise ignored.
        let event = try? ServerEvent.parse(json)
        // Nothing about the session is printed after onExitRoom.
        if case .onExitRoom = event { await media.leftRoom() }
        // The role an event gives is taken before the event is printed: whoever
        // reads it may act at once (an anchor's `sei` right after onEnterRoom).
        var roleActions: [MediaSignalingStateMachine.Action] = []
        switch event {
        case .onEnterRoom(let result, _)? where result >= 0:
            roleActions = state.media.withLock { $0.entered(role: role) }
        case .onSwitchRole(let errCode, _, let reported)?:
            roleActions = state.media.withLock { $0.switchedRole(errCode: errCode, reported: reported) }
        default:
            break
        }
        printer.print(json)
        switch event {
        case .onEnterRoom(let result, _)?:
            if result < 0 {
                state.outcome.withLock { $0 = .refused(code: result) }
                return false
            }
            state.entered.withLock { $0 = true }
            if recovering { printer.print(["event": "onConnectionRecovery"]) }
            await perform(roleActions)
        case .onSwitchRole?:
            await perform(roleActions)
        case .onPublishAnswer(let sdp)?:
            await perform(state.media.withLock { $0.publishAnswered(sdp: sdp) })
        case .onSubscribeAnswer(let userId, let sdp)?:
            await perform(state.media.withLock { $0.subscribeAnswered(userId: userId, sdp: sdp) })
        case .onPopProduct(let itemNumber, 0, _, let data?)?:
            if state.popSEI.withLock({ let wanted = $0 == itemNumber; $0 = nil; return wanted }) {
                do {
                    try await media.sendSEI(data: Array(data.utf8), repeatCount: ClientCommand.popUpSEIRepeatCount)
                } catch {
                    printer.printError(
                        error as? LiveRoomError ?? LiveRoomError(ErrorCode.seiNeedsVideo, "\(error)"), requestType: "sendSEIMsg")
                }
            }
        case .onIceRestartAnswer(let userId, let sdp)?:
            do {
                try await media.completeICERestart(userId: userId, answer: sdp)
            } catch {
                printer.printError(LiveRoomError(ErrorCode.badSessionDescription, "cannot use the ICE restart answer: \(error)"), requestType: "restartIce")
            }
        case .onUserVideoAvailable(let userId, let available)?:
            await perform(state.media.withLock { $0.availabilityChanged(userId: userId, kind: .video, available: available) })
        case .onUserAudioAvailable(let userId, let available)?:
            await perform(state.media.withLock { $0.availabilityChanged(userId: userId, kind: .audio, available: available) })
        case .onRemoteUserLeaveRoom(let userId, _)?:
            await perform(state.media.withLock { $0.remoteUserLeft(userId: userId) })
        case .onError(_, _, "publish"?)?:
            await perform(state.media.withLock { $0.publishFailed() })
        case .onError(_, _, "subscribe"?)?:
            await perform(state.media.withLock { $0.subscribeFailed() })
        case .onExitRoom(let reason)?:
            state.outcome.withLock { $0 = .exited(reason: reason) }
            return false
        default:
            break
        }
        return true
    }
}
