import Foundation
import PluginFixtures
import LuaKit
import MoonflowLua
import Runtime
import Streams
import StreamsTesting
import XCTest

/// A Lua feature on a virtual clock, with nothing but MoonflowLua: plugins written to a fresh
/// temporary folder, loaded as `LuaFeature`s on one Lua state with the `moonflow` module.
/// (Services, interactors and `mf.compose` are the host's: MoonflowHostTests.)
///
///     let h = try Harness(["probe/init.lua": source])
///     try h.load("probe")
///     try h.send(["type": "go"])
///     h.advance(to: 500)
///     XCTAssertEqual(h.log.values, ["100:1"])
final class Harness: VirtualClockHarness {
    let folder: PluginFolder
    var dir: String { folder.dir }
    let lua: LuaState
    let bridge: LuaBridge
    let clock = TestScheduler()
    /// The feature's events (an app's tests use MoonflowTesting's `EventLog`; these stay below it).
    var log: RecordedEvents { RecordedEvents(recorder.withLock { $0 }) }
    private let recorder: Locked<TestRecorder<FeatureEvent>>
    private(set) var feature: LuaFeature!
    private var observations: [Disposable] = []

    init(_ files: [String: String], timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512) throws {
        folder = try PluginFolder(files)
        recorder = Locked(TestRecorder(clock))
        lua = try LuaState(memoryLimit: memoryLimitMB.map { $0 << 20 }, timeLimitMs: timeLimitMs)
        lua.plainDataOnly = true
        bridge = try LuaBridge(lua: lua, scheduler: clock)
        try lua.call(bridge.dispatch.installNext, [])
        try MoonflowModule.install(in: lua, bridge: bridge)
        // `require "NAME.mod"` finds DIR/NAME/mod.lua.
        try lua.call(
            try lua.load(string: "package.path = ... .. '/?.lua;' .. package.path", name: "paths"),
            [.value(.string(LuaString(dir)))])
    }

    /// Full path of a file in the temporary folder.
    func path(_ relative: String) -> String { folder.path(relative) }

    /// Loads a plugin (by name, or a path relative to the folder), observes it and starts it.
    /// With `observing: false` nothing listens to it (no events are recorded, and no one
    /// listens for its states: reduces that may leave their writes in Lua do).
    @discardableResult
    func load(_ spec: String = "probe", observing: Bool = true) throws -> LuaFeature {
        let file = spec.contains("/") || spec.hasSuffix(".lua") ? path(spec) : path("\(spec)/init.lua")
        let definition = try lua.call(try lua.load(file: file), []) {
            try FeatureDefinition.read($0, 1, kind: .feature)
        }
        let none = try lua.makeTable([])
        let env = try lua.call(
            bridge.dispatch.makeEnv,
            [.ref(definition.table), .ref(none), .ref(none), bridge.serviceResult(definition), .value(.nil)]
        ) { try $0.ref(1) }
        let f = try LuaFeature(
            definition: definition, bridge: bridge, env: env, source: file,
            context: SchedulerContext(state: clock, output: ImmediateScheduler.shared, work: clock))
        let recorder = self.recorder
        guard observing else {
            f.start()
            feature = f
            settle()
            return f
        }
        observations.append(f.outlet.add { event in recorder.withLock { $0 }.observer.send(value: event) })
        // In every test: the state as JSON written straight from the Lua table is the
        // snapshot's JSON (`moonflow run --format jsonl` prints the first).
        observations.append(
            f.outlet.add(kinds: .state) { [weak f] event in
                guard let f, case .state(let state, let seq) = event else { return }
                let fromLua = Result { String(decoding: try f.stateJSON(), as: UTF8.self) }
                XCTAssertEqual(try? fromLua.get(), try? state.json(), "state#\(seq): JSON from the Lua table")
            })
        f.start()
        feature = f
        settle()
        return f
    }

    var running: any RunningFeature { feature }

    /// Forgets the events so far: what the test reads next starts here.
    func clearLog() { recorder.withLock { $0 = TestRecorder(clock) } }

    private var driver: VirtualClockDriver { VirtualClockDriver(clock: clock, bridge: bridge) }

    /// Runs everything due now.
    func settle() { driver.settle(timeout: 10) }

    func advance(to target: Int) { driver.advance(to: target) }
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
    static func assertFails(
        _ body: String, _ expected: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let values = try run(body)
        XCTAssertEqual(values.count, 1, "\(values)", file: file, line: line)
        XCTAssertTrue(values.first?.hasPrefix("0:error:") == true, "\(values)", file: file, line: line)
        XCTAssertTrue(values.first?.contains(expected) == true, "\(values)", file: file, line: line)
    }
}
