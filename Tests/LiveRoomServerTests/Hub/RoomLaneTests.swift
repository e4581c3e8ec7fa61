import TestTools
import Testing

@testable import LiveRoomServer

@Suite struct RoomLaneTests {
    /// Work on one lane runs one job at a time, in the order it came.
    @Test func aLaneRunsItsJobsOneAtATimeInOrder() async {
        let lane = RoomLane()
        let state = Locked((running: 0, most: 0, order: [Int]()))
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<200 {
                group.addTask(executorPreference: lane) {
                    state.withLock {
                        $0.running += 1
                        $0.most = max($0.most, $0.running)
                        $0.order.append(n)
                    }
                    state.withLock { $0.running -= 1 }
                }
            }
        }
        let final = state.withLock { $0 }
        #expect(final.most == 1)
        #expect(final.order == Array(0..<200))
    }

    /// A room with thousands of jobs waiting holds another room's job for a slice or two, not
    /// until its own are done.
    @Test func aBusyLaneDoesNotHoldAnotherLanesJob() async {
        let busy = RoomLane()
        let quiet = RoomLane()
        let jobs = 2000
        let done = Locked(0)
        let doneWhenQuietRan = Locked(-1)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<jobs {
                group.addTask(executorPreference: busy) {
                    // About 50 µs of work each.
                    let end = ContinuousClock.now + .microseconds(50)
                    while ContinuousClock.now < end {}
                    done.withLock { $0 += 1 }
                }
            }
            group.addTask(executorPreference: quiet) {
                let now = done.withLock { $0 }
                doneWhenQuietRan.withLock { $0 = now }
            }
        }
        let before = doneWhenQuietRan.withLock { $0 }
        #expect(before >= 0 && before < jobs / 4, "the quiet lane's job ran after \(before) of the busy lane's \(jobs)")
    }

    /// A connection's executor follows its seat: the pool before, its room's lane after, the
    /// pool again once it leaves; the room's lane lasts while someone sits in it.
    @Test func aConnectionFollowsItsSeatFromLaneToLane() async {
        let seats = Seats()
        let first = ConnectionExecutor()
        let firstReading = ConnectionExecutor(reads: true)
        let second = ConnectionExecutor()
        seats.register(1, first, firstReading)
        seats.register(2, second)
        #expect(seats.laneCount == 0)
        #expect(firstReading.lane == nil)
        seats.apply([(1, ("shop", "a")), (2, ("shop", "b"))])
        #expect(seats.laneCount == 1)
        let lane = seats.lane(of: "shop")
        #expect(first.lane === lane && second.lane === lane)
        // Its frames are read on the room's reading lane, apart from the room's work.
        #expect(firstReading.lane != nil && firstReading.lane === lane.reading && firstReading.lane !== lane)
        #expect(lane.reading?.reading == nil)
        seats.apply([(1, ("other", "a"))])
        #expect(seats.laneCount == 2 && first.lane === seats.lane(of: "other") && second.lane === lane)
        #expect(firstReading.lane === seats.lane(of: "other").reading)
        seats.apply([(2, nil)])
        #expect(seats.laneCount == 1 && second.lane == nil)
        // Work still runs wherever the executor is.
        let ran = await Task(executorPreference: second) { 7 }.value
        #expect(ran == 7)
        let ranOnLane = await Task(executorPreference: first) { 8 }.value
        #expect(ranOnLane == 8)
        seats.unregister(1)
        seats.apply([(1, nil)])
        #expect(seats.laneCount == 0)
    }
}
