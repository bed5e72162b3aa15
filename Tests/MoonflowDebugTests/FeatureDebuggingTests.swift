import Foundation
import LuaKit
@testable import MoonflowDebug
import MoonflowHost
import MoonflowHostTools
import XCTest

/// An editor debugging a real feature over a socket: a plugin file on disk, a host on the
/// real clock with a time limit, its Lua state served by a `DebugController`, and the
/// editor's requests as an editor sends them.
final class FeatureDebuggingTests: XCTestCase {
    /// The lines the tests stop at, named.
    private enum Line {
        static let twice = 3, fail = 15, handled = 17, reduceFirst = 21, reduceSecond = 22, reduceLast = 23
    }

    private static let plugin = """
        local mf = require "moonflow"
        local function double(n)
          local twice = n * 2
          return twice
        end
        return mf.feature {
          name = "tally",
          initial = { count = 0 },
          state = { count = "integer" },
          actions = { add = { n = "integer" }, fail = {} },
          mutations = { added = { n = "integer" } },
          handle = function(action)
            if action.type == "fail" then
              local reason = "no " .. "tally"
              error(reason)
            end
            return { type = "added", n = action.n }
          end,

          reduce = function(state, m)
            local n = double(m.n)
            state.count = state.count + n
            return state
          end,
        }
        """

    private var folder: URL!
    private var file: String { folder.appendingPathComponent("plugins/tally/init.lua").path }

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-debug-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("plugins/tally"), withIntermediateDirectories: true)
        try Self.plugin.write(toFile: file, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// A host whose state a controller serves, with an editor attached and configured.
    private var controller: DebugController!

    private func debugged(
        timeLimitMs: Int64 = 1000, initialize: LuaValue = [:]
    ) throws -> (FeatureHost, RunningFeature, EditorClient, DAPListener) {
        let host = try FeatureHost(
            configuration: .init(
                searchPaths: [folder.appendingPathComponent("plugins").path],
                timeLimitMs: timeLimitMs, clock: .real))
        let controller = DebugController(name: "tally")
        self.controller = controller
        XCTAssertTrue(controller.serve(host.lua))
        let listener = try DAPListener(host: "127.0.0.1", port: 0)
        listener.start { connection in
            let session = DAPSession(connection: connection, target: controller)
            controller.attach(session)
            session.run()
        }
        let editor = try EditorClient(port: listener.port)
        _ = try editor.request("initialize", initialize)
        _ = try editor.request("attach")
        let feature = try host.load("tally")
        feature.start()
        return (host, feature, editor, listener)
    }

    private func setBreakpoints(_ editor: EditorClient, _ breakpoints: [LuaValue], path: String? = nil) throws {
        let placed = try editor.request(
            "setBreakpoints", ["source": ["path": LuaValue(path ?? file)], "breakpoints": LuaValue(breakpoints)])
        XCTAssertEqual(placed["success"]?.boolValue, true, "\(placed)")
    }

    private static func items(_ value: LuaValue?) -> [LuaValue] {
        guard let value, case .table(let table) = value else { return [] }
        return table.array
    }

    private func count(_ feature: RunningFeature) -> Int64? { feature.state["count"]?.intValue }

    private func waitFor(_ what: String, _ done: () -> Bool) {
        let give = Date().addingTimeInterval(30)
        while !done(), Date() < give { Thread.sleep(forTimeInterval: 0.005) }
        XCTAssertTrue(done(), what)
    }

    private func top(_ editor: EditorClient) throws -> LuaValue? {
        try editor.request("stackTrace", ["threadId": 1])["body"]?["stackFrames"]?[0]
    }

    private func locals(_ editor: EditorClient, frame: Int = 1) throws -> [String: LuaValue] {
        let scopes = try editor.request("scopes", ["frameId": LuaValue(frame)])
        let ref = try XCTUnwrap(scopes["body"]?["scopes"]?[0]?["variablesReference"])
        let listed = try editor.request("variables", ["variablesReference": ref])
        var out: [String: LuaValue] = [:]
        for entry in Self.items(listed["body"]?["variables"]) { out[entry["name"]?.stringValue ?? "?"] = entry }
        return out
    }

    private func fields(_ editor: EditorClient, _ variable: LuaValue?) throws -> [String: String] {
        let ref = try XCTUnwrap(variable?["variablesReference"])
        let listed = try editor.request("variables", ["variablesReference": ref])
        var out: [String: String] = [:]
        for entry in Self.items(listed["body"]?["variables"]) {
            out[entry["name"]?.stringValue ?? "?"] = entry["value"]?.stringValue
        }
        return out
    }

    func testABreakpointInReduceShowsTheMutationAndTheStateAndStepsAsLuaDoes() throws {
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        try setBreakpoints(editor, [["line": LuaValue(Line.reduceFirst)]])
        _ = try editor.request("configurationDone")

        try feature.send(["type": "add", "n": 5])
        let stopped = try editor.event("stopped")
        XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, "breakpoint")
        let frame = try top(editor)
        XCTAssertEqual(frame?["name"]?.stringValue, "reduce")
        XCTAssertEqual(frame?["line"]?.intValue, Int64(Line.reduceFirst))
        XCTAssertEqual(
            frame?["source"]?["path"]?.stringValue.map { file.hasSuffix($0) }, true, "\(String(describing: frame))")
        let variables = try locals(editor)
        XCTAssertEqual(
            try fields(editor, variables["m"]), ["type": "\"added\"", "n": "5"], "the mutation, as plain values")
        XCTAssertEqual(
            try fields(editor, variables["state"]), ["count": "0"], "the state view, as the plain table it shows")
        XCTAssertEqual(
            try editor.request("evaluate", ["expression": "state.count + 1", "frameId": 1])["body"]?["result"]?
                .stringValue, "1")

        // next steps over double() to the next line of reduce.
        XCTAssertEqual(try editor.request("next", ["threadId": 1])["success"]?.boolValue, true)
        XCTAssertEqual(try editor.event("stopped")["body"]?["reason"]?.stringValue, "step")
        XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.reduceSecond))
        XCTAssertEqual(try locals(editor)["n"]?["value"]?.stringValue, "10")

        // stepIn on the next action goes into double(); stepOut comes back to reduce.
        XCTAssertEqual(try editor.request("continue", ["threadId": 1])["success"]?.boolValue, true)
        waitFor("the first action reduced") { count(feature) == 10 }
        try feature.send(["type": "add", "n": 1])
        _ = try editor.event("stopped")
        XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.reduceFirst))
        _ = try editor.request("stepIn", ["threadId": 1])
        _ = try editor.event("stopped")
        let inside = try top(editor)
        XCTAssertEqual(inside?["name"]?.stringValue, "double")
        XCTAssertEqual(inside?["line"]?.intValue, Int64(Line.twice))
        // An editor that loads the stack a page at a time: the second frame alone, and how many there are.
        let page = try editor.request("stackTrace", ["threadId": 1, "startFrame": 1, "levels": 1])["body"]
        XCTAssertEqual(page?["stackFrames"]?[0]?["name"]?.stringValue, "reduce")
        XCTAssertEqual(page?["stackFrames"]?[0]?["id"]?.intValue, 2)
        XCTAssertNil(page?["stackFrames"]?[1])
        XCTAssertEqual(page?["totalFrames"]?.intValue, 2)
        _ = try editor.request("stepOut", ["threadId": 1])
        _ = try editor.event("stopped")
        XCTAssertEqual(try top(editor)?["name"]?.stringValue, "reduce")
        XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.reduceSecond))

        // disconnect lets the run go on, and no breakpoint stops it again.
        _ = try editor.request("disconnect")
        waitFor("the run went on after disconnect") { count(feature) == 12 }
        try feature.send(["type": "add", "n": 4])
        waitFor("no breakpoint is left") { count(feature) == 20 }
    }

    func testAConditionalBreakpointStopsOnlyWhenTrueAndALogPointOnlyPrints() throws {
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        try setBreakpoints(
            editor,
            [
                ["line": LuaValue(Line.reduceFirst), "condition": "m.n > 100"],
                ["line": LuaValue(Line.reduceLast), "logMessage": "count is {state.count}"],
            ])
        _ = try editor.request("configurationDone")
        try feature.send(["type": "add", "n": 1])
        waitFor("a false condition does not stop") { count(feature) == 2 }
        XCTAssertEqual(try editor.event("output")["body"]?["output"]?.stringValue, "count is 2\n")
        try feature.send(["type": "add", "n": 200])
        let stopped = try editor.event("stopped")
        XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, "breakpoint")
        XCTAssertEqual(try locals(editor)["m"].flatMap { try? fields(editor, $0)["n"] }, "200")
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("it went on") { count(feature) == 402 }
    }

    func testAnExceptionBreakpointStopsAtTheFailingHandlersLine() throws {
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        XCTAssertEqual(
            try editor.request("setExceptionBreakpoints", ["filters": LuaValue(["uncaught"])])["success"]?.boolValue,
            true)
        _ = try editor.request("configurationDone")
        final class Errors: @unchecked Sendable { let lock = NSLock(); var seen: [String] = [] }
        let errors = Errors()
        let watching = feature.failures.observe(value: { error in
            errors.lock.withLock { errors.seen.append(error.message) }
        })
        defer { _ = watching }
        try feature.send(["type": "fail"])
        let stopped = try editor.event("stopped")
        XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, "exception")
        XCTAssertTrue(stopped["body"]?["description"]?.stringValue?.contains("no tally") == true, "\(stopped)")
        let frame = try top(editor)
        XCTAssertEqual(frame?["name"]?.stringValue, "handle")
        XCTAssertEqual(frame?["line"]?.intValue, Int64(Line.fail))
        XCTAssertEqual(try locals(editor)["reason"]?["value"]?.stringValue, "\"no tally\"")
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("the run reported the error after continue") { errors.lock.withLock { !errors.seen.isEmpty } }
        XCTAssertTrue(errors.lock.withLock { errors.seen.first?.contains("no tally") == true })
        try feature.send(["type": "add", "n": 3])
        waitFor("the run goes on, the state as it was") { count(feature) == 6 }
    }

    func testStepsPastTheEndOfHandleGoOnToReduceAndEvaluateSeesTheGlobals() throws {
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        try setBreakpoints(editor, [["line": LuaValue(Line.handled)]])
        _ = try editor.request("configurationDone")
        for step in ["next", "stepOut"] {
            try feature.send(["type": "add", "n": 5])
            _ = try editor.event("stopped")
            XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.handled))
            _ = try editor.request(step, ["threadId": 1])
            XCTAssertEqual(try editor.event("stopped")["body"]?["reason"]?.stringValue, "step", step)
            let frame = try top(editor)
            XCTAssertEqual(
                frame?["name"]?.stringValue, "reduce",
                "\(step) from handle's last line: Moonflow's own code between is run through")
            XCTAssertEqual(frame?["line"]?.intValue, Int64(Line.reduceFirst), step)
            // reduce names no global itself; an expression still reaches the plugin's globals.
            let shown = try editor.request(
                "evaluate", ["expression": "tostring(m.n) .. string.rep('!', 2)", "frameId": 1])
            XCTAssertEqual(shown["body"]?["result"]?.stringValue, "\"5!!\"", "\(shown)")
            _ = try editor.request("continue", ["threadId": 1])
        }
        waitFor("both actions reduced") { count(feature) == 20 }
    }

    func testAnEditorCountingLinesFromZeroWithURIsGetsItsOwnCounting() throws {
        let (_, feature, editor, listener) = try debugged(initialize: [
            "linesStartAt1": false, "columnsStartAt1": false,
            "pathFormat": "uri",
        ])
        defer { listener.close() }
        let uri = URL(fileURLWithPath: file).absoluteString
        let placed = try editor.request(
            "setBreakpoints",
            [
                "source": ["path": LuaValue(uri)],
                "breakpoints": [["line": LuaValue(Line.reduceFirst - 1)]],
            ])
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["line"]?.intValue, Int64(Line.reduceFirst - 1), "\(placed)")
        _ = try editor.request("configurationDone")
        try feature.send(["type": "add", "n": 2])
        _ = try editor.event("stopped")
        let frame = try top(editor)
        XCTAssertEqual(frame?["line"]?.intValue, Int64(Line.reduceFirst - 1), "reduce's first line, counted from 0")
        XCTAssertEqual(frame?["column"]?.intValue, 0)
        XCTAssertEqual(frame?["source"]?["path"]?.stringValue, uri)
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("it went on") { count(feature) == 4 }
        let notURI = try editor.request(
            "setBreakpoints", ["source": ["path": LuaValue(file)], "breakpoints": [["line": 1]]])
        XCTAssertEqual(notURI["success"]?.boolValue, false)
        XCTAssertTrue(notURI["message"]?.stringValue?.contains("file:// URI") == true, "\(notURI)")
    }

    /// A plugin that catches its own errors, with `pcall`, `coroutine.resume` and `xpcall`,
    /// and one error it does not catch.
    private static let catching = """
        local mf = require "moonflow"
        local function risky(n)
          if n < 0 then error("negative " .. n) end
          return n
        end
        return mf.feature {
          name = "tally",
          initial = { count = 0 },
          state = { count = "integer" },
          actions = { add = { n = "integer" }, fail = {} },
          mutations = { added = { n = "integer" } },
          handle = function(action)
            if action.type == "fail" then error("not caught") end
            local ok, n = pcall(risky, action.n)
            if not ok then
              local resumed = coroutine.resume(coroutine.create(risky), action.n)
              local handled = xpcall(risky, function(e) return e end, action.n)
              n = (resumed or handled) and -1 or 100
            end
            return { type = "added", n = n }
          end,
          reduce = function(state, m)
            state.count = state.count + m.n
            return state
          end,
        }
        """

    private static func line(of text: String, in source: String) -> Int64 {
        Int64(source.components(separatedBy: "\n").firstIndex { $0.contains(text) }! + 1)
    }

    func testTheAnyErrorFilterStopsWhereAPluginsOwnPcallCatches() throws {
        try Self.catching.write(toFile: file, atomically: true, encoding: .utf8)
        let raised = Self.line(of: "error(\"negative", in: Self.catching)
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        XCTAssertEqual(
            try editor.request("setExceptionBreakpoints", ["filters": LuaValue(["uncaught"])])["success"]?.boolValue,
            true)
        _ = try editor.request("configurationDone")
        try feature.send(["type": "add", "n": -1])
        waitFor("with `uncaught` only, a caught error does not stop") { count(feature) == 100 }

        _ = try editor.request("setExceptionBreakpoints", ["filters": LuaValue(["all"])])
        try feature.send(["type": "add", "n": -5])
        for (catcher, callerLine) in [
            ("pcall", Self.line(of: "pcall(risky", in: Self.catching)),
            ("coroutine.resume", nil), ("xpcall", Self.line(of: "xpcall(risky", in: Self.catching)),
        ] {
            let stopped = try editor.event("stopped")
            XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, "exception", catcher)
            XCTAssertTrue(
                stopped["body"]?["description"]?.stringValue?.contains("negative -5") == true, "\(catcher): \(stopped)")
            let frames = try editor.request("stackTrace", ["threadId": 1])["body"]?["stackFrames"]
            XCTAssertEqual(
                frames?[0]?["name"]?.stringValue, "function <init.lua:2>",
                "\(catcher): called from C, named by its place")
            XCTAssertEqual(frames?[0]?["line"]?.intValue, raised, catcher)
            XCTAssertEqual(try locals(editor)["n"]?["value"]?.stringValue, "-5", catcher)
            if let callerLine {
                XCTAssertEqual(frames?[1]?["line"]?.intValue, callerLine, "\(catcher): the caller's frame")
            }
            _ = try editor.request("continue", ["threadId": 1])
        }
        waitFor("each catcher still caught its error after continue") { count(feature) == 200 }

        try feature.send(["type": "fail"])
        let stopped = try editor.event("stopped")
        XCTAssertTrue(stopped["body"]?["description"]?.stringValue?.contains("not caught") == true, "\(stopped)")
        _ = try editor.request("continue", ["threadId": 1])
        try feature.send(["type": "add", "n": 1])
        waitFor("an error no handler catches stopped once: the run went on") { count(feature) == 201 }
    }

    func testABreakpointSurvivesAReload() throws {
        let (host, feature, editor, listener) = try debugged()
        defer { listener.close() }
        try setBreakpoints(editor, [["line": LuaValue(Line.reduceSecond)]])
        _ = try editor.request("configurationDone")
        try (Self.plugin.replacingOccurrences(of: "local n = double(m.n)", with: "local n = double(m.n) + 1")).write(
            toFile: file, atomically: true, encoding: .utf8)
        try host.reload(feature)
        try feature.send(["type": "add", "n": 1])
        _ = try editor.event("stopped")
        XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.reduceSecond))
        XCTAssertEqual(try locals(editor)["n"]?["value"]?.stringValue, "3", "the reloaded code stopped")
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("it went on") { count(feature) == 3 }
    }

    func testABreakpointLandsOnTheNextLineWithCodeAndMovesWithTheFileOnReload() throws {
        let (host, feature, editor, listener) = try debugged()
        defer { listener.close() }
        // Line 19 is blank and 20 opens `reduce`: the first line that runs is 21. Past the end: no code.
        let placed = try editor.request(
            "setBreakpoints", ["source": ["path": LuaValue(file)], "breakpoints": [["line": 19], ["line": 90]]])
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["line"]?.intValue, Int64(Line.reduceFirst))
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["verified"]?.boolValue, true)
        XCTAssertEqual(placed["body"]?["breakpoints"]?[1]?["verified"]?.boolValue, false)
        XCTAssertEqual(
            placed["body"]?["breakpoints"]?[1]?["message"]?.stringValue, "no code at or after line 90 of init.lua")
        _ = try editor.request("configurationDone")
        try feature.send(["type": "add", "n": 1])
        _ = try editor.event("stopped")
        XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.reduceFirst))
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("it went on") { count(feature) == 2 }

        // Two lines more above reduce: asked for line 19 still, it lands on the new first line of reduce.
        try Self.plugin.replacingOccurrences(
            of: "  reduce = function(state, m)", with: "  -- reduce:\n  -- doubles\n  reduce = function(state, m)"
        )
        .write(toFile: file, atomically: true, encoding: .utf8)
        try host.reload(feature)
        controller.filesChanged()
        try feature.send(["type": "add", "n": 1])
        _ = try editor.event("stopped")
        XCTAssertEqual(try top(editor)?["line"]?.intValue, Int64(Line.reduceFirst + 2))
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("it went on") { count(feature) == 4 }
    }

    func testPauseStopsAtTheNextLineOfThePluginThatRuns() throws {
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        _ = try editor.request("configurationDone")
        XCTAssertEqual(try editor.request("pause", ["threadId": 1])["success"]?.boolValue, true)
        try feature.send(["type": "add", "n": 2])
        XCTAssertEqual(try editor.event("stopped")["body"]?["reason"]?.stringValue, "pause")
        let frame = try top(editor)
        XCTAssertEqual(frame?["name"]?.stringValue, "handle", "the first plugin line the action runs")
        XCTAssertEqual(frame?["line"]?.intValue, 13)
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("it went on, and stopped no more") { count(feature) == 4 }
    }

    /// A plugin whose timers leave a trail in the state, in the order they reduce: `timers`
    /// starts three at once, the latest first.
    private static let timed = """
        local mf = require "moonflow"
        local function added(n) return { type = "added", n = n } end
        return mf.feature {
          name = "tally",
          initial = { trail = "" },
          state = { trail = "string" },
          actions = { timers = {} },
          mutations = { added = { n = "integer" } },
          handle = function()
            return mf.merge(mf.timer(1200, added(100)), mf.timer(900, added(10)), mf.timer(600, added(1)))
          end,
          reduce = function(state, m)
            state.trail = state.trail .. m.n .. ","
            return state
          end,
        }
        """

    func testTimersDueWhileStoppedFireAfterContinueInOrder() throws {
        try Self.timed.write(toFile: file, atomically: true, encoding: .utf8)
        let (_, feature, editor, listener) = try debugged()
        defer { listener.close() }
        let trail = { feature.state["trail"]?.stringValue }
        try setBreakpoints(
            editor, [["line": LuaValue(Self.line(of: "state.trail ..", in: Self.timed)), "condition": "m.n == 1"]])
        _ = try editor.request("configurationDone")
        try feature.send(["type": "timers"])
        _ = try editor.event("stopped")
        // Stopped in the first timer's reduce, at 600 ms: the others come due at 900 and 1,200.
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertEqual(trail(), "", "two timers came due while stopped; neither fired")
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("the timers fired after continue, soonest first") { trail() == "1,10,100," }
        XCTAssertEqual(trail(), "1,10,100,")
    }

    func testAFeaturePausedLongerThanItsTimeLimitIsNotStopped() throws {
        // A 100 ms limit on CPU time, with a wall-clock backstop of 1.1 s: the pause is longer.
        let (_, feature, editor, listener) = try debugged(timeLimitMs: 100)
        defer { listener.close() }
        try setBreakpoints(editor, [["line": LuaValue(Line.reduceFirst)]])
        _ = try editor.request("configurationDone")
        try feature.send(["type": "add", "n": 7])
        _ = try editor.event("stopped")
        Thread.sleep(forTimeInterval: 1.6)
        XCTAssertEqual(
            try editor.request("evaluate", ["expression": "m.n", "frameId": 1])["body"]?["result"]?.stringValue, "7",
            "still stopped, still readable")
        let loop = try editor.request("evaluate", ["expression": "(function() while true do end end)()", "frameId": 1])
        XCTAssertEqual(loop["success"]?.boolValue, false)
        XCTAssertTrue(
            loop["message"]?.stringValue?.contains("evaluate ran longer than 2000 ms and was stopped") == true,
            "\(loop)")
        _ = try editor.request("continue", ["threadId": 1])
        waitFor("the reduce finished after the pause") { count(feature) == 14 }
    }
}
