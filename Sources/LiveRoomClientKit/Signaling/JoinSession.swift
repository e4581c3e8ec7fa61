import Foundation
import HummingbirdWSClient
import LiveRoomProtocol
import LiveRoomTransport
import LiveRoomWire
import Logging
import NIOSSL
import Synchronization

/// What `liveroom join` was asked to do.
public struct JoinOptions: Sendable {
    /// `http://HOST:PORT` of the room server, or several comma-separated (the nodes of a
    /// cluster): the session connects to the first it can reach and, when a connection
    /// cannot be made (at start or on a reconnect), tries the next.
    public var server: String
    /// The room to enter: a numeric room (`roomId`) or a string room (`strRoomId`), two different rooms.
    public var room: RoomID
    public var userId: String
    public var role: Role
    public var sdkAppId: UInt64
    public var userSig: String
    /// The permission ticket for this room, for servers that require one; empty for none.
    public var privateMapKey: String
    /// A PEM file of certificates to trust for a `https://` server (a private CA or a
    /// self-signed server); nil trusts the system's CA bundle.
    public var caFile: String?
    /// Reconnect attempts after the signaling connection drops, and the wait before each (the
    /// vendor SDKs' `connectRetryCount` 5 and `connectRetryInterval` 1000 ms); 0 attempts ends
    /// the session with the connection.
    public var reconnectAttempts = 5
    public var reconnectInterval: Duration = .seconds(1)
    /// Leave after this long; nil means when standard input ends or on `leave`.
    public var duration: Duration?
    /// What to publish and record.
    public var media: MediaOptions

    public init(
        server: String, room: RoomID, userId: String, role: Role, sdkAppId: UInt64, userSig: String, duration: Duration?,
        media: MediaOptions = MediaOptions(), privateMapKey: String = "", caFile: String? = nil
    ) {
        self.caFile = caFile
        self.privateMapKey = privateMapKey
        self.server = server
        self.room = room
        self.userId = userId
        self.role = role
        self.sdkAppId = sdkAppId
        self.userSig = userSig
        self.duration = duration
        self.media = media
    }

    /// Most URLs `--server` may list.
    public static let maxServers = 16

    /// The signaling WebSocket URLs of a comma-separated `--server` list, in its order.
    public static func signalingURLs(server: String) throws(LiveRoomError) -> [String] {
        let parts = server.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count <= maxServers else {
            throw LiveRoomError(ErrorCode.invalidField, "--server lists \(parts.count) URLs; at most \(maxServers)")
        }
        guard !parts.contains(where: \.isEmpty) else {
            throw LiveRoomError(ErrorCode.invalidField, "--server has an empty URL in \"\(server)\" (URLs are separated by single commas)")
        }
        var urls: [String] = []
        for part in parts { urls.append(try signalingURL(server: part)) }
        return urls
    }

    /// The signaling WebSocket URL for an `http(s)://` server URL.
    public static func signalingURL(server: String) throws(LiveRoomError) -> String {
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        if base.hasPrefix("http://") { return "ws://" + base.dropFirst(7) + "/ws" }
        if base.hasPrefix("https://") {
            // TLS names the server it expects (SNI and the certificate check), which an IP address cannot be.
            let authority = base.dropFirst(8).prefix { $0 != "/" }
            let host = authority.hasPrefix("[") ? String(authority.dropFirst().prefix { $0 != "]" }) : String(authority.prefix { $0 != ":" })
            if IPAddress(host) != nil {
                throw LiveRoomError(ErrorCode.invalidField, "an https:// server is reached by its host name (TLS names the server), not by the address \(host)")
            }
            return "wss://" + base.dropFirst(8) + "/ws"
        }
        if base.hasPrefix("ws://") || base.hasPrefix("wss://") { return base.hasSuffix("/ws") ? base : base + "/ws" }
        throw LiveRoomError(ErrorCode.invalidField, "--server must be an http:// or https:// URL, not \"\(server)\"")
    }
}

/// A `liveroom join` session: enters the room, prints every event, sends the commands read
/// from standard input, and leaves on `leave`, at the end of input or after the duration.
public struct JoinSession: Sendable {
    public let options: JoinOptions
    public let printer: EventPrinter
    let logger: Logger

    public init(options: JoinOptions, printer: EventPrinter, logger: Logger) {
        self.options = options
        self.printer = printer
        self.logger = logger
    }

    /// How the session ended.
    public enum Outcome: Sendable, Equatable {
        /// Left the room (onExitRoom with this reason).
        case exited(reason: Int)
        /// enterRoom was refused with this code.
        case refused(code: Int)
        /// The connection closed before the session ended.
        case disconnected
    }

    private final class State: Sendable {
        let outcome = Mutex<Outcome?>(nil)
        let leaving = Mutex(false)
        /// Whether enterRoom succeeded on the current connection.
        let entered = Mutex(false)
        let media: Mutex<MediaSignalingStateMachine>
        /// TRTC's 30 messages and 8 KB a second, shared by our custom and SEI messages.
        let limiter = Mutex(CustomMessageLimiter())
        /// The item of a `pop … sei|both` waiting for its onPopProduct, whose message goes as SEI.
        let popSEI = Mutex<Int?>(nil)

        init(media: MediaSignalingStateMachine) {
            self.media = Mutex(media)
        }
    }

    /// Runs the session. `commands` yields the lines of standard input and finishes at its end.
    /// When the signaling connection drops after the room was entered, the session reconnects
    /// as TRTC's SDKs do: `onConnectionLost`, then `onTryToReconnect` before each attempt (up to
    /// ``JoinOptions/reconnectAttempts``, ``JoinOptions/reconnectInterval`` apart), and on success
    /// `onConnectionRecovery`: it enters again with its current role (the server kept the seat
    /// for its reconnect grace) and publishes and subscribes anew. After the last attempt it
    /// gives up with `onError` -3308.
    public func run(commands: AsyncStream<String>) async throws -> Outcome {
        let urls = try JoinOptions.signalingURLs(server: options.server)
        // The URL that worked last; a connection that cannot be made moves on to the next.
        var current = 0
        let state = State(media: MediaSignalingStateMachine(userId: options.userId, wantsToPublish: options.media.publish != nil))
        let options = self.options
        let printer = self.printer
        let media = try await MediaSession(userId: options.userId, options: options.media, printer: printer)
        let relay = CommandRelay(commands)
        var role = options.role
        var attempts = 0
        var everEntered = false
        while true {
            state.entered.withLock { $0 = false }
            var failure: (any Error)?
            var ending = ""
            let first = current
            for offset in 0..<urls.count {
                let index = (first + offset) % urls.count
                do {
                    ending = try await connect(url: urls[index], role: role, state: state, media: media, relay: relay, recovering: attempts > 0)
                    failure = nil
                } catch {
                    failure = error
                    ending = "\(error)"
                }
                // Reached (it answered, or the room was entered before the connection failed): stay with it.
                if failure == nil || state.entered.withLock({ $0 }) {
                    current = index
                    break
                }
                if offset + 1 < urls.count {
                    logger.info("Server cannot be reached; trying the next", metadata: ["url": "\(urls[index])", "error": "\(failure!)"])
                }
                current = (index + 1) % urls.count
            }
            if let failure, !everEntered, !state.entered.withLock({ $0 }) {
                relay.stop()
                await media.shutdown()
                throw failure
            }
            relay.detach()
            if state.entered.withLock({ $0 }) {
                everEntered = true
                attempts = 0
            }
            let ended = state.outcome.withLock { $0 } != nil || state.leaving.withLock { $0 }
            guard everEntered, !ended, options.reconnectAttempts > 0 else { break }
            // Lost: what was negotiated on the old connection is gone with it.
            if attempts == 0 { printer.print(["event": "onConnectionLost", "reason": .string(ending)]) }
            let current = state.media.withLock { machine -> (Role?, Set<String>) in
                let snapshot = (machine.role, machine.subscribedUsers)
                machine = MediaSignalingStateMachine(userId: options.userId, wantsToPublish: options.media.publish != nil)
                return snapshot
            }
            role = current.0 ?? role
            await media.stopPublishing()
            for user in current.1 { await media.closeSubscription(userId: user) }
            attempts += 1
            guard attempts <= options.reconnectAttempts else {
                printer.printError(LiveRoomError(
                    ErrorCode.reconnectFailed, "the signaling connection was lost and \(options.reconnectAttempts) reconnect attempts failed; giving up"))
                break
            }
            try? await Task.sleep(for: options.reconnectInterval)
            printer.print(["event": "onTryToReconnect"])
        }
        relay.stop()
        await media.shutdown()
        return state.outcome.withLock { $0 } ?? .disconnected
    }

    /// How the connection ended: the server's close frame, or nothing (it just went away).
    private func connect(url: String, role: Role, state: State, media: MediaSession, relay: CommandRelay, recovering: Bool) async throws -> String {
        let commands = relay.nextConnection()
        let options = self.options
        let printer = self.printer
        var tls: TLSConfiguration?
        if url.hasPrefix("wss://") {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let caFile = options.caFile { configuration.trustRoots = .file(caFile) }
            tls = configuration
        }
        let close = try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 16), tlsConfiguration: tls, logger: logger) { inbound, outbound, _ in
            let enter = RoomRequest.enterRoom(
                EnterRoomParams(sdkAppId: options.sdkAppId, userId: options.userId, userSig: options.userSig, room: options.room, role: role,
                    privateMapKey: options.privateMapKey))
            try await outbound.write(.text(enter.json.jsonText))

            /// Sends exitRoom once; if onExitRoom does not come within 5 s, closes the connection.
            @Sendable func leave() async {
                guard state.leaving.withLock({ let was = $0; $0 = true; return !was }) else { return }
                try? await outbound.write(.text(RoomRequest.exitRoom.json.jsonText))
                try? await Task.sleep(for: .seconds(5))
                if !Task.isCancelled { try? await outbound.close(.normalClosure, reason: "no answer to exitRoom") }
            }

            /// Carries out the media state machine's decisions.
            @Sendable func perform(_ actions: [MediaSignalingStateMachine.Action]) async {
                for action in actions {
                    do {
                        switch action {
                        case .publish:
                            let offer = try await media.makePublishOffer()
                            try await outbound.write(.text(RoomRequest.publish(sdp: offer).json.jsonText))
                        case .unpublish:
                            await media.stopPublishing()
                            try await outbound.write(.text(RoomRequest.unpublish.json.jsonText))
                        case .subscribe(let userId):
                            let offer = try await media.makeSubscribeOffer(userId: userId)
                            try await outbound.write(.text(RoomRequest.subscribe(userId: userId, sdp: offer).json.jsonText))
                        case .unsubscribe(let userId):
                            try await outbound.write(.text(RoomRequest.unsubscribe(userId: userId).json.jsonText))
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

            await withTaskGroup(of: Void.self) { group in
                // Notifications from the media plane.
                group.addTask {
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
                            try? await outbound.write(.text(RoomRequest.restartIce(userId: userId, sdp: offer).json.jsonText))
                        }
                    }
                }
                // Commands from standard input.
                group.addTask {
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
                                try? await outbound.write(.text(RoomRequest.popProduct(itemNumber: itemNumber, custom: custom).json.jsonText))
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
                if let duration = options.duration {
                    group.addTask {
                        try? await Task.sleep(for: duration)
                        if !Task.isCancelled { await leave() }
                    }
                }
                // Events from the server; the session ends on onExitRoom or a refused enterRoom.
                do {
                    receiving: for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let json = try? JSONValue.parse(text) else { continue }
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
                                break receiving
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
                            break receiving
                        default:
                            break
                        }
                    }
                } catch {
                    printer.printError(LiveRoomError(ErrorCode.notInRoom, "signaling connection failed: \(error)"))
                }
                group.cancelAll()
            }
        }
        return close.map { "the server closed the connection (\($0.closeCode)\($0.reason.map { ": " + $0 } ?? ""))" } ?? "the connection ended"
    }
}

/// Standard input's lines, handed to one signaling connection after another: a connection that
/// ends stops only its own stream, and lines typed while reconnecting wait for the next one.
final class CommandRelay: Sendable {
    private struct State {
        var current: AsyncStream<String>.Continuation?
        var pending: [String] = []
        var ended = false
    }
    private final class Box: Sendable {
        let state = Mutex(State())
    }
    private let box = Box()
    private let pump: Task<Void, Never>

    init(_ lines: AsyncStream<String>) {
        let box = self.box
        pump = Task {
            for await line in lines {
                box.state.withLock { state in
                    if let current = state.current { current.yield(line) } else { state.pending.append(line) }
                }
            }
            box.state.withLock { state in
                state.ended = true
                state.current?.finish()
            }
        }
    }

    /// Whether standard input has ended.
    var inputEnded: Bool { box.state.withLock { $0.ended } }

    /// The lines for a new connection, starting with those typed while there was none.
    func nextConnection() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        box.state.withLock { state in
            state.current?.finish()
            for line in state.pending { continuation.yield(line) }
            state.pending.removeAll()
            if state.ended { continuation.finish() } else { state.current = continuation }
        }
        return stream
    }

    /// The connection ended: lines wait for the next one.
    func detach() {
        box.state.withLock { state in
            state.current?.finish()
            state.current = nil
        }
    }

    func stop() {
        pump.cancel()
        box.state.withLock { $0.current?.finish() }
    }
}

/// Reads standard input lines on a thread of its own, so a blocked read never holds up the session.
public func standardInputLines() -> AsyncStream<String> {
    let (stream, continuation) = AsyncStream.makeStream(of: String.self)
    let thread = Thread {
        while let line = readLine(strippingNewline: true) {
            continuation.yield(line)
        }
        continuation.finish()
    }
    thread.start()
    return stream
}
