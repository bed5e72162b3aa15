import Foundation

/// A count of async work in flight, with a way to wait until some finishes.
public final class PendingWork: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0

    public init() {}

    /// Bumped by every `end` and `poke`, so a waiter sees wake-ups that came
    /// while it was checking `isReady` outside the lock.
    private var signals = 0

    func begin() { condition.lock(); count += 1; condition.unlock() }
    func end() { condition.lock(); count -= 1; signals += 1; condition.broadcast(); condition.unlock() }
    /// Wakes a waiter: something was handed to the scheduler.
    func poke() { condition.lock(); signals += 1; condition.broadcast(); condition.unlock() }

    /// How many are in flight.
    public var inFlight: Int { condition.lock(); defer { condition.unlock() }; return count }

    /// Waits (real time) until `isReady` holds or `timeout` passes; `isReady` is
    /// re-checked whenever work ends. It runs without the lock held, so it may
    /// read `inFlight`.
    public func wait(timeout: TimeInterval, until isReady: () -> Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        var seen = signals
        condition.unlock()
        while !isReady() && Date() < deadline {
            condition.lock()
            if signals == seen { _ = condition.wait(until: min(deadline, Date().addingTimeInterval(0.01))) }
            seen = signals
            condition.unlock()
        }
    }
}
