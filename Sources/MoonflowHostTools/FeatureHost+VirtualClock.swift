import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import Streams

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
    /// Which clock a host runs on: `.real` time, or the `.virtual` clock `advance(by:)` and
    /// `runUntilIdle()` move.
    public typealias Clock = FeatureClock

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

extension FeatureHost.Configuration {
    /// The clock the host runs on: `.real` (the default) or `.virtual`, moved by hand.
    public var clock: FeatureHost.Clock {
        get { virtualClock ? .virtual : .real }
        set { virtualClock = newValue == .virtual }
    }

    /// A configuration that names its clock, and any of MoonflowHost's settings and
    /// `sources`.
    public init(
        searchPaths: [String] = ["plugins"], profile: LuaState.Profile = .trusted,
        timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512, clock: FeatureHost.Clock,
        isolatesPlugins: Bool? = nil,
        sources: [any PluginSource] = []
    ) {
        self.init(
            searchPaths: searchPaths, profile: profile, timeLimitMs: timeLimitMs, memoryLimitMB: memoryLimitMB,
            isolatesPlugins: isolatesPlugins)
        self.clock = clock
        self.sources = sources
    }

    /// A configuration with plugin `sources`, and any of MoonflowHost's settings.
    public init(
        searchPaths: [String] = ["plugins"], profile: LuaState.Profile = .trusted,
        timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512,
        isolatesPlugins: Bool? = nil,
        sources: [any PluginSource]
    ) {
        self.init(
            searchPaths: searchPaths, profile: profile, timeLimitMs: timeLimitMs, memoryLimitMB: memoryLimitMB,
            isolatesPlugins: isolatesPlugins)
        self.sources = sources
    }
}
