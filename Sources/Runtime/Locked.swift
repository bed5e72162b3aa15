#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a mutex, for the few places where state is shared across threads.
///
///     let count = Locked(0)
///     count.withLock { $0 += 1 }
///
/// `@inlinable` so that generic callers specialize it (the interactor's hot path takes it twice
/// per action).
///
/// **Threading**: any thread; `withLock` must not be re-entered on the same instance.
@usableFromInline
final class Locked<State>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Behind a pointer, not in a stored `var`: the mutex already makes access exclusive, so the
    /// runtime's dynamic exclusivity checks would be pure cost on the hot path.
    @usableFromInline let state: UnsafeMutablePointer<State>

    @inlinable
    init(_ state: State) {
        self.state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        self.state.initialize(to: state)
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    @inlinable
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with exclusive access to the guarded state.
    ///
    /// - Parameter body: Reads or changes the state; must not call back into this lock.
    /// - Returns: Whatever `body` returns.
    @inlinable @inline(__always)
    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }
}
