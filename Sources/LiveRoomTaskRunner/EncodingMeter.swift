import LiveRoomMedia
import LiveRoomWire

/// What a running task costs the server's encoding budget, measured as it runs: the pixels a
/// second it encodes, plus the pixels a second it decodes weighted by what decoding costs
/// against encoding (codec-bench: on camera-like content a VP8 picture decodes in 0.64 of the
/// time its H.264 encode takes, an H.264 picture in 0.25; docs/mixing.md).
///
/// The runner adds what its inputs decode; at the end of each window it asks for a report,
/// which comes the first time and then only when the cost moved by more than a tenth, so the
/// server hears of new inputs, sizes and rates without a message every window.
struct EncodingMeter {
    /// How long decoding is counted before a report.
    static let window = Duration.seconds(2)

    /// The share of an encoded pixel's cost a decoded pixel of `codec` counts, in percent.
    static func decodeWeightPercent(_ codec: VideoCodec) -> Int {
        switch codec {
        case .vp8: 64
        case .h264: 25
        }
    }

    /// What `pixels` decoded with `codec` count, in encoded pixels.
    static func weighted(_ pixels: Int, decodedWith codec: VideoCodec) -> Int {
        pixels * decodeWeightPercent(codec) / 100
    }

    private var windowStart: ContinuousClock.Instant
    /// When the window ends and a report may be due.
    var windowEnd: ContinuousClock.Instant { windowStart.advanced(by: Self.window) }
    /// Decoded pixels in this window, already weighted (percent of an encoded pixel).
    private var decodedPercentPixels = 0
    /// The last cost reported.
    private(set) var reported: Int?

    init(start: ContinuousClock.Instant) {
        windowStart = start
    }

    /// A picture of `pixels` decoded with `codec`.
    mutating func decoded(pixels: Int, codec: VideoCodec) {
        decodedPercentPixels += pixels * Self.decodeWeightPercent(codec)
    }

    /// The cost to report now, if any: nil before the window ends, while what the task encodes
    /// is not known yet (`encodingPixelsPerSecond` nil: a relay before its first frame), and
    /// when the cost is within a tenth of the last report. Each ended window starts the next.
    mutating func report(encodingPixelsPerSecond: Int?, now: ContinuousClock.Instant) -> Int? {
        let elapsed = windowStart.duration(to: now)
        guard elapsed >= Self.window else { return nil }
        let milliseconds = max(1, elapsed.ticks(rate: 1000))
        let decoding = decodedPercentPixels / 100 * 1000 / Int(milliseconds)
        windowStart = now
        decodedPercentPixels = 0
        guard let encodingPixelsPerSecond else { return nil }
        let cost = encodingPixelsPerSecond + decoding
        if let reported, abs(cost - reported) <= reported / 10 { return nil }
        reported = cost
        return cost
    }

    /// A cost reported outside the windows (a relay's first frame).
    mutating func reportNow(_ cost: Int) -> Int {
        reported = cost
        return cost
    }
}
