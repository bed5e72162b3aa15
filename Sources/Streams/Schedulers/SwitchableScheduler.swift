import Foundation

/// A scheduler that forwards to a target chosen at run time: several virtual
/// clocks can share one set of Lua streams, each store pointing it at its own
/// clock while it runs (the test store's "each store has its own clock").
///
/// Work is handed to the target current when it is scheduled, so a timer keeps
/// the clock it started on after the target changes.
///
/// ```swift
/// let router = SwitchableScheduler(target: clockA)
/// router.schedule(after: 100) { print("on clockA") }
/// router.target = clockB
/// ```
public final class SwitchableScheduler: Scheduler, @unchecked Sendable {
    private let lock = NSLock()
    private var _target: any Scheduler
    private var switched = 0

    public init(target: any Scheduler) { _target = target }

    /// Where work scheduled from now on goes.
    public var target: any Scheduler {
        get { lock.withLock { _target } }
        set { lock.withLock { _target = newValue } }
    }

    /// Runs `body` with `target` set to `scheduler`, then restores the previous target.
    public func with<R>(_ scheduler: any Scheduler, _ body: () throws -> R) rethrows -> R {
        let previous = lock.withLock {
            switched += 1
            defer { _target = scheduler }
            return _target
        }
        defer {
            lock.withLock {
                _target = previous
                switched -= 1
            }
        }
        return try body()
    }

    /// Whether a `with` is under way: code runs for a store on its clock, not for the host's
    /// own code around the stores (a spec's).
    package var isSwitched: Bool { lock.withLock { switched > 0 } }

    public var now: Int { target.now }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable {
        target.schedule(action)
    }

    @discardableResult
    public func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        target.schedule(after: delayMs, action)
    }

    @discardableResult
    public func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        target.schedule(after: delayMs, interval: interval, action)
    }
}

extension Scheduler {
    /// The scheduler that work scheduled now would land on (the target of a `SwitchableScheduler`).
    public var resolved: any Scheduler {
        if let switchable = self as? SwitchableScheduler { return switchable.target.resolved }
        return self
    }
}
