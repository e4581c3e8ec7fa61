import Testing

@testable import LiveRoomCore

@Suite struct PriorityOutboxTests {
    @Test func highOvertakesQueuedNormal() {
        var box = PriorityOutbox<Int>()
        box.push(1, priority: .normal)
        box.push(2, priority: .normal)
        box.push(10, priority: .high)
        box.push(3, priority: .normal)
        box.push(11, priority: .high)
        var out: [Int] = []
        while let x = box.pop() { out.append(x) }
        #expect(out == [10, 11, 1, 2, 3])
        #expect(box.isEmpty)
    }

    @Test func longQueuesCompact() {
        var box = PriorityOutbox<Int>()
        for i in 0..<5000 { box.push(i, priority: .normal) }
        for i in 0..<4000 { #expect(box.pop() == i) }
        #expect(box.count == 1000)
        for i in 4000..<5000 { #expect(box.pop() == i) }
        #expect(box.pop() == nil)
    }
}
