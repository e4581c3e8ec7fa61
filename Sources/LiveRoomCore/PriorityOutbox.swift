/// A send queue with two lanes: high-priority items leave before any queued normal ones,
/// and each lane keeps its own order.
public struct PriorityOutbox<Element>: Sendable where Element: Sendable {
    private var high: [Element] = []
    private var highHead = 0
    private var normal: [Element] = []
    private var normalHead = 0

    public init() {}

    public var isEmpty: Bool { highHead == high.count && normalHead == normal.count }
    public var count: Int { high.count - highHead + normal.count - normalHead }

    public mutating func push(_ element: Element, priority: MessagePriority) {
        switch priority {
        case .high: high.append(element)
        case .normal: normal.append(element)
        }
    }

    public mutating func pop() -> Element? {
        if let e = Self.pop(&high, &highHead) { return e }
        return Self.pop(&normal, &normalHead)
    }

    private static func pop(_ lane: inout [Element], _ head: inout Int) -> Element? {
        guard head < lane.count else { return nil }
        let e = lane[head]
        head += 1
        if head == lane.count {
            lane.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= lane.count {
            lane.removeFirst(head)
            head = 0
        }
        return e
    }
}
