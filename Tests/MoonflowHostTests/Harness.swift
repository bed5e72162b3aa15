import Foundation
import PluginFixtures
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowTesting
import StreamsTesting
import XCTest

/// The event log read as the tests compare it (`values`, `mutations`).
extension EventLog: TimedEvents {
    public var timedEvents: [(t: Int, event: FeatureEvent)] { all.map { ($0.t, $0.event) } }
}

/// A virtual-clock `FeatureHost` over plugins written to a fresh temporary folder: for what the
/// host assembles (services, interactors, `mf.compose`, loading). MoonflowLuaTests has a
/// harness of its own with nothing but MoonflowLua.
///
///     let h = try Harness(["probe/init.lua": Probe.source("return env.services.fetch(1)")])
///     h.host.register(service: "fetch") { args in args[0] }
///     try h.load()
///     try h.send(["type": "go"])
///     XCTAssertEqual(h.log.values, ["0:1", "0:|"])
final class Harness: VirtualClockHarness {
    let folder: PluginFolder
    var dir: String { folder.dir }
    let host: FeatureHost
    let log = EventLog()
    private(set) var feature: (any RunningFeature)!

    init(
        _ files: [String: String], timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512,
        profile: LuaState.Profile = .trusted
    ) throws {
        folder = try PluginFolder(files)
        host = try FeatureHost(
            configuration: .init(
                searchPaths: [folder.dir], profile: profile, timeLimitMs: timeLimitMs,
                memoryLimitMB: memoryLimitMB, clock: .virtual))
    }

    var clock: TestScheduler { host.testScheduler! }

    /// Full path of a file in the temporary folder.
    func path(_ relative: String) -> String { folder.path(relative) }

    /// Loads a plugin (by name, or a path relative to the folder), observes it and starts it.
    @discardableResult
    func load(_ spec: String = "probe") throws -> any RunningFeature {
        let resolved = spec.contains("/") || spec.hasSuffix(".lua") ? path(spec) : spec
        let f = try host.load(resolved)
        let log = self.log
        let clock = self.clock
        _ = f.events.observe { event in log.append(event, t: clock.now) }
        f.start()
        feature = f
        settle()
        return f
    }

    var running: any RunningFeature { feature }

    /// Runs everything due now, waiting in real time for async services to re-enter.
    func settle() { host.settle(timeout: 10) }

    func advance(to target: Int) { host.advance(to: target) }
}

/// Awaits `body`, failing after `seconds` of real time.
func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)); return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimeoutError(seconds: seconds)
        }
        return value
    }
}

struct TimeoutError: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "timed out after \(seconds) s" }
}
