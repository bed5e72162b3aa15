import Foundation
import LuaKit
import MoonflowLua
import Streams
import StreamsTesting

/// Plugins written to a fresh temporary folder for one test, and removed with it: what the
/// harnesses of MoonflowLuaTests and MoonflowHostTests load their features from.
///
///     let folder = try PluginFolder(["probe/init.lua": Probe.source("return mf.just(1)")])
///     folder.path("probe/init.lua")   // /tmp/mf1A2B3C4D/probe/init.lua
public final class PluginFolder: Sendable {
    /// The folder itself.
    public let dir: String

    public init(_ files: [String: String]) throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mf\(UUID().uuidString.prefix(8))")
        for (path, text) in files {
            let full = (dir as NSString).appendingPathComponent(path)
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// Full path of a file in the folder.
    public func path(_ relative: String) -> String { (dir as NSString).appendingPathComponent(relative) }
}

/// A feature whose `go` action runs the Lua `body` (which returns a stream) and reduces each of
/// the stream's values as a `v` mutation; a final `|` marks completion.
///
///     Probe.source("return mf.timer(100, 'a')")   // values: ["100:a", "100:|"]
/// Files under `Tests/Fixtures`, which the end-to-end tests read too.
public enum Fixtures {
    /// The text of `Tests/Fixtures/PATH`.
    public static func fixture(_ path: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        return try String(
            contentsOf: root.appendingPathComponent("Fixtures").appendingPathComponent(path), encoding: .utf8)
    }
}

public enum Probe {
    public static func source(_ body: String, header: String = "", extra: String = "") -> String {
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

extension Probe {
    /// One field of each reduced mutation as `t:field`, and errors as `t:error:message`: what
    /// a probe emitted (field `value`), with exact virtual times.
    public static func mutations(_ field: String, in events: [(t: Int, event: FeatureEvent)]) -> [String] {
        events.compactMap { t, event in
            switch event {
            case .mutation(let m, _): "\(t):\(Render.plain(m[field] ?? .nil))"
            case .error(let message, _): "\(t):error:\(FeatureEvent.firstLine(message))"
            default: nil
            }
        }
    }
}

/// Values as the tests compare them.
public enum Render {
    /// Compact JSON with sorted keys (the description if it cannot be JSON).
    public static func json(_ v: LuaValue) -> String { FeatureEvent.sortedJSON(v) }

    /// Strings bare, everything else as `json`.
    public static func plain(_ v: LuaValue) -> String {
        if case .string(let s) = v { return s.description }
        return json(v)
    }
}

/// A feature's events with their virtual times, read as the tests compare them: the host's
/// harness keeps them in MoonflowTesting's `EventLog`, the Lua layer's (below MoonflowTesting)
/// in a `TestRecorder` (read through `RecordedEvents`).
public protocol TimedEvents {
    /// Every event so far with its time, in order.
    var timedEvents: [(t: Int, event: FeatureEvent)] { get }
}

extension TimedEvents {
    /// The `value` of each reduced `v` mutation as `t:value`, and errors as `t:error:message`:
    /// what a stream probe emitted, with exact virtual times.
    public var values: [String] { mutations("value") }

    /// One field of each reduced mutation as `t:field`, errors as `t:error:message`.
    public func mutations(_ field: String) -> [String] { Probe.mutations(field, in: timedEvents) }

    /// Every event as one short line: `100 mutation#2 {"n":1,"type":"add"}`, `0 error boom`.
    public var lines: [String] { timedEvents.map { $0.event.line(at: $0.t) } }

    /// Errors, with their `file:line`.
    public var errors: [(message: String, location: String?)] {
        timedEvents.compactMap { if case .error(let m, let w) = $0.event { (m, w) } else { nil } }
    }
}

/// The events a `TestRecorder` holds at one moment.
public struct RecordedEvents: TimedEvents {
    public let timedEvents: [(t: Int, event: FeatureEvent)]

    public init(_ recorder: TestRecorder<FeatureEvent>) {
        timedEvents = recorder.events.compactMap { recorded in recorded.event.value.map { (recorded.time, $0) } }
    }
}

/// What the harnesses of MoonflowLuaTests and MoonflowHostTests share: the feature loaded
/// last, on a virtual clock, sent actions as a test writes them.
///
///     try h.send(["type": "go"], at: 100)   // the clock moves to 100, then the action goes
///     h.advance(by: 50)
///     XCTAssertEqual(h.state, ["n": 1])
public protocol VirtualClockHarness: AnyObject {
    /// The feature loaded last.
    var running: any RunningFeature { get }
    var clock: TestScheduler { get }
    /// Runs everything due now (a host also waits in real time for async services to re-enter).
    func settle()
    /// Moves the clock to `target`, settling at every due time on the way.
    func advance(to target: Int)
}

extension VirtualClockHarness {
    /// Sends an action now and runs what is due now.
    public func send(_ action: LuaValue) throws {
        try running.send(action)
        settle()
    }

    /// Sends at a virtual time (moving the clock there first).
    public func send(_ action: LuaValue, at time: Int) throws {
        advance(to: time)
        try send(action)
    }

    public func advance(by ms: Int) { advance(to: clock.now + ms) }

    /// The feature's current state snapshot.
    public var state: LuaValue { running.state }
}
