/// Decides where and when actions run; time is in whole milliseconds.
///
/// Streams that involve time (`timer`, `interval`, `delay`, `debounce`, `throttle`, `timeout`,
/// `retry` with a backoff) take a scheduler, so tests can pass a virtual-time `TestScheduler`
/// and apps a `QueueScheduler`.
/// Actions due at the same time run in the order they were scheduled.
///
/// ```swift
/// let scheduler = QueueScheduler(label: "work")
/// let pending = scheduler.schedule(after: 300) { print("300 ms later") }
/// pending.dispose()   // cancels it
/// ```
public protocol Scheduler: AnyObject, Sendable {
    /// The scheduler's current time in milliseconds.
    var now: Int { get }

    /// Runs `action` as soon as possible.
    ///
    /// - Parameter action: The work.
    /// - Returns: Disposing it before the action starts cancels the action.
    @discardableResult
    func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable

    /// Runs `action` once, `delayMs` milliseconds from now.
    ///
    /// - Parameters:
    ///   - delayMs: The delay; zero or less means as soon as possible.
    ///   - action: The work.
    /// - Returns: Disposing it before the action starts cancels the action.
    @discardableResult
    func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable

    /// Runs `action` first `delayMs` milliseconds from now, then every `interval` milliseconds.
    ///
    /// - Parameters:
    ///   - delayMs: The delay before the first run.
    ///   - interval: The period between runs; must be positive.
    ///   - action: The work.
    /// - Returns: Disposing it stops the repetition.
    @discardableResult
    func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable
}

/// A scheduler whose thread others share (the main thread, which also draws a UI): a loop
/// draining on it hands the thread back after a slice of work and goes on later, in order.
public protocol SlicedScheduler: Scheduler {
    /// How long one drain may hold the thread.
    var drainSliceNanoseconds: UInt64 { get }
    /// Runs `action` on a later turn of the thread, after what already waits there; never inline.
    @discardableResult
    func scheduleLater(_ action: @escaping @Sendable () -> Void) -> Disposable
}
