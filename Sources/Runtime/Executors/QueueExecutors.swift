import Foundation

/// An executor that runs one piece of work at a time, in submission order, on a private serial queue.
///
///     let db = SerialQueueExecutor(label: "db")
///     try db.perform { try db.perform { work() } }   // nested on the same executor: runs inline
///
/// **Threading**: any thread. Work never overlaps. A `perform` made from inside this executor's own
/// work runs inline (Harmony's lesson: nested use cases on one serial executor must not deadlock).
public final class SerialQueueExecutor: Executor {
    public let label: String
    private let queue: DispatchQueue

    /// Creates a serial executor with its own queue.
    ///
    /// - Parameters:
    ///   - label: The queue label, shown in diagnostics.
    ///   - qos: The queue's quality of service.
    public init(label: String, qos: DispatchQoS = .default) {
        self.label = label
        self.queue = DispatchQueue(label: label, qos: qos)
    }

    public func perform<T>(_ work: () throws -> T) rethrows -> T {
        if isCurrent { return try work() }
        return try queue.sync { try ExecutorContext.entering(self, work) }
    }

    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        queue.async { [self] in ExecutorContext.entering(self, work) }
    }
}

/// An executor that runs work in parallel on a private concurrent queue.
///
///     let pool = ConcurrentQueueExecutor(label: "io")
///     async let a = pool.submit { load(1) }
///     async let b = pool.submit { load(2) }
///
/// **Threading**: any thread; pieces of work may overlap. A nested `perform` runs inline.
public final class ConcurrentQueueExecutor: Executor {
    public let label: String
    private let queue: DispatchQueue

    /// Creates a concurrent executor with its own queue.
    ///
    /// - Parameters:
    ///   - label: The queue label, shown in diagnostics.
    ///   - qos: The queue's quality of service.
    public init(label: String, qos: DispatchQoS = .default) {
        self.label = label
        self.queue = DispatchQueue(label: label, qos: qos, attributes: .concurrent)
    }

    public func perform<T>(_ work: () throws -> T) rethrows -> T {
        if isCurrent { return try work() }
        return try queue.sync { try ExecutorContext.entering(self, work) }
    }

    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        queue.async { [self] in ExecutorContext.entering(self, work) }
    }
}

extension Executor where Self == SerialQueueExecutor {
    /// A new serial executor: `UseCase(executor: .serial("db")) { ... }`.
    ///
    /// - Parameter label: The queue label.
    /// - Returns: A serial executor with its own queue.
    public static func serial(_ label: String) -> SerialQueueExecutor { SerialQueueExecutor(label: label) }
}

extension Executor where Self == ConcurrentQueueExecutor {
    /// A new concurrent executor: `UseCase(executor: .concurrent("io")) { ... }`.
    ///
    /// - Parameter label: The queue label.
    /// - Returns: A concurrent executor with its own queue.
    public static func concurrent(_ label: String) -> ConcurrentQueueExecutor { ConcurrentQueueExecutor(label: label) }
}
