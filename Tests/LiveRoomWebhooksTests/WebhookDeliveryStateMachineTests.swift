import Testing

@testable import LiveRoomWebhooks

/// Per-room order, rooms side by side up to the limit, retries with backoff, no duplicates.
@Suite struct WebhookDeliveryStateMachineTests {
    typealias Machine = WebhookDeliveryStateMachine

    func entries(_ list: [(Int64, String)]) -> [Machine.Entry] { list.map { Machine.Entry(id: $0.0, roomKey: $0.1) } }

    func sends(_ actions: [Machine.Action]) -> [Int64] {
        actions.compactMap { if case .send(let entry, _) = $0 { entry.id } else { nil } }
    }

    @Test func oneRoomSendsItsEventsOneAtATimeInOrder() {
        var machine = Machine(maxInFlight: 8)
        #expect(machine.stored(entries([(1, "a"), (2, "a"), (3, "a")])) == [.send(.init(id: 1, roomKey: "a"), attempt: 1)])
        #expect(machine.stored(entries([(4, "a")])).isEmpty, "the room has one in flight")
        #expect(machine.delivered(roomKey: "a") == [.delete(id: 1), .send(.init(id: 2, roomKey: "a"), attempt: 1)])
        #expect(sends(machine.delivered(roomKey: "a")) == [3])
        #expect(sends(machine.delivered(roomKey: "a")) == [4])
        #expect(machine.delivered(roomKey: "a") == [.delete(id: 4)])
        #expect(machine.pendingCount == 0 && machine.inFlight == 0)
        #expect(machine.delivered(roomKey: "a").isEmpty, "an answer for nothing in flight is ignored")
    }

    @Test func roomsGoSideBySideUpToTheLimitThenInTurn() {
        var machine = Machine(maxInFlight: 2)
        let first = machine.stored(entries([(1, "a"), (2, "b"), (3, "c"), (4, "a"), (5, "d")]))
        #expect(sends(first) == [1, 2], "two rooms at once")
        #expect(machine.inFlight == 2)
        // a's next event waits behind rooms c and d, which came first.
        #expect(sends(machine.delivered(roomKey: "a")) == [3])
        #expect(sends(machine.delivered(roomKey: "b")) == [5])
        #expect(sends(machine.delivered(roomKey: "c")) == [4])
        #expect(sends(machine.delivered(roomKey: "d")).isEmpty)
        #expect(machine.delivered(roomKey: "a") == [.delete(id: 4)])
    }

    @Test func aFailureBacksOffAndRetriesTheSameEventWhileOtherRoomsGoOn() {
        var machine = Machine(maxInFlight: 1)
        _ = machine.stored(entries([(1, "a"), (2, "a"), (3, "b")]))
        let failed = machine.failed(roomKey: "a", random: 0)
        #expect(failed == [.retry(roomKey: "a", after: .milliseconds(500)), .send(.init(id: 3, roomKey: "b"), attempt: 1)])
        #expect(machine.retryDue("a").isEmpty, "the slot is taken by b")
        #expect(machine.delivered(roomKey: "b") == [.delete(id: 3), .send(.init(id: 1, roomKey: "a"), attempt: 2)])
        #expect(machine.failed(roomKey: "a", random: 0) == [.retry(roomKey: "a", after: .seconds(1))])
        #expect(machine.stored(entries([(4, "a")])).isEmpty, "a backing-off room waits")
        #expect(machine.retryDue("a") == [.send(.init(id: 1, roomKey: "a"), attempt: 3)])
        #expect(machine.retryDue("a").isEmpty, "a stray retry does not send twice")
        #expect(machine.delivered(roomKey: "a") == [.delete(id: 1), .send(.init(id: 2, roomKey: "a"), attempt: 1)], "the count starts again")
        #expect(machine.failed(roomKey: "a", random: 0) == [.retry(roomKey: "a", after: .milliseconds(500))])
    }

    @Test func rowsSeenTwiceAreQueuedOnce() {
        var machine = Machine()
        _ = machine.stored(entries([(1, "a"), (2, "b")]))
        #expect(machine.stored(entries([(1, "a"), (2, "b"), (3, "b")])).isEmpty)
        #expect(machine.pendingCount == 3)
        #expect(machine.delivered(roomKey: "a") == [.delete(id: 1)])
        #expect(sends(machine.delivered(roomKey: "b")) == [3])
    }

    @Test func manyRoomsAndEventsComeOutInOrderPerRoomWithNoneLost() {
        var machine = Machine(maxInFlight: 8)
        var generator = SystemRandomNumberGenerator()
        var inFlight: [Machine.Entry] = []
        var delivered: [String: [Int64]] = [:]
        var retries: [String] = []
        var expected: [String: [Int64]] = [:]
        func run(_ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .send(let entry, _): inFlight.append(entry)
                case .delete(let id): _ = id
                case .retry(let room, _): retries.append(room)
                }
            }
        }
        var next: Int64 = 1
        for step in 0..<2000 {
            if step < 1000, step % 3 == 0 {
                let batch = (0..<4).map { _ in Machine.Entry(id: { defer { next += 1 }; return next }(), roomKey: "room\(Int.random(in: 0..<20, using: &generator))") }
                for entry in batch { expected[entry.roomKey, default: []].append(entry.id) }
                run(machine.stored(batch))
            }
            #expect(machine.inFlight <= 8 && machine.inFlight == inFlight.count)
            #expect(Set(inFlight.map(\.roomKey)).count == inFlight.count, "one event per room in flight")
            if !retries.isEmpty, Bool.random(using: &generator) {
                run(machine.retryDue(retries.removeFirst()))
            } else if !inFlight.isEmpty {
                let entry = inFlight.remove(at: Int.random(in: 0..<inFlight.count, using: &generator))
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    run(machine.failed(roomKey: entry.roomKey, random: 0.5))
                } else {
                    delivered[entry.roomKey, default: []].append(entry.id)
                    run(machine.delivered(roomKey: entry.roomKey))
                }
            }
        }
        // Drain what is left.
        var guardCount = 0
        while (!inFlight.isEmpty || !retries.isEmpty), guardCount < 100_000 {
            guardCount += 1
            if !retries.isEmpty { run(machine.retryDue(retries.removeFirst())) }
            if !inFlight.isEmpty {
                let entry = inFlight.removeFirst()
                delivered[entry.roomKey, default: []].append(entry.id)
                run(machine.delivered(roomKey: entry.roomKey))
            }
        }
        #expect(delivered == expected)
        #expect(machine.pendingCount == 0)
    }
}
