import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The text of a server's `GET /metrics`; nil when it does not answer.
public func serverMetricsText(_ server: String) async -> String? {
    guard let url = URL(string: server + "/metrics"), let (data, _) = try? await URLSession.shared.data(from: url) else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// A Prometheus histogram as a server's metrics expose it: cumulative counts by upper bound in
/// seconds, the last `+Inf` (empty when the server does not have it).
public struct PrometheusHistogram: Sendable {
    public var buckets: [(bound: Double, count: Double)]

    /// The buckets of histogram `name` in `text` (Prometheus's text format).
    public init(named name: String, in text: String) {
        let prefix = name + #"_bucket{le=""#
        buckets = text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix(prefix) else { return nil }
            let rest = line.dropFirst(prefix.count)
            guard let quote = rest.firstIndex(of: "\""), let count = Double(rest.split(separator: " ").last ?? "") else { return nil }
            return (rest[..<quote] == "+Inf" ? .infinity : Double(rest[..<quote]) ?? .nan, count)
        }
    }

    init(buckets: [(bound: Double, count: Double)]) {
        self.buckets = buckets
    }

    /// How many it counted.
    public var count: Double { buckets.last?.count ?? 0 }

    /// What was counted since `earlier` (the same histogram read before); nil when this one is
    /// empty or the two do not have the same buckets.
    public func since(_ earlier: PrometheusHistogram) -> PrometheusHistogram? {
        guard !buckets.isEmpty, buckets.count == earlier.buckets.count else { return nil }
        return PrometheusHistogram(buckets: zip(buckets, earlier.buckets).map { ($0.bound, $0.count - $1.count) })
    }

    /// The value at quantile `q` (0–1) in milliseconds, interpolated within its bucket; nil when empty.
    public func interpolatedMilliseconds(quantile q: Double) -> Double? {
        guard count > 0 else { return nil }
        let target = count * q
        var lower = (bound: 0.0, count: 0.0)
        for bucket in buckets {
            if bucket.count >= target {
                guard bucket.bound.isFinite else { return lower.bound * 1000 }
                let share = bucket.count > lower.count ? (target - lower.count) / (bucket.count - lower.count) : 1
                return (lower.bound + (bucket.bound - lower.bound) * share) * 1000
            }
            lower = bucket
        }
        return nil
    }

    /// The upper bound, in milliseconds, of the bucket quantile `q` (0–1) falls in; nil when empty.
    public func upperBoundMilliseconds(quantile q: Double) -> Double? {
        guard count > 0 else { return nil }
        return (buckets.first { $0.count >= count * q }?.bound ?? .infinity) * 1000
    }
}
