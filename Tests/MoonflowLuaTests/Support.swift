import Foundation
import PluginFixtures
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
    func mutations(_ field: String) -> [String] { Probe.mutations(field, in: all.map { ($0.t, $0.event) }) }

    /// Every event as one short line: `100 mutation#2 {"n":1,"type":"add"}`, `0 error boom`.
    var lines: [String] { all.map { $0.event.line(at: $0.t) } }

    /// Errors, with their `file:line`.
    var errors: [(message: String, location: String?)] {
        all.compactMap { if case .error(let m, let w) = $0.event { (m, w) } else { nil } }
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
    let folder: PluginFolder
    var dir: String { folder.dir }
    let lua: LuaState
    let bridge: LuaBridge
    let clock = TestScheduler()
    let log = EventRecord()
    private(set) var feature: LuaFeature!
    private var observations: [Disposable] = []

    init(_ files: [String: String], timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512) throws {
        folder = try PluginFolder(files)
        lua = try LuaState(memoryLimit: memoryLimitMB.map { $0 << 20 }, timeLimitMs: timeLimitMs)
        lua.plainDataOnly = true
        bridge = try LuaBridge(lua: lua, scheduler: clock)
        try lua.call(bridge.dispatch.installNext, [])
        try MoonflowModule.install(in: lua, bridge: bridge)
        // `require "NAME.mod"` finds DIR/NAME/mod.lua.
        try lua.call(try lua.load(string: "package.path = ... .. '/?.lua;' .. package.path", name: "paths"), [.value(.string(LuaString(dir)))])
    }

    /// Full path of a file in the temporary folder.
    func path(_ relative: String) -> String { folder.path(relative) }

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

/// The probe feature (`Probe.source`) run once.
extension Probe {

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
