import Foundation
import LiveRoomWire

/// The server process's CPU use between two samples, from `/proc/self/stat` (user and system
/// time in clock ticks), in percent of one core.
struct CPUSampler {
    private var last: (ticks: UInt64, at: ContinuousClock.Instant)?
    private let ticksPerSecond = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))

    mutating func sample() -> Double {
        guard let ticks = Self.processTicks() else { return 0 }
        let now = ContinuousClock.now
        defer { last = (ticks, now) }
        guard let last, ticks >= last.ticks else { return 0 }
        let seconds = (now - last.at).inSeconds
        guard seconds > 0 else { return 0 }
        return Double(ticks - last.ticks) / ticksPerSecond / seconds * 100
    }

    /// utime + stime of this process, or nil where /proc is missing.
    static func processTicks() -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        return user + system
    }
}
