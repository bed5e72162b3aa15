import Streams
import Foundation

/// Driving a host on the virtual clock (`clock: .virtual`): what
/// `moonflow run --clock virtual`, the test store and Swift tests share.
///
///     let host = try FeatureHost(configuration: .init(clock: .virtual))
///     let search = try host.load("search")
///     try search.send(["type": "query", "text": "a"])
///     host.advance(by: 300)      // the debounce fires, the service answers
///     host.runUntilIdle()        // every timer and service, to the end
///
/// Time jumps from one scheduled event to the next; async Swift services run on
/// real threads, and the clock does not move while one is in flight.
extension FeatureHost {
    /// The virtual clock (the host must have been made with `clock: .virtual`).
    private var clock: TestScheduler {
        guard let testScheduler else { preconditionFailure("this FeatureHost runs on the real clock; drive it with send and wait, not advance") }
        return testScheduler
    }

    /// Runs everything due now, waiting in real time (up to `timeout` seconds
    /// each) for async services to re-enter on this host's clock, in the order
    /// they were called (only here: never in the middle of a send). Work that
    /// re-enters on another clock (a test store that was dropped mid-call)
    /// is not waited for. Under `moonflow test`, the test's deadline ends
    /// the wait, so a service that never answers fails the test.
    public func settle(timeout: TimeInterval = 30) {
        let clock = self.clock
        let pending = bridge.pending
        let lua = self.lua
        let bridge = self.bridge
        // Results that arrived meanwhile re-enter here, in the order their calls were made.
        bridge.releaseReentries(on: clock)
        clock.advance(by: 0)
        while pending.inFlight(on: clock) > 0 && !lua.testDeadlinePassed {
            pending.wait(timeout: timeout) {
                bridge.hasArrivedReentries(on: clock) || clock.hasDueWork || pending.inFlight(on: clock) == 0 || lua.testDeadlinePassed
            }
            bridge.releaseReentries(on: clock)
            clock.advance(by: 0)
        }
    }

    /// Moves the clock to `target`, settling at every due time on the way.
    public func advance(to target: Int) {
        let clock = self.clock
        while !lua.testDeadlinePassed {
            settle()
            if let next = clock.nextDueTime, next <= target { clock.advance(to: next) } else { break }
        }
        if target > clock.now { clock.advance(to: target) }
        settle()
    }

    /// Moves the clock `ms` milliseconds on.
    public func advance(by ms: Int) { advance(to: clock.now.saturatingAdd(max(0, ms))) }

    /// Runs until nothing is scheduled or in flight, or until the clock reaches `until`.
    /// - Returns: true when it stopped at `until` with work still scheduled.
    @discardableResult
    public func runUntilIdle(until: Int? = nil) -> Bool {
        let clock = self.clock
        while !lua.testDeadlinePassed {
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
