import LiveRoomCore
import LiveRoomProtocol
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
