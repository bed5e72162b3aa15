import Foundation

/// Runs a repository's calls one at a time, in the order they were made: each starts once
/// the one made before it has ended (answered, failed or been cancelled). A feature that
/// saves after every change and then loads reads its last save, however busy the machine.
///
///     let calls = CallsInOrder()
///     calls.enqueue({ try await save(draft) }, then: { saved in ... })   // made first, runs first
///     calls.enqueue({ try await load() }, then: { loaded in ... })      // sees the save
///
/// One task per call, which waits its turn, runs the call and hands its result on: no task
/// to relay the result, none to mark the end of the call (a repository call's cost on the
/// virtual clock is mostly its tasks).
final class CallsInOrder: @unchecked Sendable {
    private let lock = NSLock()
    /// Ends when the call made last has ended.
    private var last: Task<Void, Never>?

    /// Queues `operation` behind every call made before it; `deliver` gets its result on the
    /// call's task, before the next call starts. A call cancelled while it waits for its turn
    /// does not run (`deliver` gets the `CancellationError`).
    /// - Returns: The call's task: cancelling it cancels the call.
    @discardableResult
    func enqueue<T: Sendable>(
        _ operation: @escaping @Sendable () async throws -> T,
        then deliver: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> Task<Void, Never> {
        lock.withLock {
            let previous = last
            let task = Task {
                await previous?.value
                let result: Result<T, any Error>
                do {
                    try Task.checkCancellation()
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                deliver(result)
            }
            last = task
            return task
        }
    }
}
