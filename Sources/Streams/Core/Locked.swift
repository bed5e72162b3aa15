#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Storage for `Locked`: the protected state lives in the header, the mutex in the single element,
/// so a lock and its state cost one allocation and the mutex has a stable address.
@usableFromInline
final class LockedStorage<State>: ManagedBuffer<State, pthread_mutex_t> {
    deinit {
        _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
    }
}

/// A value protected by a POSIX mutex: the one lock type of Moonflow's Swift code.
///
/// Every stream operator keeps its mutable state in one `Locked` and never calls an observer
/// while holding it unless its documentation says so: observers may re-enter the operator.
/// `@inlinable`, so generic callers specialize it (the interactor's hot path takes it twice per
/// action); the state sits beside the mutex in one allocation, with no exclusivity checks.
/// Give it the state it guards, not `()`: an empty state has the mutex's address, and the
/// thread sanitizer reports each `withLock`'s access to it as a race with the next one.
///
/// ```swift
/// let count = Locked(0)
/// count.withLock { $0 += 1 }
/// ```
public struct Locked<State>: @unchecked Sendable {
    @usableFromInline
    let storage: ManagedBuffer<State, pthread_mutex_t>

    /// Creates a lock around `initial`.
    ///
    /// - Parameter initial: The first state.
    @inlinable
    public init(_ initial: State) {
        storage = LockedStorage<State>.create(minimumCapacity: 1) { _ in initial }
        storage.withUnsafeMutablePointerToElements { mutex in
            _ = pthread_mutex_init(mutex, nil)
        }
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// - Parameter body: Reads or changes the state; must not block on other work.
    /// - Returns: What `body` returns.
    @inlinable
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }
}

/// A recursive POSIX mutex, for state whose owner calls out to observers while holding it and
/// must let those observers call back in on the same thread.
///
/// The protected state lives outside the lock (in the owner's stored properties), so a nested
/// call never overlaps an `inout` access the outer call is still holding.
///
/// ```swift
/// let lock = RecursiveLock()
/// lock.withLock { lock.withLock { print("re-entered") } }
/// ```
@usableFromInline
final class RecursiveLock: @unchecked Sendable {
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` while holding the lock.
    ///
    /// - Parameter body: May lock again on the same thread.
    /// - Returns: What `body` returns.
    @inlinable
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
