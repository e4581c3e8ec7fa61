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

    final class State: Sendable {
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
            let connection = JoinConnection(
                outbound: outbound, state: state, media: media, printer: printer, options: options, role: role, recovering: recovering)
            try await connection.write(
                .enterRoom(
                    EnterRoomParams(
                        sdkAppId: options.sdkAppId, userId: options.userId, userSig: options.userSig, room: options.room, role: role,
                        privateMapKey: options.privateMapKey)))
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await connection.relayMediaNotifications() }
                group.addTask { await connection.run(commands, relay: relay) }
                if let duration = options.duration {
                    group.addTask {
                        try? await Task.sleep(for: duration)
                        if !Task.isCancelled { await connection.leave() }
                    }
                }
                // Events from the server; the session ends on onExitRoom or a refused enterRoom.
                do {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let json = try? JSONValue.parse(text) else { continue }
                        guard await connection.receive(json) else { break }
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
