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
