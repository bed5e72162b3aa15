import LuaKit
import PluginFixtures
import MoonflowLua
import XCTest

/// `mf.task`: a coroutine as a stream; `t:emit`, `t:await`, and cancellation closing it.
final class TaskTests: XCTestCase {
    func testATaskThatNeverYieldsIsStoppedByTheTimeLimit() throws {
        // A pattern match inside a pcall inside a loop: the stop still ends the task.
        let values = try Probe.run(
            """
            return mf.task(function(t)
              t:emit("started")
              while true do pcall(string.find, ("a"):rep(1e4), ".-.-.-b") end
            end)
            """)
        XCTAssertEqual(values.count, 2, "\(values)")
        XCTAssertEqual(values.first, "0:started")
        XCTAssertTrue(
            values.last?.hasPrefix("0:error:") == true
                && values.last?.contains("time limit of 1000 ms exceeded") == true, "\(values)")
    }

    func testEmitSendsValuesThenTheTaskCompletes() throws {
        XCTAssertEqual(
            try Probe.run("return mf.task(function(t) t:emit(1) t:emit('two') end)"), ["0:1", "0:two", "0:|"])
    }

    func testAwaitOfATimerResumesAtItsTime() throws {
        let values = try Probe.run(
            """
            return mf.task(function(t)
              t:emit("start")
              local ok, v = t:await(mf.timer(100, "tick"))
              t:emit(tostring(ok) .. " " .. v)
              local ok2, v2 = t:await(mf.interval(30))
              t:emit(tostring(ok2) .. " " .. v2)
            end)
            """)
        XCTAssertEqual(values, ["0:start", "100:true tick", "130:true 0", "130:|"])
    }

    func testAwaitTakesOnlyTheFirstValueAndStopsTheStream() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                """
                return mf.task(function(t) local _, v = t:await(mf.interval(10)) t:emit(v) end)
                """)
        ])
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 100)
        XCTAssertEqual(h.log.values, ["10:0", "10:|"])
        XCTAssertNil(h.clock.nextDueTime, "the interval was disposed after its first value")
    }

    func testAwaitOfAFailingStreamReturnsFalseAndTheError() throws {
        let values = try Probe.run(
            """
            return mf.task(function(t)
              local ok, err = t:await(mf.timer(20):flatMap(function() return mf.fail("nope") end))
              t:emit(tostring(ok) .. " " .. err)
              local ok2, err2 = t:await(mf.empty())
              t:emit(tostring(ok2) .. " " .. err2)
            end)
            """)
        XCTAssertEqual(values, ["20:false nope", "20:false the awaited stream completed without a value", "20:|"])
    }

    func testAnErrorInsideATaskFailsItsStreamWithTheLocation() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                """
                return mf.task(function(t)
                  t:emit(1)
                  t:await(mf.timer(10))
                  error("task broke")
                end)
                """)
        ])
        try h.load()
        try h.send(["type": "go"])
        h.advance(to: 100)
        let file = h.path("probe/init.lua")
        XCTAssertEqual(h.log.values, ["0:1", "10:error:\(file):13: task broke"])
        XCTAssertEqual(h.log.errors.first?.location, "\(file):13")
    }

    func testATaskMayOnlyYieldThroughAwait() throws {
        XCTAssertEqual(
            try Probe.run("return mf.task(function(t) t:emit(1) coroutine.yield() t:emit(2) end)"),
            [
                "0:1",
                "0:error:mf.task: the task yielded with coroutine.yield; a task may only wait through t:await(stream)",
            ])
        // The error has no line of its own: it names where the task's function is defined.
        let h = try Harness(["probe/init.lua": Probe.source("return mf.task(function(t) coroutine.yield() end)")])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.errors.first?.location, h.path("probe/init.lua") + ":10")
    }

    /// A `latest` action replacing a task mid-await: the old coroutine is closed (its
    /// to-be-closed variable runs at once), never resumed, and its later emits never happen.
    func testReplacingATaskMidAwaitClosesItsCoroutine() throws {
        let h = try Harness(["tasks/init.lua": Self.tasksPlugin])
        try h.load("tasks")
        try h.send(["type": "search", "q": "a"])
        try h.send(["type": "search", "q": "b"], at: 50)
        try h.send(["type": "report"], at: 400)
        XCTAssertEqual(
            h.state,
            [
                "lines": ["start a", "start b", "b true done"],
                "report": "closed a,resumed b,closed b",
            ])
        let mutations = h.log.lines.filter { $0.contains("mutation") }
        XCTAssertEqual(
            mutations,
            [
                #"0 mutation#1 {"text":"start a","type":"line"}"#,
                #"50 mutation#2 {"text":"start b","type":"line"}"#,
                #"150 mutation#3 {"text":"b true done","type":"line"}"#,
                #"400 mutation#4 {"text":"closed a,resumed b,closed b","type":"report"}"#,
            ])
    }

    func testCancellingAllWorkClosesAWaitingTask() throws {
        let h = try Harness(["tasks/init.lua": Self.tasksPlugin])
        try h.load("tasks")
        try h.send(["type": "search", "q": "a"])
        h.advance(to: 10)
        h.feature.cancel(actionType: nil)
        h.advance(to: 300)
        try h.send(["type": "report"])
        XCTAssertEqual(h.state, ["lines": ["start a"], "report": "closed a"])
    }

    func testTakeOneOfATaskClosesItAtItsNextAwait() throws {
        let h = try Harness(["tasks/init.lua": Self.tasksPlugin])
        try h.load("tasks")
        try h.send(["type": "once", "q": "x"])
        h.advance(to: 300)
        try h.send(["type": "report"])
        XCTAssertEqual(h.state, ["lines": ["start x"], "report": "closed x"])
    }

    static let tasksPlugin = """
        local mf = require "moonflow"
        local notes = {}
        local function note(s) notes[#notes + 1] = s end
        local function search(q)
          return mf.task(function(t)
            local guard <close> = setmetatable({}, { __close = function() note("closed " .. q) end })
            t:emit { type = "line", text = "start " .. q }
            local ok, v = t:await(mf.timer(100, "done"))
            note("resumed " .. q)
            t:emit { type = "line", text = q .. " " .. tostring(ok) .. " " .. v }
          end)
        end
        return mf.feature {
          name = "tasks",
          initial = { lines = {} },
          actions = { search = { q = "string" }, once = { q = "string" }, report = {} },
          mutations = { line = { text = "string" }, report = { text = "string" } },
          strategy = { search = "latest" },
          handle = function(action, state, env)
            if action.type == "report" then return { type = "report", text = table.concat(notes, ",") } end
            if action.type == "once" then return search(action.q):take(1) end
            return search(action.q)
          end,
          reduce = function(state, m)
            if m.type == "line" then state.lines[#state.lines + 1] = m.text else state.report = m.text end
            return state
          end,
        }
        """
}
