import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import Streams
import XCTest

/// An action whose `handle` returns one plain mutation is handled and reduced in one
/// protected call (LuaFeature's step). What a user sees stays as with two calls: `handle`
/// and `reduce` each get the whole time limit, an event from inside `handle` has no cause
/// while one from `reduce` names the action, and each half's failure keeps its stage.
final class SteppedActionTests: XCTestCase {
    static func spinner(handle: String, reduce: String) -> String {
        """
        local mf = require "moonflow"
        local function spin(ms) local t = wallclock() while wallclock() - t < ms do end end
        return mf.feature {
          name = "spin", initial = { n = 0 },
          actions = { go = {} }, mutations = { add = { by = "integer" } },
          handle = function(a, state) \(handle) return { type = "add", by = 1 } end,
          reduce = function(state, m) \(reduce) state.n = state.n + m.by return state end,
        }
        """
    }

    /// A harness whose Lua has `wallclock()`, milliseconds of real time: a spin by it lasts
    /// as long on a loaded machine as on a quiet one.
    private func harness(_ source: String, timeLimitMs: Int64) throws -> Harness {
        let h = try Harness(["spin/init.lua": source], timeLimitMs: timeLimitMs)
        let started = DispatchTime.now().uptimeNanoseconds
        try h.host.lua.setGlobal(
            "wallclock",
            .function { _ in
                [.value(.number(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6))]
            })
        return h
    }

    func testHandleAndReduceEachGetTheWholeTimeLimit() throws {
        // 0.9 s of real time in each half of a 1.5 s limit: together they are past it, each alone is not.
        let h = try harness(Self.spinner(handle: "spin(900)", reduce: "spin(900)"), timeLimitMs: 1500)
        let spin = try h.load("spin")
        try spin.send(["type": "go"])
        h.settle()
        XCTAssertEqual(h.log.errors.map(\.message), [])
        XCTAssertEqual(spin.state["n"], 1)
    }

    func testAReduceOverItsLimitStopsWithStageReduceAndTheStateRolledBack() throws {
        let h = try harness(Self.spinner(handle: "", reduce: "state.n = 99 spin(5000)"), timeLimitMs: 300)
        let spin = try h.load("spin")
        let stages = Locked<[FeatureError.Stage]>([])
        let token = spin.observe(kinds: .error) { [weak spin] _ in
            if let stage = spin?.eventError?.stage { stages.withLock { $0.append(stage) } }
        }
        defer { token.cancel() }
        try spin.send(["type": "go"])
        h.settle()
        XCTAssertEqual(stages.withLock { $0 }, [.reduce])
        XCTAssertEqual(spin.state["n"], 0, "the write before the stop is undone")
    }

    func testAnEventFromHandleHasNoCauseAndOneFromReduceNamesTheAction() throws {
        // No declared state: a field `initial` lacks, read, is a log event (once per site).
        let source = """
            local mf = require "moonflow"
            return mf.feature {
              name = "probe", initial = { n = 0 },
              actions = { go = {} }, mutations = { add = {} },
              handle = function(a, state) local _ = state.inHandle return { type = "add" } end,
              reduce = function(state, m) local _ = state.inReduce state.n = state.n + 1 return state end,
            }
            """
        let h = try Harness(["probe/init.lua": source])
        let probe = try h.load("probe")
        let causes = Locked<[String: LuaValue?]>([:])
        let token = probe.observe(kinds: .log) { [weak probe] event in
            guard case .log(let message, _) = event else { return }
            let key = message.contains("inHandle") ? "handle" : "reduce"
            let cause = probe?.eventCause
            causes.withLock { $0[key] = .some(cause) }
        }
        defer { token.cancel() }
        try probe.send(["type": "go"])
        h.settle()
        let seen = causes.withLock { $0 }
        XCTAssertEqual(seen.count, 2, "\(seen)")
        XCTAssertEqual(seen["handle"], .some(nil))
        XCTAssertEqual(seen["reduce"], .some(["type": "go"]))
        XCTAssertEqual(probe.state["n"], 1)
    }

    func testAHandleErrorKeepsStageHandleAndTheNextActionRuns() throws {
        let source = """
            local mf = require "moonflow"
            return mf.feature {
              name = "probe", initial = { n = 0 },
              actions = { go = { fail = "boolean" } }, mutations = { add = {} },
              handle = function(a) if a.fail then error("no way") end return { type = "add" } end,
              reduce = function(state, m) state.n = state.n + 1 return state end,
            }
            """
        let h = try Harness(["probe/init.lua": source])
        let probe = try h.load("probe")
        let stages = Locked<[FeatureError.Stage]>([])
        let token = probe.observe(kinds: .error) { [weak probe] _ in
            if let stage = probe?.eventError?.stage { stages.withLock { $0.append(stage) } }
        }
        defer { token.cancel() }
        try probe.send(["type": "go", "fail": true])
        try probe.send(["type": "go", "fail": false])
        h.settle()
        XCTAssertEqual(stages.withLock { $0 }, [.handle])
        XCTAssertTrue(h.log.errors.first?.message.contains("probe/init.lua:5: no way") == true, "\(h.log.errors)")
        XCTAssertEqual(probe.state["n"], 1)
    }
}
