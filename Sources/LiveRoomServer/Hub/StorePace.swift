/// How fast a room's queue of purchases drains, for answering "busy" at once to a buy that
/// would wait long rather than after it waited (``RoomShop/submit(_:on:bound:carryOut:)``).
///
/// Each batch a worker carries out is timed (store transaction or answers from memory alike);
/// the time per purchase is smoothed over the last batches. A purchase arriving behind
/// `waiting` others, with `workers` batches running side by side, can expect to wait about
/// `waiting x perPurchase / workers`: for SQLite, whose writes take turns, a batch's time
/// includes its turn, and for PostgreSQL batches run in parallel, so dividing by the workers
/// gives the room's rate either way.
struct StorePace: Sendable {
    /// The smoothed time one purchase takes; nil until a batch was timed.
    private(set) var perPurchase: Duration?

    /// A batch of `count` purchases took `duration`.
    mutating func drained(_ count: Int, in duration: Duration) {
        guard count > 0 else { return }
        let sample = duration / count
        perPurchase = perPurchase.map { ($0 * 3 + sample) / 4 } ?? sample
    }

    /// About how long a purchase queued behind `waiting` others waits; nil before any batch was timed.
    func expectedWait(behind waiting: Int, workers: Int) -> Duration? {
        perPurchase.map { $0 * waiting / max(1, workers) }
    }
}
