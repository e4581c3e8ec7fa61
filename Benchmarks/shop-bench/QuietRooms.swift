import BenchSupport
import Foundation
import HummingbirdWSClient
import LiveRoomAuth
import LiveRoomProtocol
import Logging
import Synchronization

/// Rooms beside the sale: in each, one user sends a custom message every `interval` and another
/// receives it. Each message's delivery delay (sent to received, one clock: both users are in
/// this process) is kept under the phase it was sent in, so the delays without the sale and
/// during it can be compared.
final class QuietRooms: Sendable {
    enum Phase: Int, Sendable {
        /// While the buyers enter: not counted.
        case warmup
        case before, sale, after
    }

    struct Sample: Sendable {
        var phase: Phase
        var milliseconds: Double
    }

    private struct State {
        var phase = Phase.warmup
        /// When each message went out, by room and number.
        var sent: [String: (ContinuousClock.Instant, Phase)] = [:]
        var samples: [Sample] = []
        /// Connections that ended before `stop` (closed by the server: a ping timeout, an overflow).
        var dropped = 0
        var inRoom = 0
        var stopping = false
    }

    private let state = Mutex(State())
    private let stopSignal: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation
    let count: Int
    let interval: Duration

    init(count: Int, interval: Duration) {
        self.count = count
        self.interval = interval
        (stopSignal, stopContinuation) = AsyncStream<Void>.makeStream()
    }

    var phase: Phase {
        get { state.withLock { $0.phase } }
        set { state.withLock { $0.phase = newValue } }
    }

    /// The delays sent in `phase`, in milliseconds; messages never received are not in it.
    func delays(in phase: Phase) -> [Double] {
        state.withLock { $0.samples.filter { $0.phase == phase }.map(\.milliseconds) }
    }

    /// Messages sent in `phase` and never received.
    func lost(in phase: Phase) -> Int {
        state.withLock { $0.sent.values.count { $0.1 == phase } }
    }

    var dropped: Int { state.withLock { $0.dropped } }
    var everyoneIn: Bool { state.withLock { $0.inRoom == count * 2 } }

    /// Ends the senders and receivers.
    func stop() {
        state.withLock { $0.stopping = true }
        stopContinuation.finish()
    }

    /// Runs every room's two users until ``stop()``. `tag` keeps rooms of different runs apart.
    func run(url: String, tag: String, sdkAppId: UInt64, secretKey: String, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                let room = RoomID.string("quiet-\(tag)-\(index)")
                for sends in [false, true] {
                    let userId = sends ? "quiet-sender-\(index)" : "quiet-receiver-\(index)"
                    group.addTask {
                        await self.user(userId, of: room, url: url, sdkAppId: sdkAppId, secretKey: secretKey, sends: sends, logger: logger)
                    }
                }
            }
        }
    }

    private func user(_ userId: String, of room: RoomID, url: String, sdkAppId: UInt64, secretKey: String, sends: Bool, logger: Logger) async {
        let stopSignal = self.stopSignal
        let interval = self.interval
        let key = room.key
        do {
            try await inRoom(as: userId, of: room, url: url, sdkAppId: sdkAppId, secretKey: secretKey, logger: logger) { messages, outbound in
                self.state.withLock { $0.inRoom += 1 }
                let stopper = Task {
                    for await _ in stopSignal {}
                    try? await outbound.close(.normalClosure, reason: "shop-bench done")
                }
                defer { stopper.cancel() }
                if sends {
                    let sender = Task {
                        var number = 0
                        while !Task.isCancelled {
                            // Senders wait until everyone is in, so no message goes to an empty room.
                            if self.everyoneIn {
                                let sentAt = ContinuousClock.now
                                self.state.withLock { $0.sent["\(key)/\(number)"] = (sentAt, $0.phase) }
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
                        guard case .text(let text) = message, case .onRecvCustomCmdMsg(_, _, _, let data)? = try? ServerEvent.parse(text) else { continue }
                        let now = ContinuousClock.now
                        self.state.withLock { state in
                            guard let (sentAt, phase) = state.sent.removeValue(forKey: "\(key)/\(data)") else { return }
                            let elapsed = now - sentAt
                            state.samples.append(Sample(phase: phase, milliseconds: Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15))
                        }
                    }
                }
            }
        } catch {
            // Counted below.
        }
        state.withLock { if !$0.stopping { $0.dropped += 1 } }
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

    init(url: String, tag: String, count: Int, intervalMs: Int, sdkAppId: UInt64, secretKey: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = [
            "--quiet-child", url, "--quiet-tag", tag, "--quiet-rooms", String(count), "--quiet-interval-ms", String(intervalMs),
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

    /// Stops the users and returns their figures.
    func finish() async throws -> QuietFigures {
        send("stop")
        let text = try await line(within: .seconds(30)) { $0.hasPrefix("{") }
        process.waitUntilExit()
        let json = try JSONValue.parse(text)
        return QuietFigures(
            before: json["before"]?.arrayValue?.compactMap(\.doubleValue) ?? [], during: json["sale"]?.arrayValue?.compactMap(\.doubleValue) ?? [],
            lost: json["lost"]?.intValue ?? 0, dropped: json["dropped"]?.intValue ?? 0)
    }

    func kill() {
        if process.isRunning { process.terminate() }
    }

    /// The child's side: runs the rooms and follows the parent's commands until `stop`.
    static func serve(url: String, tag: String, count: Int, intervalMs: Int, sdkAppId: UInt64, secretKey: String, logger: Logger) async {
        let rooms = QuietRooms(count: count, interval: .milliseconds(intervalMs))
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
                let figures: JSONValue = [
                    "before": .array(rooms.delays(in: .before).map { .number($0) }), "sale": .array(rooms.delays(in: .sale).map { .number($0) }),
                    "lost": .number(Double(rooms.lost(in: .before) + rooms.lost(in: .sale))), "dropped": .number(Double(rooms.dropped)),
                ]
                FileHandle.standardOutput.write(Data((figures.jsonText + "\n").utf8))
                return
            default: continue
            }
        }
    }
}
