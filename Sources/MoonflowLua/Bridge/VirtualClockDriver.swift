import Foundation
import LuaKit
import Streams

/// Driving Lua features on a virtual clock: run what is due, wait in real time for
/// async Swift work to re-enter (in the order it was called), and move the clock from
/// one due time to the next. `FeatureHost`'s `settle`, `advance` and `runUntilIdle`
/// are this, as is any harness that runs a `LuaFeature` without a host.
///
///     let driver = VirtualClockDriver(clock: clock, bridge: bridge)
///     driver.advance(to: 300)    // the debounce fires, the service answers
///
/// Under `moonflow test` the running test's deadline ends every wait, so a service
/// that never answers fails the test instead of hanging it.
package struct VirtualClockDriver {
    package let clock: TestScheduler
    package let bridge: LuaBridge

    package init(clock: TestScheduler, bridge: LuaBridge) {
        self.clock = clock
        self.bridge = bridge
    }

    /// Runs everything due now, waiting (up to `timeout` seconds each) for async
    /// services to re-enter on this clock; work that re-enters on another clock
    /// (a test store dropped mid-call) is not waited for.
    package func settle(timeout: TimeInterval = 30) {
        let clock = self.clock
        let pending = bridge.pending
        let lua = bridge.lua
        let bridge = self.bridge
        // Results that arrived meanwhile re-enter here, in the order their calls were made.
        bridge.releaseReentries(on: clock)
        clock.advance(by: 0)
        while pending.inFlight(on: clock) > 0 && !lua.testDeadlinePassed {
            pending.wait(timeout: timeout) {
                bridge.hasArrivedReentries(on: clock) || clock.hasDueWork || pending.inFlight(on: clock) == 0
                    || lua.testDeadlinePassed
            }
            bridge.releaseReentries(on: clock)
            clock.advance(by: 0)
        }
    }

    /// Moves the clock to `target`, settling at every due time on the way.
    package func advance(to target: Int) {
        while !bridge.lua.testDeadlinePassed {
            settle()
            if let next = clock.nextDueTime, next <= target { clock.advance(to: next) } else { break }
        }
        if target > clock.now { clock.advance(to: target) }
        settle()
    }

    /// Runs until nothing is scheduled or in flight, or until the clock reaches `until`.
    /// - Returns: true when it stopped at `until` with work still scheduled.
    package func runUntilIdle(until: Int? = nil) -> Bool {
        while !bridge.lua.testDeadlinePassed {
            settle()
            guard let next = clock.nextDueTime else { return false }
            if let until, next > until { advance(to: until); return true }
            clock.advance(to: next)
        }
        return true
    }
}

extension TestScheduler {
    /// Whether something is due at the current virtual time.
    var hasDueWork: Bool { nextDueTime.map { $0 <= now } ?? false }
}
