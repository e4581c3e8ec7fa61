import BenchSupport
import Foundation
import HummingbirdWSClient
import LiveRoomAuth
import LiveRoomProtocol
import Logging
import Synchronization

/// Rooms beside the sale: in each, one user sends a custom message every `interval` and another
/// receives it. And the sale's own room, when it has `viewers`: its anchor sends a custom
/// message every `anchorInterval` and every viewer must receive each one. Each delivery's delay
/// (sent to received, one clock: every user is in this process) is kept under the phase it was
/// sent in, so the delays without the sale and during it can be compared.
final class QuietRooms: Sendable {
    enum Phase: Int, Sendable {
        /// While the buyers enter: not counted.
        case warmup
        case before, sale, after
    }

    struct Sample: Sendable {
        var phase: Phase
        var inSaleRoom: Bool
        var milliseconds: Double
    }

    /// A message on its way: when it went out, in which phase, and how many have yet to get it.
    private struct Sent {
        var at: ContinuousClock.Instant
        var phase: Phase
        var inSaleRoom: Bool
        var waiting: Int
    }

    private struct State {
        var phase = Phase.warmup
        /// Messages on their way, by room and number.
        var sent: [String: Sent] = [:]
        var samples: [Sample] = []
        /// Connections that ended before `stop` (closed by the server: a ping timeout, an
        /// overflow), in the quiet rooms and in the sale's room.
        var dropped = 0
        var droppedInSaleRoom = 0
        var inRoom = 0
        var stopping = false
    }

    private let state = Mutex(State())
    private let stopSignal: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation
    let count: Int
    let interval: Duration
    /// The sale's room, with its viewers and the anchor's interval; nil when it has none.
    let saleRoom: (room: RoomID, viewers: Int, anchorInterval: Duration)?

    init(count: Int, interval: Duration, saleRoom: (room: RoomID, viewers: Int, anchorInterval: Duration)? = nil) {
        self.count = count
        self.interval = interval
        self.saleRoom = saleRoom
        (stopSignal, stopContinuation) = AsyncStream<Void>.makeStream()
    }

    var phase: Phase {
        get { state.withLock { $0.phase } }
        set { state.withLock { $0.phase = newValue } }
    }

    /// The delays of the deliveries sent in `phase`, in milliseconds; those never received are not in it.
    func delays(in phase: Phase, saleRoom: Bool = false) -> [Double] {
        state.withLock { $0.samples.filter { $0.phase == phase && $0.inSaleRoom == saleRoom }.map(\.milliseconds) }
    }

    /// Deliveries of messages sent in `phase` that never arrived.
    func lost(in phase: Phase, saleRoom: Bool = false) -> Int {
        state.withLock { $0.sent.values.filter { $0.phase == phase && $0.inSaleRoom == saleRoom }.reduce(0) { $0 + $1.waiting } }
    }

    func dropped(saleRoom: Bool = false) -> Int { state.withLock { saleRoom ? $0.droppedInSaleRoom : $0.dropped } }
    var everyoneIn: Bool { state.withLock { $0.inRoom == count * 2 + (saleRoom.map { $0.viewers + 1 } ?? 0) } }

    /// Ends the senders and receivers.
    func stop() {
        state.withLock { $0.stopping = true }
        stopContinuation.finish()
    }

    /// Runs every room's users until ``stop()``. `tag` keeps rooms of different runs apart.
    func run(url: String, tag: String, sdkAppId: UInt64, secretKey: String, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                let room = RoomID.string("quiet-\(tag)-\(index)")
                for sends in [false, true] {
                    let userId = sends ? "quiet-sender-\(index)" : "quiet-receiver-\(index)"
                    group.addTask {
                        await self.user(userId, of: room, url: url, sdkAppId: sdkAppId, secretKey: secretKey, sends: sends ? (1, self.interval) : nil, logger: logger)
                    }
                }
            }
            if let (room, viewers, anchorInterval) = saleRoom {
                group.addTask {
                    await self.user("sale-anchor-\(tag)", of: room, role: .anchor, url: url, sdkAppId: sdkAppId, secretKey: secretKey, sends: (viewers, anchorInterval), logger: logger)
                }
                for index in 0..<viewers {
                    group.addTask {
                        await self.user("sale-viewer-\(tag)-\(index)", of: room, url: url, sdkAppId: sdkAppId, secretKey: secretKey, sends: nil, logger: logger)
                    }
                }
            }
        }
    }

    /// One user: a sender (`sends`: to how many receivers, how often) or a receiver.
    private func user(
        _ userId: String, of room: RoomID, role: Role = .audience, url: String, sdkAppId: UInt64, secretKey: String, sends: (receivers: Int, every: Duration)?,
        logger: Logger
    ) async {
        let stopSignal = self.stopSignal
        let key = room.key
        let inSaleRoom = room == saleRoom?.room
        do {
            try await inRoom(as: userId, of: room, role: role, url: url, sdkAppId: sdkAppId, secretKey: secretKey, logger: logger) { messages, outbound in
                self.state.withLock { $0.inRoom += 1 }
                let stopper = Task {
                    for await _ in stopSignal {}
                    try? await outbound.close(.normalClosure, reason: "shop-bench done")
                }
                defer { stopper.cancel() }
                if let (receivers, interval) = sends {
                    let sender = Task {
                        var number = 0
                        while !Task.isCancelled {
                            // Senders wait until everyone is in, so no message goes to an empty room.
                            if self.everyoneIn {
                                let sentAt = ContinuousClock.now
                                self.state.withLock { $0.sent["\(key)/\(number)"] = Sent(at: sentAt, phase: $0.phase, inSaleRoom: inSaleRoom, waiting: receivers) }
                                let message = CustomCmdMsg(cmdID: 1, data: "\(number)")
                                try await outbound.write(.text(RoomRequest.sendCustomCmdMsg(message).json.jsonText))
                                number += 1
                            }
                            try await Task.sleep(for: interval)
                        }
                    }
                    defer { sender.cancel() }
                    while try await messages.next() != nil {}
                } else {
                    while let message = try await messages.next() {
                        // Only custom messages are parsed (a viewer of the sale hears every sale too).
                        guard case .text(let text) = message, text.contains(#""event":"onRecvCustomCmdMsg""#),
                            case .onRecvCustomCmdMsg(_, _, _, let data)? = try? ServerEvent.parse(text)
                        else { continue }
                        let now = ContinuousClock.now
                        self.state.withLock { state in
                            let id = "\(key)/\(data)"
                            guard var sent = state.sent[id] else { return }
                            sent.waiting -= 1
                            state.sent[id] = sent.waiting == 0 ? nil : sent
                            let elapsed = now - sent.at
                            state.samples.append(
                                Sample(phase: sent.phase, inSaleRoom: inSaleRoom, milliseconds: Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15))
                        }
                    }
                }
            }
        } catch {
            // Counted below.
        }
        state.withLock { state in
            guard !state.stopping else { return }
            if inSaleRoom { state.droppedInSaleRoom += 1 } else { state.dropped += 1 }
        }
    }
}

/// The quiet rooms in a process of their own (shop-bench started again with `--quiet-child`),
/// so that their users do not share this process's threads with the 1,000 buyers: what is timed
/// is the server keeping rooms apart, not the bench's own clients waiting for each other. The
/// child takes one command a line on its standard input (`before`, `sale`, `after`, `stop`) and
/// answers `in` once every user is in the room, and at `stop` one JSON line of figures.
final class QuietRoomsChild: Sendable {
    private let process: Process
    private let commands: FileHandle
    private let lines: AsyncStream<String>

    init(url: String, tag: String, count: Int, intervalMs: Int, saleRoom: String, viewers: Int, anchorIntervalMs: Int, sdkAppId: UInt64, secretKey: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = [
            "--quiet-child", url, "--quiet-tag", tag, "--quiet-rooms", String(count), "--quiet-interval-ms", String(intervalMs),
            "--room", saleRoom, "--viewers", String(viewers), "--anchor-interval-ms", String(anchorIntervalMs),
            "--sdk-app-id", String(sdkAppId), "--secret-key", secretKey,
        ]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        commands = input.fileHandleForWriting
        let (lines, continuation) = AsyncStream<String>.makeStream()
        self.lines = lines
        let reading = output.fileHandleForReading
        Thread {
            var buffer = Data()
            while case let chunk = reading.availableData, !chunk.isEmpty {
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    continuation.yield(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            continuation.finish()
        }.start()
        try process.run()
    }

    func send(_ command: String) {
        try? commands.write(contentsOf: Data((command + "\n").utf8))
    }

    /// Waits for the next line that `matches`, at most `timeout`.
    private func line(within timeout: Duration, where matches: @escaping @Sendable (String) -> Bool) async throws -> String {
        let lines = self.lines
        return try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                for await line in lines where matches(line) { return line }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let line = try await group.next() ?? nil else { throw BenchError("the quiet rooms' process said nothing within \(timeout)") }
            return line
        }
    }

    func waitUntilIn() async throws {
        _ = try await line(within: .seconds(30)) { $0 == "in" }
    }

    /// Stops the users and returns their figures: the quiet rooms', and the sale room's when it has viewers.
    func finish() async throws -> (quiet: QuietFigures, saleRoom: QuietFigures?) {
        send("stop")
        let text = try await line(within: .seconds(60)) { $0.hasPrefix("{") }
        process.waitUntilExit()
        let json = try JSONValue.parse(text)
        func figures(_ json: JSONValue) -> QuietFigures {
            QuietFigures(
                before: json["before"]?.arrayValue?.compactMap(\.doubleValue) ?? [], during: json["sale"]?.arrayValue?.compactMap(\.doubleValue) ?? [],
                lost: json["lost"]?.intValue ?? 0, dropped: json["dropped"]?.intValue ?? 0)
        }
        return (figures(json), json["saleRoom"].map(figures))
    }

    func kill() {
        if process.isRunning { process.terminate() }
    }

    /// The child's side: runs the rooms and follows the parent's commands until `stop`.
    static func serve(
        url: String, tag: String, count: Int, intervalMs: Int, saleRoom: String, viewers: Int, anchorIntervalMs: Int, sdkAppId: UInt64, secretKey: String,
        logger: Logger
    ) async {
        let rooms = QuietRooms(
            count: count, interval: .milliseconds(intervalMs),
            saleRoom: viewers > 0 ? (.string(saleRoom), viewers, .milliseconds(anchorIntervalMs)) : nil)
        let running = Task { await rooms.run(url: url, tag: tag, sdkAppId: sdkAppId, secretKey: secretKey, logger: logger) }
        let (commands, continuation) = AsyncStream<String>.makeStream()
        Thread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }.start()
        let announcing = Task {
            while !rooms.everyoneIn, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
            guard rooms.everyoneIn else { return }
            FileHandle.standardOutput.write(Data("in\n".utf8))
        }
        for await command in commands {
            switch command {
            case "before": rooms.phase = .before
            case "sale": rooms.phase = .sale
            case "after": rooms.phase = .after
            case "stop":
                announcing.cancel()
                rooms.stop()
                await running.value
                func figures(saleRoom: Bool) -> JSONValue {
                    [
                        "before": .array(rooms.delays(in: .before, saleRoom: saleRoom).map { .number($0) }),
                        "sale": .array(rooms.delays(in: .sale, saleRoom: saleRoom).map { .number($0) }),
                        "lost": .number(Double(rooms.lost(in: .before, saleRoom: saleRoom) + rooms.lost(in: .sale, saleRoom: saleRoom))),
                        "dropped": .number(Double(rooms.dropped(saleRoom: saleRoom))),
                    ]
                }
                var figuresJSON = figures(saleRoom: false).objectValue ?? [:]
                if viewers > 0 { figuresJSON["saleRoom"] = figures(saleRoom: true) }
                let figures = JSONValue.object(figuresJSON)
                FileHandle.standardOutput.write(Data((figures.jsonText + "\n").utf8))
                return
            default: continue
            }
        }
    }
}
