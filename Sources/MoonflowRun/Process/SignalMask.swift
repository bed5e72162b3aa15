import Foundation

/// Unblocks every signal in the calling thread, and so in the threads and programs it starts.
/// A process inherits the signal mask of the thread that started it: started from a GCD or
/// Swift concurrency thread (an IDE, a test, an app), which blocks every signal it can,
/// `moonflow serve` would never see SIGTERM, and `terminate()` would leave it running.
/// Call first thing in `main`, before any other thread exists.
package func unblockInheritedSignals() {
    var none = sigset_t()
    sigemptyset(&none)
    pthread_sigmask(SIG_SETMASK, &none, nil)
}
