import MoonflowLua
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
    /// The virtual clock's driver (the host must have been made with `clock: .virtual`).
    private var driver: VirtualClockDriver {
        guard let testScheduler else {
            preconditionFailure("this FeatureHost runs on the real clock; drive it with send and wait, not advance")
        }
        return VirtualClockDriver(clock: testScheduler, bridge: bridge)
    }

    /// Runs everything due now, waiting in real time (up to `timeout` seconds
    /// each) for async services to re-enter on this host's clock, in the order
    /// they were called (only here: never in the middle of a send). Work that
    /// re-enters on another clock (a test store that was dropped mid-call)
    /// is not waited for. Under `moonflow test`, the test's deadline ends
    /// the wait, so a service that never answers fails the test.
    package func settle(timeout: TimeInterval = 30) { driver.settle(timeout: timeout) }

    /// Moves the clock to `target`, settling at every due time on the way.
    package func advance(to target: Int) { driver.advance(to: target) }

    /// Moves the clock `ms` milliseconds on.
    public func advance(by ms: Int) { advance(to: driver.clock.now.saturatingAdd(max(0, ms))) }

    /// Runs until nothing is scheduled or in flight, or until the clock reaches `until`.
    /// - Returns: true when it stopped at `until` with work still scheduled.
    @discardableResult
    public func runUntilIdle(until: Int? = nil) -> Bool { driver.runUntilIdle(until: until) }
}
