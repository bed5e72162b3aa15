import Foundation

/// A value guarded by a lock, for the few places where state is shared across threads.
///
///     let count = Locked(0)
///     count.withLock { $0 += 1 }
///
/// **Threading**: any thread; `withLock` must not be re-entered on the same instance.
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    /// Runs `body` with exclusive access to the guarded state.
    ///
    /// - Parameter body: Reads or changes the state; must not call back into this lock.
    /// - Returns: Whatever `body` returns.
    @inline(__always)
    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
