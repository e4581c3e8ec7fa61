#if canImport(Glibc)
import Glibc

/// What stops the server always leaves its cause in the log (standard error), and signals that
/// carry no intent to stop it cannot.
///
/// - SIGPIPE (a peer that closed while we wrote), SIGHUP (the terminal went away), SIGUSR1/2,
///   SIGALRM, SIGVTALRM and SIGXFSZ are ignored.
/// - SIGTERM and SIGINT stop it gracefully (ServiceLifecycle); `main` then writes that it stopped.
/// - A trap or fault (SIGILL and SIGTRAP for a failed Swift runtime check, SIGSEGV, SIGBUS,
///   SIGFPE, SIGABRT, SIGSYS) writes one line naming the signal, then goes on to the handler that
///   was there before: Swift's backtracer when it is on (`SWIFT_BACKTRACE`, which
///   `scripts/serve.sh` turns on), which prints the backtrace; the process then ends by the signal.
public enum ProcessSignals {
    static let ignored: [Int32] = [SIGPIPE, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXFSZ]
    static let fatal: [Int32] = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGSYS]

    /// Installs the handlers; call once, early in `main`.
    public static func install() {
        for signal in ignored { _ = Glibc.signal(signal, SIG_IGN) }
        for signal in fatal {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = onFatalSignal
            action.sa_flags = SA_SIGINFO | SA_ONSTACK
            sigemptyset(&action.sa_mask)
            _ = sigaction(signal, &action, previousActions + Int(signal))
        }
    }

    /// The line written for `signal` (nil for signals this does not handle).
    static func line(for signal: Int32) -> StaticString? {
        switch signal {
        case SIGILL: "liveroom-server: stopped by SIGILL: a trap (a failed runtime check, such as an index out of range); the reason and backtrace follow or precede this line\n"
        case SIGTRAP: "liveroom-server: stopped by SIGTRAP: a trap (a failed runtime check); the reason and backtrace follow or precede this line\n"
        case SIGSEGV: "liveroom-server: stopped by SIGSEGV: an invalid memory access; the backtrace follows\n"
        case SIGBUS: "liveroom-server: stopped by SIGBUS: an invalid memory access; the backtrace follows\n"
        case SIGFPE: "liveroom-server: stopped by SIGFPE: an arithmetic fault; the backtrace follows\n"
        case SIGABRT: "liveroom-server: stopped by SIGABRT: aborted (a fatal error in a library); the backtrace follows\n"
        case SIGSYS: "liveroom-server: stopped by SIGSYS: a bad system call; the backtrace follows\n"
        default: nil
        }
    }
}

/// The handlers that were installed before ours, by signal number (allocated once, never freed,
/// read in the signal handler without any allocation or lock).
nonisolated(unsafe) private let previousActions: UnsafeMutablePointer<sigaction> = {
    let table = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
    table.initialize(repeating: sigaction(), count: 65)
    return table
}()

/// Async-signal-safe: writes a constant line, then hands the signal on (or dies by it).
private func onFatalSignal(_ signal: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _ context: UnsafeMutableRawPointer?) {
    if let line = ProcessSignals.line(for: signal) { _ = write(2, line.utf8Start, line.utf8CodeUnitCount) }
    guard signal > 0, signal < 65 else { return }
    let previous = previousActions[Int(signal)]
    if previous.sa_flags & SA_SIGINFO != 0, let handler = previous.__sigaction_handler.sa_sigaction {
        handler(signal, info, context)
        return
    }
    // No handler before ours: die by the signal, as without us.
    var restore = sigaction()
    restore.__sigaction_handler.sa_handler = SIG_DFL
    sigemptyset(&restore.sa_mask)
    _ = sigaction(signal, &restore, nil)
    _ = raise(signal)
}
#endif
