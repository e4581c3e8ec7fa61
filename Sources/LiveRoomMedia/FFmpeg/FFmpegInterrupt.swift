import CFFmpeg
import Foundation
import Synchronization

/// The state behind an `AVIOInterruptCB`: a deadline for the current blocking call and an
/// abort flag another thread can raise. libavformat polls the callback while it waits on
/// the network (connect, RTMP handshake, TCP writes), so a dead server costs at most the
/// deadline and ``abort()`` ends a wait at once.
final class FFmpegInterrupt: Sendable {
    /// Monotonic nanoseconds after which blocking calls give up; 0 for no deadline.
    private let deadline = Atomic<UInt64>(0)
    private let aborted = Atomic<Bool>(false)

    init() {}

    /// What the C callback returns for `opaque` (an unretained ``FFmpegInterrupt``):
    /// non-zero tells libavformat to stop waiting (it then fails with `AVERROR_EXIT`).
    static func check(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
        guard let opaque else { return 0 }
        return Unmanaged<FFmpegInterrupt>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt ? 1 : 0
    }

    /// The opaque pointer for ``check(_:)``; the caller keeps this object alive while the
    /// format context can call it.
    var opaque: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    var shouldInterrupt: Bool {
        if aborted.load(ordering: .relaxed) { return true }
        let limit = deadline.load(ordering: .relaxed)
        return limit != 0 && Self.now() >= limit
    }

    /// Allows blocking calls to run for `timeout` from now.
    func arm(timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        deadline.store(Self.now() + nanoseconds, ordering: .relaxed)
    }

    /// Interrupts the current and every later blocking call until ``reset()``.
    func abort() { aborted.store(true, ordering: .relaxed) }

    /// Clears the abort flag and the deadline.
    func reset() {
        aborted.store(false, ordering: .relaxed)
        deadline.store(0, ordering: .relaxed)
    }

    var isAborted: Bool { aborted.load(ordering: .relaxed) }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
