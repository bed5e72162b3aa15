#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which thread is running the loop, checked in debug builds only.
@usableFromInline
struct LoopOwner {
    #if DEBUG
    @usableFromInline var thread: pthread_t?
    #endif

    @inlinable init() {}

    @inlinable @inline(__always)
    mutating func enter() {
        #if DEBUG
        precondition(thread == nil, "Interactor: two threads entered the loop at once")
        thread = pthread_self()
        #endif
    }

    @inlinable @inline(__always)
    mutating func leave() {
        #if DEBUG
        thread = nil
        #endif
    }

    /// Traps when the calling thread is not the one running the loop.
    @inlinable @inline(__always)
    func check() {
        #if DEBUG
        if let thread {
            precondition(
                pthread_equal(thread, pthread_self()) != 0, "Interactor: loop state touched off the loop's thread")
        }
        #endif
    }
}
