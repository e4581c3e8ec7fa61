import LiveRoomWire

/// Delays in fixed buckets, exposed as a Prometheus histogram. The media loops keep one each
/// for forwarded packets, from the read of the publisher's datagram to the `sendmmsg` of each
/// copy (the port adds them up: `liveroom_media_fanout_delay_seconds`); the shops keep one for
/// purchases, from reaching the room's shop to the answer (`liveroom_purchase_answer_seconds`).
struct DelayHistogram: Sendable, Equatable {
    /// Upper bounds of the buckets, in microseconds; a last bucket takes the rest.
    static let bounds: [Int64] = [
        100, 250, 500, 1_000, 2_500, 5_000, 10_000, 15_000, 20_000, 30_000, 40_000, 50_000, 60_000, 80_000, 100_000, 125_000, 150_000,
        200_000, 300_000, 500_000, 1_000_000,
    ]

    /// Copies per bucket (`bounds.count + 1` of them: not cumulative).
    private(set) var counts = [UInt64](repeating: 0, count: bounds.count + 1)
    private(set) var sumMicroseconds: Int64 = 0

    var count: UInt64 { counts.reduce(0, +) }

    mutating func record(_ delay: Duration) {
        let microseconds = max(0, delay.ticks(rate: 1_000_000))
        var bucket = 0
        while bucket < Self.bounds.count, microseconds > Self.bounds[bucket] { bucket += 1 }
        counts[bucket] += 1
        sumMicroseconds &+= microseconds
    }

    static func + (a: DelayHistogram, b: DelayHistogram) -> DelayHistogram {
        var sum = a
        for index in sum.counts.indices { sum.counts[index] += b.counts[index] }
        sum.sumMicroseconds &+= b.sumMicroseconds
        return sum
    }

    /// The Prometheus text exposition of the histogram `name` (cumulative buckets in seconds).
    func exposition(name: String, help: String) -> String {
        var lines = ["# HELP \(name) \(help)", "# TYPE \(name) histogram"]
        var cumulative: UInt64 = 0
        for (index, bound) in Self.bounds.enumerated() {
            cumulative += counts[index]
            lines.append("\(name)_bucket{le=\"\(Self.seconds(bound))\"} \(cumulative)")
        }
        cumulative += counts[Self.bounds.count]
        lines.append("\(name)_bucket{le=\"+Inf\"} \(cumulative)")
        lines.append("\(name)_sum \(Self.seconds(sumMicroseconds))")
        lines.append("\(name)_count \(cumulative)")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func seconds(_ microseconds: Int64) -> String {
        let whole = microseconds / 1_000_000, fraction = String(microseconds % 1_000_000)
        return "\(whole)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }
}
