import HummingbirdWebSocket
import Testing

@testable import LiveRoomServer

/// A connection's frames handed from its reading task to its room's lane: the reader waits
/// once ``FrameHandoff/limit`` frames wait, goes on as they are taken, and never waits once
/// the hand-off is finished, whether it was waiting then or comes afterwards.
@Suite(.timeLimit(.minutes(1))) struct FrameHandoffTests {
    @Test func aReaderWaitsAtTheLimitAndGoesOnWhenAFrameIsTaken() async throws {
        let handoff = FrameHandoff()
        for index in 0..<(FrameHandoff.limit - 1) { await handoff.put(.text("\(index)")) }
        let reader = Task { await handoff.put(.text("last")) }
        try await Task.sleep(for: .milliseconds(100))
        var frames = handoff.frames.makeAsyncIterator()
        #expect(await frames.next() == .text("0"))
        handoff.took()
        await reader.value
    }

    @Test func aFinishedHandoffNeverHoldsAReader() async {
        let handoff = FrameHandoff()
        for index in 0..<(FrameHandoff.limit - 1) { await handoff.put(.text("\(index)")) }
        let waiting = Task { await handoff.put(.text("waits")) }
        try? await Task.sleep(for: .milliseconds(100))
        handoff.finish()
        await waiting.value
        // Frames read after the lane stopped taking them (a shutdown) go nowhere and wait for nobody.
        for index in 0..<(2 * FrameHandoff.limit) { await handoff.put(.text("after \(index)")) }
    }
}
