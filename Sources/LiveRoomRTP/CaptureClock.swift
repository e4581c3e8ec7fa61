import LiveRoomWire

/// When a stream's packets arrive, against their RTP timestamps: the least delay seen over the
/// last few seconds gives the timestamp a packet arriving at a given moment would carry had it
/// come as fast as the fastest. It is what a receiver can know of a sender's capture clock
/// without believing the sender's reports, and the measure those reports are checked against
/// (``SenderReportCheck``).
public struct CaptureClock: Sendable {
    public let clockRate: UInt32
    /// How long the least delay is kept: the minimum is over the current and the previous
    /// window, so it follows a drifting sender clock and forgets a rare early packet.
    public static let window: Duration = .seconds(10)
    private var epoch: ContinuousClock.Instant?
    private var last: (timestamp: UInt32, extended: Int64)?
    /// Arrival (seconds after `epoch`) minus the extended timestamp in seconds, least per window.
    private var current = Double.infinity
    private var previous = Double.infinity
    private var windowStart: ContinuousClock.Instant?

    public init(clockRate: UInt32) {
        self.clockRate = clockRate
    }

    /// Notes one packet's arrival.
    public mutating func record(timestamp: UInt32, arrival: ContinuousClock.Instant) {
        let epoch = self.epoch ?? arrival
        self.epoch = epoch
        // Timestamps move by small steps either way (reordering, B-frames): unwrap by the step.
        let extended = last.map { $0.extended + Int64(Int32(bitPattern: timestamp &- $0.timestamp)) } ?? 0
        last = (timestamp, extended)
        if let windowStart, arrival - windowStart < Self.window {
        } else {
            windowStart = arrival
            previous = current
            current = .infinity
        }
        let offset = (arrival - epoch).inSeconds - Double(extended) / Double(clockRate)
        current = min(current, offset)
    }

    /// The RTP timestamp of a packet that would arrive at `instant` with the least delay seen;
    /// nil before any packet.
    public func timestamp(arrivingAt instant: ContinuousClock.Instant) -> UInt32? {
        guard let epoch, let last else { return nil }
        let offset = min(current, previous)
        let extended = ((instant - epoch).inSeconds - offset) * Double(clockRate)
        let step = Int64(extended.rounded()) - last.extended
        return last.timestamp &+ UInt32(truncatingIfNeeded: step)
    }
}

/// Whether a publisher's sender reports can be believed, and what to pass on in their place.
///
/// A sender report maps an RTP timestamp to the sender's wall clock. Two things go wrong with
/// senders in the field: the RTP timestamp does not match the stream's packets (GStreamer's
/// webrtcbin of Debian 12 reports one that runs at twice the media clock, so a viewer's delay
/// grows by a second every second), or the clock is not wall time (an uptime clock, a machine
/// without NTP). So each report is checked twice:
/// - against the track's packets (``CaptureClock``): a correct sender's report is ahead of its
///   newest packets by about the time from capture to arrival (encoding, pacing, the uplink),
///   which is never behind by much nor ahead by more than ``leadBounds`` allows;
/// - against the track's previous report: the RTP time between the two is the time between
///   them on the sender's clock, within ``rateTolerance``.
///
/// A publisher is believed from the first report that passes both; one that fails either, and
/// its reports are not believed again. Both go for all its tracks, so that audio and video stay
/// in one timeline. Until it is believed, and once it is not, each report is passed on as the
/// server's wall clock when it arrived against the timestamp a packet arriving then would carry:
/// a viewer then counts from the moment media reached the server. A believed publisher whose
/// clock is more than ``clockTolerance`` away from the server's has its reports moved onto the
/// server's clock by the least difference seen (its clock minus the server's at arrival, so
/// minus the fastest report's transit), the same for all its tracks.
public struct SenderReportCheck: Sendable {
    /// How far a believed report may be ahead of (or behind) its packets, in seconds.
    public static let leadBounds: ClosedRange<Double> = -0.1...0.5
    /// How far the RTP time between two reports of a track may be from the time between them on
    /// the sender's clock: a fixed part (seconds) and a part of the time between them.
    public static let rateTolerance = (seconds: 0.02, fraction: 0.02)
    /// How far a sender's clock may be from the server's and still be taken as wall time.
    public static let clockTolerance = 1.0
    /// The most tracks whose previous report is kept.
    static let trackLimit = 8

    public enum Verdict: Sendable, Hashable {
        case unsure, believed, notBelieved
    }

    public private(set) var verdict = Verdict.unsure
    /// Seconds to take from the sender's clock: nil before the first believed report.
    private var shift: Double?
    /// Each track's previous report: its sender time (Unix seconds) and RTP timestamp.
    private var previous: [UInt32: (time: Double, rtpTimestamp: UInt32)] = [:]

    public init() {}

    /// The report to pass on for `report`, which arrived at wall time `wallArrival` (Unix
    /// seconds) on a track whose packets put a packet arriving then at `expected`.
    public mutating func check(_ report: RTCPSenderReport, expected: UInt32, clockRate: UInt32, wallArrival: Double) -> RTCPSenderReport {
        let time = NTPTime(value: report.ntpTimestamp).unixSeconds
        if verdict != .notBelieved {
            let lead = Double(Int32(bitPattern: report.rtpTimestamp &- expected)) / Double(clockRate)
            if !Self.leadBounds.contains(lead) {
                verdict = .notBelieved
            } else if let before = previous[report.ssrc] {
                let elapsed = time - before.time
                let rtpElapsed = Double(Int32(bitPattern: report.rtpTimestamp &- before.rtpTimestamp)) / Double(clockRate)
                let tolerance = Self.rateTolerance.seconds + Self.rateTolerance.fraction * abs(elapsed)
                verdict = elapsed > 0 && abs(rtpElapsed - elapsed) <= tolerance ? (verdict == .unsure ? .believed : verdict) : .notBelieved
            }
            if previous.count >= Self.trackLimit, previous[report.ssrc] == nil { previous.removeAll() }
            previous[report.ssrc] = (time, report.rtpTimestamp)
        }
        var passed = report
        guard verdict == .believed else {
            passed.ntpTimestamp = NTPTime(unixSeconds: wallArrival).value
            passed.rtpTimestamp = expected
            return passed
        }
        let difference = time - wallArrival
        switch shift {
        case nil: shift = abs(difference) < Self.clockTolerance ? 0 : difference
        case let shift? where shift != 0: self.shift = max(shift, difference)
        default: break
        }
        if let shift, shift != 0 { passed.ntpTimestamp = NTPTime(unixSeconds: time - shift).value }
        return passed
    }
}
