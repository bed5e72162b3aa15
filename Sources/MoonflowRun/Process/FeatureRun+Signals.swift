import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The signals that end a run which waits for them (`--watch`, `--inspect`): Ctrl-C,
/// SIGINT and SIGTERM, taken on a thread of their own.
extension FeatureRun {
    /// SIGINT and SIGTERM, the signals that end a watching run.
    private static var stopSignals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        return signals
    }

    /// Blocks SIGINT and SIGTERM in the calling thread and so in the threads it starts
    /// later: one sent before `installSignalHandlers` is done stays pending for it. The
    /// command line calls it first thing when a run will wait for them (`--watch`,
    /// `--inspect`), before the inspector's server starts its threads.
    package static func holdStopSignals() {
        var signals = stopSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Ctrl-C, SIGINT and SIGTERM end a watching run cleanly; installed before
    /// anything is printed, so a signal sent as soon as output appears is not lost.
    /// A thread of its own takes them with `sigwait`, blocked everywhere else
    /// (`holdStopSignals`): a pending one is taken as soon as it starts. (Dispatch's
    /// signal sources lose one that arrives before they are registered, or that a
    /// thread which has not blocked it catches.)
    func installSignalHandlers() {
        FeatureRun.holdStopSignals()
        let waiter = Thread { [weak self] in
            var signals = FeatureRun.stopSignals
            var received: Int32 = 0
            while sigwait(&signals, &received) != 0 {}
            guard let self else { exit(0) }
            self.finishWatching()
        }
        waiter.name = "moonflow signals"
        waiter.start()
    }

    /// Waits in the calling thread until SIGINT or SIGTERM arrives, held first with
    /// `holdStopSignals`: `moonflow serve` ends on them as a watching run does. A signal held
    /// is taken here whatever its disposition, so SIGINT ends it even where it is ignored (a
    /// script's background job: the shell sets SIG_IGN, and the program inherits it).
    package static func waitForStopSignal() {
        var signals = stopSignals
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
    }

    /// Ctrl-C, SIGINT or SIGTERM: stop watching and end the process (0, or 1 after an error).
    func finishWatching() {
        watcher?.stop()
        let status: Int32 = lock.withLock { failed } ? 1 : 0
        exit(status)
    }

    /// With `--watch` the run goes on after the input ends, until a signal.
    func waitForSignal() {
        while true { Thread.sleep(forTimeInterval: 3600) }
    }
}
