import Foundation

/// Runs a repository's calls one at a time, in the order they were made: each starts once
/// the one made before it has ended (answered, failed or been cancelled). A feature that
/// saves after every change and then loads reads its last save, however busy the machine.
///
///     let calls = CallsInOrder()
///     let saved = calls.enqueue { try await save(draft) }   // made first, runs first
///     let loaded = calls.enqueue { try await load() }       // sees the save
final class CallsInOrder: @unchecked Sendable {
    private let lock = NSLock()
    /// Ends when the call made last has ended.
    private var last: Task<Void, Never>?

    /// Queues `operation` behind every call made before it; its task gives the result. A
    /// call cancelled while it waits for its turn does not run.
    func enqueue<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
        lock.withLock {
            let previous = last
            let task = Task<T, any Error> {
                await previous?.value
                try Task.checkCancellation()
                return try await operation()
            }
            last = Task { _ = try? await task.value }
            return task
        }
    }
}
