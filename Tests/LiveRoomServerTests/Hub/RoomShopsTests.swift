import LiveRoomCore
import LiveRoomProtocol
import Synchronization
import Testing

@testable import LiveRoomServer

@Suite struct SeatsTests {
    @Test func aPurchaseNeedsASeatAndIsBudgetedPerSeat() throws {
        let seats = Seats()
        let now = ContinuousClock.now
        #expect(throws: LiveRoomError(ErrorCode.notInRoom, "enter a room first")) { try seats.takePurchase(by: 1, now: now) }
        seats.apply([(1, ("shop", "buyer")), (2, ("other", "fan"))])
        #expect(try seats.takePurchase(by: 1, now: now) == ("shop", "buyer"))
        // A burst of 20 (one taken above), then refusals until the budget refills.
        for _ in 1..<Int(RoomsStateMachine.roomChangeBurst) { _ = try seats.takePurchase(by: 1, now: now) }
        let limited = #expect(throws: LiveRoomError.self) { try seats.takePurchase(by: 1, now: now) }
        #expect(limited?.code == ErrorCode.roomChangeRateLimited)
        #expect(try seats.takePurchase(by: 2, now: now) == ("other", "fan"), "another seat has its own budget")
        #expect(try seats.takePurchase(by: 1, now: now + .milliseconds(100)) == ("shop", "buyer"), "10 a second come back")
        seats.apply([(1, nil)])
        let gone = #expect(throws: LiveRoomError.self) { try seats.takePurchase(by: 1, now: now + .seconds(5)) }
        #expect(gone?.code == ErrorCode.notInRoom)
        // Entering again starts a full budget.
        seats.apply([(1, ("shop", "buyer"))])
        for _ in 0..<Int(RoomsStateMachine.roomChangeBurst) { _ = try seats.takePurchase(by: 1, now: now + .seconds(5)) }
    }
}

@Suite struct RoomShopTests {
    /// A burst of purchases waits in the room's queue: at most `maxWorkers` run at once, they
    /// are taken in the order they came (workers on different threads may begin them a few
    /// places apart, never more than the number of workers), and every one runs.
    @Test func aBurstRunsInOrderWithAtMostAFewAtOnce() async throws {
        let shop = RoomShop(roomId: "shop")
        let state = Mutex((running: 0, most: 0, started: [Int](), done: 0))
        for n in 0..<40 {
            shop.submit {
                state.withLock {
                    $0.running += 1
                    $0.most = max($0.most, $0.running)
                    $0.started.append(n)
                }
                try? await Task.sleep(for: .milliseconds(5))
                state.withLock {
                    $0.running -= 1
                    $0.done += 1
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLock({ $0.done }) < 40, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let final = state.withLock { $0 }
        #expect(final.done == 40)
        #expect(final.most <= RoomShop.maxWorkers && final.most > 1, "\(final.most) at once")
        #expect(Set(final.started) == Set(0..<40))
        #expect(final.started.enumerated().allSatisfy { abs($0.element - $0.offset) < RoomShop.maxWorkers }, "\(final.started)")
        // Once the burst is done, new work starts again.
        let again = Mutex(false)
        shop.submit { again.withLock { $0 = true } }
        while !again.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(again.withLock { $0 })
    }
}
