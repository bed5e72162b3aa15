import Foundation

/// Where a use case's work runs: inline, on a serial queue, or on a concurrent queue (Harmony's executors).
///
///     let executor: any Executor = SerialQueueExecutor(label: "db")
///     let n = try await executor.submit { 41 + 1 }
///
/// **Threading**: every method is callable from any thread. `perform` blocks the caller until the
/// work has run; when the caller is already running inside this executor (a nested use case on
/// the same serial executor), the work runs inline instead, so nesting never deadlocks.
public protocol Executor: AnyObject, Sendable {
    /// A name for diagnostics (`"direct"`, a queue label).
    var label: String { get }

    /// Runs `work` on this executor and blocks until it returns; runs inline when re-entered.
    ///
    ///     let total = try executor.perform { try repository.getAll(.all).count }
    ///
    /// - Parameter work: The synchronous work.
    /// - Returns: What `work` returns.
    /// - Throws: What `work` throws.
    func perform<T>(_ work: () throws -> T) rethrows -> T

    /// Schedules `work` on this executor without waiting for it.
    ///
    /// - Parameter work: The work; it runs exactly once.
    func enqueue(_ work: @escaping @Sendable () -> Void)
}

extension Executor {
    /// Whether the calling code is running inside this executor's `perform` or `submit`.
    public var isCurrent: Bool { ExecutorContext.active.contains(ObjectIdentifier(self)) }

    /// Runs `work` on this executor and suspends until it returns.
    ///
    ///     let user = try await SerialQueueExecutor(label: "db").submit { try repository.get(id: 1) }
    ///
    /// Unlike `perform`, this never runs inline on a queue executor: a suspended caller does not
    /// block the queue, so there is nothing to deadlock on. A task cancelled while its work waits
    /// its turn ends at once and the work never runs; work that has started runs to its end.
    /// - Parameter work: The synchronous work.
    /// - Returns: What `work` returns.
    /// - Throws: What `work` throws, or `CancellationError` if the task was cancelled before it ran.
    public func submit<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        let submitted = SubmittedWork<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                guard submitted.wait(with: continuation) else { return }
                enqueue { [self] in
                    guard submitted.start() else { return }
                    submitted.finish(Result { try ExecutorContext.entering(self, work) })
                }
            }
        } onCancel: {
            submitted.cancel()
        }
    }
}

/// One `submit`'s work and its waiter: cancelled before it starts, the waiter resumes at once and
/// the work is skipped when its turn comes.
private final class SubmittedWork<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var started = false
    private var cancelled = false

    /// Keeps the waiter; false (the waiter resumed) when the task was cancelled already.
    func wait(with continuation: CheckedContinuation<T, any Error>) -> Bool {
        let goesOn = lock.withLock {
            if cancelled { return false }
            self.continuation = continuation
            return true
        }
        if !goesOn { continuation.resume(throwing: CancellationError()) }
        return goesOn
    }

    /// Whether the work may run: false when it was cancelled first.
    func start() -> Bool {
        lock.withLock {
            if cancelled { return false }
            started = true
            return true
        }
    }

    func finish(_ result: Result<T, any Error>) {
        lock.withLock { () -> CheckedContinuation<T, any Error>? in
            defer { continuation = nil }
            return continuation
        }?.resume(with: result)
    }

    func cancel() {
        lock.withLock { () -> CheckedContinuation<T, any Error>? in
            if started { return nil }
            cancelled = true
            defer { continuation = nil }
            return continuation
        }?.resume(throwing: CancellationError())
    }
}

/// Which executors the current thread (or task) is running inside; the re-entrance check.
enum ExecutorContext {
    @TaskLocal static var active: Set<ObjectIdentifier> = []

    /// Runs `work` marked as running inside `executor`.
    static func entering<T>(_ executor: some Executor, _ work: () throws -> T) rethrows -> T {
        var set = active
        set.insert(ObjectIdentifier(executor))
        return try $active.withValue(set, operation: work)
    }
}
