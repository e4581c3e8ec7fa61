import Testing

@testable import LiveRoomServer

@Suite struct DelayHistogramTests {
    @Test func delaysLandInTheirBucketsAndAreExposedAsACumulativePrometheusHistogram() {
        var a = DelayHistogram()
        a.record(.microseconds(100))  // on a bound: that bucket
        a.record(.microseconds(101))
        var b = DelayHistogram()
        b.record(.milliseconds(12))
        b.record(.seconds(5))  // past the last bound
        b.record(.microseconds(-5))  // a clock read out of order counts as 0
        let total = a + b
        #expect(total.count == 5)
        #expect(total.sumMicroseconds == 100 + 101 + 12_000 + 5_000_000)
        let text = total.exposition(name: "x_seconds", help: "Delays.")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.prefix(2) == ["# HELP x_seconds Delays.", "# TYPE x_seconds histogram"])
        #expect(lines.contains(#"x_seconds_bucket{le="0.000100"} 2"#))
        #expect(lines.contains(#"x_seconds_bucket{le="0.000250"} 3"#))
        #expect(lines.contains(#"x_seconds_bucket{le="0.010000"} 3"#))
        #expect(lines.contains(#"x_seconds_bucket{le="0.015000"} 4"#))
        #expect(lines.contains(#"x_seconds_bucket{le="1.000000"} 4"#))
        #expect(lines.suffix(3) == [#"x_seconds_bucket{le="+Inf"} 5"#, "x_seconds_sum 5.012201", "x_seconds_count 5"])
    }
}
