import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import MoonflowTesting
import StreamsTesting
import XCTest

/// What a stream probe emitted, read from the event log (`MoonflowTesting.EventLog`).
extension EventLog {
    /// The `value` of each reduced `v` mutation as `t:value`, and errors as `t:error:message`:
    /// what a stream probe emitted, with exact virtual times.
    var values: [String] { mutations("value") }

    /// One field of each reduced mutation as `t:field`, errors as `t:error:message`.
    func mutations(_ field: String) -> [String] {
        all.compactMap { entry in
            switch entry.event {
            case .mutation(let m, _): "\(entry.t):\(Render.plain(m[field] ?? .nil))"
            case .error(let message, _): "\(entry.t):error:\(EventLog.firstLine(message))"
            default: nil
            }
        }
    }
}

enum Render {
    static func json(_ v: LuaValue) -> String { EventLog.json(v) }

    /// Strings bare, everything else as JSON.
    static func plain(_ v: LuaValue) -> String {
        if case .string(let s) = v { return s.description }
        return json(v)
    }
}

/// A virtual-clock `FeatureHost` over plugins written to a fresh temporary folder: for what the
/// host assembles (services, interactors, `mf.compose`, loading). MoonflowLuaTests has a
/// harness of its own with nothing but MoonflowLua.
///
///     let h = try Harness(["probe/init.lua": source])
///     try h.load("probe")
///     try h.send(["type": "go"])
///     h.advance(to: 500)
///     XCTAssertEqual(h.log.values, ["100:1"])
final class Harness {
    let dir: String
    let host: FeatureHost
    let log = EventLog()
    private(set) var feature: (any RunningFeature)!

    init(_ files: [String: String], timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512,
         profile: LuaState.Profile = .trusted) throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mf\(UUID().uuidString.prefix(8))")
        for (path, text) in files {
            let full = (dir as NSString).appendingPathComponent(path)
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
        host = try FeatureHost(configuration: .init(searchPaths: [dir], profile: profile, timeLimitMs: timeLimitMs,
                                                    memoryLimitMB: memoryLimitMB, clock: .virtual))
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    var clock: TestScheduler { host.testScheduler! }

    /// Full path of a file in the temporary folder.
    func path(_ relative: String) -> String { (dir as NSString).appendingPathComponent(relative) }

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

    /// Sends an action now and runs what is due now.
    func send(_ action: LuaValue) throws {
        try feature.send(action)
        settle()
    }

    /// Sends at a virtual time (moving the clock there first).
    func send(_ action: LuaValue, at time: Int) throws {
        advance(to: time)
        try send(action)
    }

    /// Runs everything due now, waiting in real time for async services to re-enter.
    func settle() { host.settle(timeout: 10) }

    /// Moves the clock to `target`, settling at every due time on the way.
    func advance(to target: Int) { host.advance(to: target) }

    func advance(by ms: Int) { advance(to: clock.now + ms) }

    /// The feature's current state snapshot.
    var state: LuaValue { feature.state }
}

/// A feature whose `go` action runs the Lua `body` (which returns a stream) and reduces each of
/// the stream's values as a `v` mutation; a final `|` marks completion.
enum Probe {
    static func source(_ body: String, header: String = "", extra: String = "") -> String {
        """
        local mf = require "moonflow"
        \(header)
        return mf.feature {
          name = "probe",
          initial = { seen = {} },
          actions = { go = { n = "any?" } },
          mutations = { v = { value = "any" } },
          \(extra)
          handle = function(action, state, env)
            local s = (function() \(body) end)()
            return mf.concat(s:map(function(x) return { type = "v", value = x } end), mf.just { type = "v", value = "|" })
          end,
          reduce = function(state, m) state.seen[#state.seen + 1] = m.value; return state end,
        }
        """
    }
}

/// Awaits `body`, failing after `seconds` of real time.
func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask { try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)); return nil }
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
