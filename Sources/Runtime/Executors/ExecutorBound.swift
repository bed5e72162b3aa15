/// A value that only one serial executor may use, that confinement checked in debug builds: the
/// fields of an `@unchecked Sendable` class that its executor alone touches say so in their type
/// instead of a comment (the idea of swift-nio's `NIOLoopBound`).
///
///     final class Cache: Sendable {
///         private let entries: ExecutorBound<[String: Int]>
///         init(host: Host) { entries = ExecutorBound([:], isOnExecutor: host.isOnStateExecutor) }
///         func hit(_ key: String) -> Int? { entries.value[key] }   // traps in debug off the executor
///     }
///
/// **Threading:** `value` may be read and written on the executor only; the check runs in debug
/// builds, and release builds keep neither the check nor a lock (nothing on the hot path).
public struct ExecutorBound<Value>: @unchecked Sendable {
    private final class Storage {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    private let storage: Storage
    #if DEBUG
    private let isOnExecutor: @Sendable () -> Bool
    #endif

    /// Binds `value` to the executor that `isOnExecutor` recognises.
    ///
    /// - Parameters:
    ///   - value: The value, handed over before any other executor could see it.
    ///   - isOnExecutor: Whether the calling code runs on the executor (called in debug builds only).
    public init(_ value: Value, isOnExecutor: @escaping @Sendable () -> Bool) {
        storage = Storage(value)
        #if DEBUG
        self.isOnExecutor = isOnExecutor
        #endif
    }

    /// The value; on the executor only.
    public var value: Value {
        get {
            checkExecutor()
            return storage.value
        }
        nonmutating set {
            checkExecutor()
            storage.value = newValue
        }
    }

    @inline(__always)
    private func checkExecutor() {
        #if DEBUG
        precondition(isOnExecutor(), "ExecutorBound: value used off the executor it is bound to")
        #endif
    }
}
