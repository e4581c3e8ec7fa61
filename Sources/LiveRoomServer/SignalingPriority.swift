import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The signaling threads (the HTTP and WebSocket event loops and the room hub's thread) ask the
/// kernel for a nice value below the 0 of the server's other threads. Every room's messages pass
/// these few threads; a room's burst (a flash sale's purchases on the shared pool, the store's
/// writes) then holds them up less when the CPU is short. Lowering a nice
/// value needs root or CAP_SYS_NICE; without, the threads stay at 0 and the server says so.
enum SignalingPriority {
    /// Sets the nice value of each loop's thread to `nice`; returns how many threads took it.
    static func apply(_ nice: Int32, to loops: [any EventLoop]) async -> Int {
        var took = 0
        for loop in loops {
            let ok = try? await loop.submit { Self.setOwnNice(nice) }.get()
            if ok == true { took += 1 }
        }
        return took
    }

    /// Sets the calling thread's nice value (on Linux a nice value is a thread's own).
    static func setOwnNice(_ nice: Int32) -> Bool {
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) == 0
    }

    /// The calling thread's nice value.
    static func ownNice() -> Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }
}
