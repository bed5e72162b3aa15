import Foundation

/// A task's wait for work done elsewhere (a queue, a thread) that ends as soon as the task is
/// cancelled: the continuation is resumed once, by the work's result or by the cancellation,
/// whichever comes first; work not yet started when the task is cancelled does not start.
///
///     let wait = CancellableWait<Int>()
///     return try await withTaskCancellationHandler {
///         try await withCheckedThrowingContinuation { continuation in
///             guard wait.begin(continuation) else { return }
///             queue.async { if wait.start() { wait.take()?.resume(with: Result { try work() }) } }
///         }
///     } onCancel: { wait.cancel() }
final class CancellableWait<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var started = false
    private var cancelled = false

    /// Keeps the continuation; false, with it resumed, when the task was cancelled already.
    func begin(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let cancelled = lock.withLock {
            if !self.cancelled { self.continuation = continuation }
            return self.cancelled
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// Marks the work started, so that a cancellation from now on waits for its result;
    /// false when the task was cancelled first (then the work must not run).
    func start() -> Bool {
        lock.withLock {
            if cancelled { return false }
            started = true
            return true
        }
    }

    /// The continuation to resume with the work's result; nil when the cancellation resumed it.
    func take() -> CheckedContinuation<T, any Error>? {
        lock.withLock {
            defer { continuation = nil }
            return continuation
        }
    }

    /// The task was cancelled: unless the work has started, its wait ends with `CancellationError`.
    func cancel() {
        lock.withLock { () -> CheckedContinuation<T, any Error>? in
            if started { return nil }
            cancelled = true
            defer { continuation = nil }
            return continuation
        }?.resume(throwing: CancellationError())
    }
}
