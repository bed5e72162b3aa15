import Foundation
import Streams

/// A count of async work in flight, kept per clock (the scheduler its result
/// re-enters on), with a way to wait until some finishes: holding the thread (`wait`),
/// or suspending the task (`signalled(after:)`, the async test store's).
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
    /// Tasks suspended in `signalled(after:)`, resumed by the next `end` or `poke`.
    private var suspended: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter = 0

    func begin(on scheduler: any Scheduler) {
        condition.lock(); counts[ObjectIdentifier(scheduler), default: 0] += 1; condition.unlock()
    }
    func end(on scheduler: any Scheduler) {
        condition.lock()
        let key = ObjectIdentifier(scheduler)
        if let n = counts[key] { counts[key] = n > 1 ? n - 1 : nil }
        signal()
    }
    /// Wakes a waiter: something was handed to the scheduler.
    package func poke() {
        condition.lock()
        signal()
    }

    /// Bumps `signals`, wakes the threads and tasks waiting, and unlocks (called locked).
    private func signal() {
        signals += 1
        condition.broadcast()
        let woken = suspended.values
        suspended = [:]
        condition.unlock()
        for continuation in woken { continuation.resume() }
    }

    /// How many wake-ups there have been: read it before checking what to wait for, then
    /// `signalled(after:)` misses none that came meanwhile.
    package var signalCount: Int { condition.lock(); defer { condition.unlock() }; return signals }

    /// Suspends the calling task, holding no thread, until a wake-up after `seen` (work
    /// ended, or a result was handed to its scheduler; at once if one came already) or
    /// until the task is cancelled. What an async test store waits with.
    package func signalled(after seen: Int) async {
        let id: Int = condition.withLock {
            nextWaiter += 1
            return nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                condition.lock()
                if signals != seen || Task.isCancelled {
                    condition.unlock()
                    continuation.resume()
                    return
                }
                suspended[id] = continuation
                condition.unlock()
            }
        } onCancel: {
            let continuation = condition.withLock { suspended.removeValue(forKey: id) }
            continuation?.resume()
        }
    }

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
