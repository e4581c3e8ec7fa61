extension Duration {
    /// The duration in seconds as a `Double`.
    var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The duration in milliseconds as a `Double`.
    var inMilliseconds: Double { inSeconds * 1000 }

    /// The duration counted in ticks of a `rate` Hz clock, rounded down.
    func ticks(rate: UInt32) -> Int64 {
        let parts = components
        return parts.seconds * Int64(rate) + Int64((Double(parts.attoseconds) / 1e18 * Double(rate)).rounded(.down))
    }
}
