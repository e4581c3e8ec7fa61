import HummingbirdWSClient
import LiveRoomProtocol
import Logging
import Synchronization

/// When the steps of one signaling session happened (nil: not yet).
public struct SignalingTimeline: Sendable {
    /// The WebSocket connection was asked for.
    public var connecting: ContinuousClock.Instant
    /// `enterRoom` was written.
    public var enterSent: ContinuousClock.Instant?
    /// `onEnterRoom` (a success) arrived; the request went out right after.
    public var entered: ContinuousClock.Instant?
    /// The answer (or, for a PK link, `onConnectOtherRoom`) arrived.
    public var answered: ContinuousClock.Instant?

    public init(connecting: ContinuousClock.Instant) {
        self.connecting = connecting
    }
}

/// One client's signaling WebSocket: enters the room, sends one `publish`, `subscribe` or
/// `connectOtherRoom`, hands back the server's answer (empty for a PK link), and stays open (so the peer connection lives) until
/// ``close()``.
public final class SignalingSession: Sendable {
    /// The SDP answer.
    public let answer: String
    /// When enterRoom went out, onEnterRoom and the answer came.
    public let timeline: SignalingTimeline
    private let leave: AsyncStream<Void>.Continuation
    private let task: Task<Void, Never>

    private init(answer: String, timeline: SignalingTimeline, leave: AsyncStream<Void>.Continuation, task: Task<Void, Never>) {
        self.answer = answer
        self.timeline = timeline
        self.leave = leave
        self.task = task
    }

    /// Connects, enters with `enter`, sends `request` (`publish` or `subscribe`) once `onEnterRoom`
    /// succeeds and waits for its answer (`onPublishAnswer` or `onSubscribeAnswer`).
    /// `progress` sees the timeline each time a step is done (on the WebSocket's task), so a
    /// caller that gives up on the answer still knows how far it got.
    public static func open(
        url: String, enter: EnterRoomParams, request: RoomRequest, logger: Logger,
        timeout: Duration = .seconds(20), progress: (@Sendable (SignalingTimeline) -> Void)? = nil
    ) async throws -> SignalingSession {
        let (answers, answerContinuation) = AsyncThrowingStream<String, any Error>.makeStream()
        let (leaveSignal, leave) = AsyncStream<Void>.makeStream()
        let timeline = Mutex(SignalingTimeline(connecting: .now))
        @Sendable func note(_ step: WritableKeyPath<SignalingTimeline, ContinuousClock.Instant?>) {
            let now = ContinuousClock.now
            let copy = timeline.withLock { timeline in
                timeline[keyPath: step] = now
                return timeline
            }
            progress?(copy)
        }
        let task = Task {
            do {
                try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
                    try await outbound.write(.text(RoomRequest.enterRoom(enter).json.jsonText))
                    note(\.enterSent)
                    await withTaskGroup(of: Void.self) { group in
                        // Closing our side ends the server's, which ends `inbound`.
                        group.addTask {
                            for await _ in leaveSignal {}
                            try? await outbound.close(.normalClosure, reason: "bench done")
                        }
                        do {
                            for try await message in inbound.messages(maxSize: 1 << 20) {
                                guard case .text(let text) = message, let event = try? ServerEvent.parse(text) else { continue }
                                switch event {
                                case .onEnterRoom(let result, _):
                                    if result < 0 {
                                        answerContinuation.finish(throwing: BenchError("enterRoom refused: \(text)"))
                                    } else {
                                        note(\.entered)
                                        try await outbound.write(.text(request.json.jsonText))
                                    }
                                case .onPublishAnswer(let sdp), .onSubscribeAnswer(_, let sdp):
                                    note(\.answered)
                                    answerContinuation.yield(sdp)
                                    answerContinuation.finish()
                                case .onConnectOtherRoom(_, let errCode, _):
                                    if errCode == 0 {
                                        note(\.answered)
                                        answerContinuation.yield("")
                                        answerContinuation.finish()
                                    } else {
                                        answerContinuation.finish(throwing: BenchError("server said \(text)"))
                                    }
                                case .onError, .onExitRoom:
                                    answerContinuation.finish(throwing: BenchError("server said \(text)"))
                                default:
                                    break
                                }
                            }
                        } catch {
                            answerContinuation.finish(throwing: error)
                        }
                        answerContinuation.finish(throwing: BenchError("the signaling connection closed"))
                        group.cancelAll()
                    }
                }
            } catch {
                answerContinuation.finish(throwing: error)
            }
        }
        do {
            let answer = try await withTimeout(timeout, "no answer to \(request.type) from \(url)") {
                for try await answer in answers { return answer }
                throw BenchError("the signaling connection closed before the answer to \(request.type)")
            }
            return SignalingSession(answer: answer, timeline: timeline.withLock { $0 }, leave: leave, task: task)
        } catch {
            leave.finish()
            task.cancel()
            await task.value
            throw error
        }
    }

    /// Closes the WebSocket; the server ends the session and its peer connections. If the
    /// server has not closed its side within `grace`, the connection is cancelled.
    public func close(grace: Duration = .seconds(5)) async {
        leave.finish()
        let task = self.task
        let watchdog = Task {
            do {
                try await Task.sleep(for: grace)
                task.cancel()
            } catch {}
        }
        await task.value
        watchdog.cancel()
    }
}
