import Foundation
import Streams

/// A count of async work in flight, kept per clock (the scheduler its result
/// re-enters on), with a way to wait until some finishes.
///
/// Per clock because test stores share one Lua state: a store that was
/// dropped with a call still in flight (its test failed before `receive`)
/// never runs its clock again, and its call must not hold up another store's
/// `settle`.
///
///     host.bridge.pending.inFlight(on: clock)   // this store's calls only
package final class PendingWork: @unchecked Sendable {
    private let condition = NSCondition()
    private var counts: [ObjectIdentifier: Int] = [:]

    package init() {}

    /// Bumped by every `end` and `poke`, so a waiter sees wake-ups that came
    /// while it was checking `isReady` outside the lock.
    private var signals = 0

    func begin(on scheduler: any Scheduler) {
        condition.lock(); counts[ObjectIdentifier(scheduler), default: 0] += 1; condition.unlock()
    }
    func end(on scheduler: any Scheduler) {
        condition.lock()
        let key = ObjectIdentifier(scheduler)
        if let n = counts[key] { counts[key] = n > 1 ? n - 1 : nil }
        signals += 1
        condition.broadcast()
        condition.unlock()
    }
    /// Wakes a waiter: something was handed to the scheduler.
    func poke() { condition.lock(); signals += 1; condition.broadcast(); condition.unlock() }

    /// How many are in flight, on every clock.
    package var inFlight: Int { condition.lock(); defer { condition.unlock() }; return counts.values.reduce(0, +) }

    /// How many are in flight whose results re-enter on `scheduler`.
    package func inFlight(on scheduler: any Scheduler) -> Int {
        condition.lock(); defer { condition.unlock() }
        return counts[ObjectIdentifier(scheduler)] ?? 0
    }

    /// Waits (real time) until `isReady` holds or `timeout` passes; `isReady` is
    /// re-checked whenever work ends, and every 10 ms. It runs without the lock
    /// held, so it may read `inFlight`.
    package func wait(timeout: TimeInterval, until isReady: () -> Bool) {
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
