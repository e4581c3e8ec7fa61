import BenchSupport
import HummingbirdWSClient
import LiveRoomProtocol
import Logging

/// One client's signaling WebSocket: enters the room, sends one `publish`, `subscribe` or
/// `connectOtherRoom`, hands back the server's answer (empty for a PK link), and stays open (so the peer connection lives) until
/// ``close()``.
final class SignalingSession: Sendable {
    /// The SDP answer.
    let answer: String
    private let leave: AsyncStream<Void>.Continuation
    private let task: Task<Void, Never>

    private init(answer: String, leave: AsyncStream<Void>.Continuation, task: Task<Void, Never>) {
        self.answer = answer
        self.leave = leave
        self.task = task
    }

    /// Connects, enters with `enter`, sends `request` (`publish` or `subscribe`) once `onEnterRoom`
    /// succeeds and waits for its answer (`onPublishAnswer` or `onSubscribeAnswer`).
    static func open(
        url: String, enter: EnterRoomParams, request: RoomRequest, logger: Logger,
        timeout: Duration = .seconds(20)
    ) async throws -> SignalingSession {
        let (answers, answerContinuation) = AsyncThrowingStream<String, any Error>.makeStream()
        let (leaveSignal, leave) = AsyncStream<Void>.makeStream()
        let task = Task {
            do {
                try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 20), logger: logger) { inbound, outbound, _ in
                    try await outbound.write(.text(RoomRequest.enterRoom(enter).json.jsonText))
                    await withTaskGroup(of: Void.self) { group in
                        // Closing our side ends the server's, which ends `inbound`.
                        group.addTask {
                            for await _ in leaveSignal {}
                            try? await outbound.close(.normalClosure, reason: "sfu-bench done")
                        }
                        do {
                            for try await message in inbound.messages(maxSize: 1 << 20) {
                                guard case .text(let text) = message, let event = try? ServerEvent.parse(text) else { continue }
                                switch event {
                                case .onEnterRoom(let result, _):
                                    if result < 0 {
                                        answerContinuation.finish(throwing: BenchError("enterRoom refused: \(text)"))
                                    } else {
                                        try await outbound.write(.text(request.json.jsonText))
                                    }
                                case .onPublishAnswer(let sdp), .onSubscribeAnswer(_, let sdp):
                                    answerContinuation.yield(sdp)
                                    answerContinuation.finish()
                                case .onConnectOtherRoom(_, let errCode, _):
                                    if errCode == 0 {
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
            return SignalingSession(answer: answer, leave: leave, task: task)
        } catch {
            leave.finish()
            task.cancel()
            await task.value
            throw error
        }
    }

    /// Closes the WebSocket; the server ends the session and its peer connections.
    func close() async {
        leave.finish()
        await task.value
    }
}
