extension Duration {
    /// The duration in seconds as a `Double`.
    public var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The duration in milliseconds as a `Double`.
    public var inMilliseconds: Double { inSeconds * 1000 }

    /// The duration counted in ticks of a `rate` Hz clock (RTP clocks, sample rates,
    /// milliseconds), rounded down, in integers: exact to the nanosecond.
    public func ticks(rate: UInt32) -> Int64 {
        let parts = components
        let product = parts.attoseconds / 1_000_000_000 * Int64(rate)
        var fraction = product / 1_000_000_000
        if product % 1_000_000_000 < 0 { fraction -= 1 }  // down, also below zero
        return parts.seconds * Int64(rate) + fraction
    }
}
