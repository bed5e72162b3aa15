import Foundation
import LuaKit
import MoonflowLua
import Runtime
import Streams
import StreamsTesting
import XCTest

/// A feature's events with their virtual times, as the tests read them (an app's tests use
/// MoonflowTesting's `EventLog`; these tests stay below it).
final class EventRecord: @unchecked Sendable {
    struct Entry {
        let t: Int
        let event: FeatureEvent
    }
    private let lock = NSLock()
    private var items: [Entry] = []

    func append(_ event: FeatureEvent, t: Int) { lock.lock(); items.append(Entry(t: t, event: event)); lock.unlock() }
    var all: [Entry] { lock.lock(); defer { lock.unlock() }; return items }
    func clear() { lock.lock(); items = []; lock.unlock() }

    /// The `value` of each reduced `v` mutation as `t:value`, and errors as `t:error:message`:
    /// what a stream probe emitted, with exact virtual times.
    var values: [String] { mutations("value") }

    /// One field of each reduced mutation as `t:field`, errors as `t:error:message`.
    func mutations(_ field: String) -> [String] {
        all.compactMap { entry in
            switch entry.event {
            case .mutation(let m, _): "\(entry.t):\(Render.plain(m[field] ?? .nil))"
            case .error(let message, _): "\(entry.t):error:\(FeatureEvent.firstLine(message))"
            default: nil
            }
        }
    }

    /// Every event as one short line: `100 mutation#2 {"n":1,"type":"add"}`, `0 error boom`.
    var lines: [String] { all.map { $0.event.line(at: $0.t) } }

    /// Errors, with their `file:line`.
    var errors: [(message: String, location: String?)] {
        all.compactMap { if case .error(let m, let w) = $0.event { (m, w) } else { nil } }
    }
}

enum Render {
    static func json(_ v: LuaValue) -> String { FeatureEvent.sortedJSON(v) }

    /// Strings bare, everything else as JSON.
    static func plain(_ v: LuaValue) -> String {
        if case .string(let s) = v { return s.description }
        return json(v)
    }
}

/// A Lua feature on a virtual clock, with nothing but MoonflowLua: plugins written to a fresh
/// temporary folder, loaded as `LuaFeature`s on one Lua state with the `moonflow` module.
/// (Services, interactors and `mf.compose` are the host's: MoonflowHostTests.)
///
///     let h = try Harness(["probe/init.lua": source])
///     try h.load("probe")
///     try h.send(["type": "go"])
///     h.advance(to: 500)
///     XCTAssertEqual(h.log.values, ["100:1"])
final class Harness {
    let dir: String
    let lua: LuaState
    let bridge: LuaBridge
    let clock = TestScheduler()
    let log = EventRecord()
    private(set) var feature: LuaFeature!
    private var observations: [Disposable] = []

    init(_ files: [String: String], timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512) throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mf\(UUID().uuidString.prefix(8))")
        for (path, text) in files {
            let full = (dir as NSString).appendingPathComponent(path)
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
        lua = try LuaState(memoryLimit: memoryLimitMB.map { $0 << 20 }, timeLimitMs: timeLimitMs)
        lua.plainDataOnly = true
        bridge = try LuaBridge(lua: lua, scheduler: clock)
        try lua.call(bridge.dispatch.installNext, [])
        try MoonflowModule.install(in: lua, bridge: bridge)
        // `require "NAME.mod"` finds DIR/NAME/mod.lua.
        try lua.call(try lua.load(string: "package.path = ... .. '/?.lua;' .. package.path", name: "paths"), [.value(.string(LuaString(dir)))])
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// Full path of a file in the temporary folder.
    func path(_ relative: String) -> String { (dir as NSString).appendingPathComponent(relative) }

    /// Loads a plugin (by name, or a path relative to the folder), observes it and starts it.
    @discardableResult
    func load(_ spec: String = "probe") throws -> LuaFeature {
        let file = spec.contains("/") || spec.hasSuffix(".lua") ? path(spec) : path("\(spec)/init.lua")
        let definition = try lua.call(try lua.load(file: file), []) { try FeatureDefinition.read($0, 1, kind: .feature) }
        let none = try lua.makeTable([])
        let env = try lua.call(bridge.dispatch.makeEnv, [.ref(definition.table), .ref(none), .ref(none), bridge.serviceResult(definition), .value(.nil)]) { try $0.ref(1) }
        let f = try LuaFeature(definition: definition, bridge: bridge, env: env, source: file,
                               context: SchedulerContext(state: clock, output: ImmediateScheduler.shared, work: clock))
        let log = self.log
        let clock = self.clock
        observations.append(f.outlet.add { event in log.append(event, t: clock.now) })
        // In every test: the state as JSON written straight from the Lua table is the
        // snapshot's JSON (`moonflow run --format jsonl` prints the first).
        observations.append(f.outlet.add(kinds: .state) { [weak f] event in
            guard let f, case .state(let state, let seq) = event else { return }
            let fromLua = Result { String(decoding: try f.stateJSON(), as: UTF8.self) }
            XCTAssertEqual(try? fromLua.get(), try? state.json(), "state#\(seq): JSON from the Lua table")
        })
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

    private var driver: VirtualClockDriver { VirtualClockDriver(clock: clock, bridge: bridge) }

    /// Runs everything due now.
    func settle() { driver.settle(timeout: 10) }

    /// Moves the clock to `target`, settling at every due time on the way.
    func advance(to target: Int) { driver.advance(to: target) }

    func advance(by ms: Int) { advance(to: clock.now + ms) }

    /// The feature's current state snapshot.
    var state: LuaValue { feature.state }
}

/// A feature whose `go` action runs the Lua `body` (which returns a stream) and reduces each of
/// the stream's values as a `v` mutation; a final `|` marks completion.
///
///     Probe.source("return mf.timer(100, 'a')")   // values: ["100:a", "100:|"]
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

    /// Runs `body` once (action `go` at 0) and returns the values up to `until`.
    static func run(_ body: String, until: Int = 1000, header: String = "") throws -> [String] {
        let h = try Harness(["probe/init.lua": source(body, header: header)])
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: until)
        return h.log.values
    }

    /// Runs `body` and checks that it only failed, at 0, with a message containing `expected`.
    static func assertFails(_ body: String, _ expected: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let values = try run(body)
        XCTAssertEqual(values.count, 1, "\(values)", file: file, line: line)
        XCTAssertTrue(values.first?.hasPrefix("0:error:") == true, "\(values)", file: file, line: line)
        XCTAssertTrue(values.first?.contains(expected) == true, "\(values)", file: file, line: line)
    }
}
