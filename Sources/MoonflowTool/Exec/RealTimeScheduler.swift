import Dispatch
import Foundation
import MoonflowHost
import MoonflowHostTools
import LuaKit
import MoonflowLua
import Streams

/// Real time, driven from one thread: what `moonflow exec` runs Lua streams on.
/// Timers are due at real milliseconds since the scheduler was made; the
/// thread that owns the Lua state runs them in `runUntilIdle`, so every Lua
/// callback runs on that thread, and the program ends when nothing is left.
///
///     let clock = RealTimeScheduler()
///     clock.schedule(after: 50) { print("50 ms later") }
///     clock.runUntilIdle(pending: bridge.pending)   // returns after it ran
final class RealTimeScheduler: Scheduler, @unchecked Sendable {
    /// Holds the work in due order (its own clock follows real time as it is driven).
    private let queue = TestScheduler()
    private let start = DispatchTime.now()

    var now: Int { Int((DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1_000_000) }

    @discardableResult
    func schedule(_ action: @escaping @Sendable () -> Void) -> Disposable {
        queue.schedule(at: now, action)
    }

    @discardableResult
    func schedule(after delayMs: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        queue.schedule(at: now.saturatingAdd(max(0, delayMs)), action)
    }

    @discardableResult
    func schedule(after delayMs: Int, interval: Int, _ action: @escaping @Sendable () -> Void) -> Disposable {
        precondition(interval > 0, "interval must be positive")
        let serial = SerialDisposable()
        @Sendable func arm(at time: Int) {
            serial.inner = queue.schedule(at: time) {
                action()
                let (next, pastTheEnd) = time.addingReportingOverflow(interval)
                if !serial.isDisposed && !pastTheEnd { arm(at: next) }
            }
        }
        arm(at: now.saturatingAdd(max(0, delayMs)))
        return serial
    }

    /// Runs work as it falls due until nothing is scheduled and no async work
    /// (Swift services) is in flight.
    func runUntilIdle(pending: PendingWork) {
        while true {
            queue.advance(to: max(queue.now, now))
            let next = queue.nextDueTime
            if next == nil && pending.inFlight == 0 { return }
            let wait = next.map { Double(max(0, $0 - now)) / 1000 } ?? 1
            pending.wait(timeout: wait) { [queue] in
                queue.nextDueTime.map { $0 <= self.now } ?? (pending.inFlight == 0)
            }
        }
    }
}
