/// An executor that runs work inline on the caller's thread (Harmony's `DirectExecutor`).
///
///     let value = DirectExecutor.shared.perform { 1 + 1 }   // runs right here
///
/// **Threading**: any thread; the work runs on the calling thread (`enqueue` too, before returning).
public final class DirectExecutor: Executor {
    /// The one direct executor; it has no state.
    public static let shared = DirectExecutor()

    public let label = "direct"

    public init() {}

    public func perform<T>(_ work: () throws -> T) rethrows -> T {
        try ExecutorContext.entering(self, work)
    }

    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        ExecutorContext.entering(self, work)
    }
}

extension Executor where Self == DirectExecutor {
    /// The inline executor: `UseCase(executor: .direct) { ... }`.
    public static var direct: DirectExecutor { .shared }
}
