import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// `moonflow test`, `moonflow new` and `exec`'s event loop, on the built binary, in a scratch folder.
final class SpecRunnerTests: ScratchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try write(
            "plugins/clock/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "clock",
              initial = { ticks = 0, title = "" },
              actions = { tick = { ms = "integer?" }, fetch = { id = "integer" } },
              mutations = { ticked = {}, titled = { title = "string" } },
              handle = function(action, state, env)
                if action.type == "fetch" then
                  return env.services.title(action.id):map(function(t) return { type = "titled", title = t } end)
                end
                if action.ms then return mf.timer(action.ms, { type = "ticked" }) end
                return { type = "ticked" }
              end,
              reduce = function(state, m)
                if m.type == "ticked" then state.ticks = state.ticks + 1 else state.title = m.title end
                return state
              end,
              services = { title = function(id) return mf.just("real " .. id) end },
            }
            """)
    }

    private func spec(_ body: String) throws {
        try write(
            "plugins/clock/spec/clock_spec.lua",
            """
            local mf = require "moonflow"
            local T = require "moonflow.test"
            describe("clock", function()
            \(body)
            end)
            """)
    }

    func testAWrongExpectedChangeShowsTheDiffAndTheSpecsLine() throws {
        try spec(
            """
              it("ticks", function()
                local store = T.store("clock")
                store:send({ type = "tick" }, function(s) s.ticks = 2 end)
              end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout)
        XCTAssertTrue(result.stdout.contains("FAIL clock ticks"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains(
                "plugins/clock/spec/clock_spec.lua:6: State after send(tick) does not match the expected change:"),
            result.stdout)
        XCTAssertTrue(result.stdout.contains("    - ticks = 2\n    + ticks = 1"), result.stdout)
        XCTAssertFalse(result.stdout.contains("title ="), "unchanged fields are elided: \(result.stdout)")
        XCTAssertTrue(result.stdout.hasSuffix("0 passed, 1 failed\n"), result.stdout)
    }

    /// A reducer that raised during a send is the first thing its failure shows, with the
    /// plugin's file:line and its own frames of the traceback; before, only the state diff
    /// (`ticks = 0` where 1 was expected) showed, and the cause was nowhere.
    func testAnErrorDuringAStepIsShownFirstWithItsFileLineAndTraceback() throws {
        let plugin = try String(contentsOf: scratch.appendingPathComponent("plugins/clock/init.lua"), encoding: .utf8)
        try write(
            "plugins/clock/init.lua",
            plugin.replacingOccurrences(of: "state.ticks = state.ticks + 1", with: "state.ticks = state.tikcs + 1")
                .replacingOccurrences(
                    of: "initial = { ticks = 0, title = \"\" },",
                    with: "initial = { ticks = 0, title = \"\" }, state = { ticks = \"integer\", title = \"string\" },")
        )
        try spec(
            """
              it("ticks", function()
                local store = T.store("clock")
                store:send({ type = "tick" }, function(s) s.ticks = 1 end)
              end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout)
        let cause =
            "plugins/clock/spec/clock_spec.lua:6: send(tick) raised an error in the feature: plugins/clock/init.lua:15: state has no field 'tikcs' (did you mean 'ticks'?)"
        XCTAssertTrue(
            result.stdout.contains("  ✗ clock ticks: " + cause), "the summary line names the cause: \(result.stdout)")
        let failure = try XCTUnwrap(result.stdout.components(separatedBy: "FAIL clock ticks\n").last)
        XCTAssertTrue(failure.hasPrefix("  " + cause), failure)
        XCTAssertTrue(
            failure.contains(
                "    stack traceback:\n      plugins/clock/init.lua:15: in field 'reduce'\n      plugins/clock/spec/clock_spec.lua:6:"
            ), failure)
        XCTAssertFalse(
            failure.contains("busted") || failure.contains("[C]") || failure.contains("moonflow:"),
            "only the plugin's and the spec's frames: \(failure)")
        let diff = try XCTUnwrap(
            failure.range(
                of: "State after send(tick) does not match the expected change:\n    - ticks = 1\n    + ticks = 0"),
            failure)
        XCTAssertTrue(failure[..<diff.lowerBound].contains("stack traceback"), "the cause comes before the diff")
    }

    /// A typo in a spec fails at its line with what was meant, as a typo in plugin code does.
    func testTyposInASpecNameWhatWasMeant() throws {
        let plugin = try String(contentsOf: scratch.appendingPathComponent("plugins/clock/init.lua"), encoding: .utf8)
        try write(
            "plugins/clock/init.lua",
            plugin.replacingOccurrences(
                of: "initial = { ticks = 0, title = \"\" },",
                with:
                    "initial = { ticks = 0, title = \"\" }, state = { ticks = \"integer\", title = \"string\", note = \"string?\" },"
            ))
        try spec(
            """
              it("a state field", function() local n = T.store("clock").state.tikcs end)
              it("a declared optional field reads nil", function() assert.is_nil(T.store("clock").state.note) end)
              it("a store method", function() T.store("clock"):sned({ type = "tick" }) end)
              it("a module function", function() T.stroe("clock") end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1)
        for text in [
            "clock_spec.lua:4: store.state has no field 'tikcs' (did you mean 'ticks'?)",
            "✓ clock a declared optional field reads nil",
            "clock_spec.lua:6: the test store has no 'sned' (did you mean 'send'?)",
            "clock_spec.lua:7: moonflow.test has no 'stroe' (did you mean 'store'?)",
        ] {
            XCTAssertTrue(result.stdout.contains(text), "\(text) in: \(result.stdout)")
        }
    }

    /// A spec's stub may keep what the feature hands it (a luassert spy's arguments are read
    /// after the call): it gets a copy of the state, not a view that dies with `handle`.
    func testAStubSpyReadsTheStateItWasHandedAfterTheCall() throws {
        try write(
            "plugins/draft/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "draft", initial = { lines = { { sku = "tea", qty = 1 } }, saved = false },
              actions = { save = {} }, mutations = { saved = {} },
              services = { save = function() return mf.just(true) end },
              handle = function(action, state, env)
                return env.services.save(state):map(function() return { type = "saved" } end)
              end,
              reduce = function(state) state.saved = true; return state end,
            }
            """)
        try write(
            "plugins/draft/spec/draft_spec.lua",
            """
            local T = require "moonflow.test"
            describe("draft", function()
              it("saves the lines", function()
                local save = spy.new(function() return true end)
                local store = T.store("draft", { services = { save = save } })
                store:send({ type = "save" }, function(s) s.saved = true end)
                assert.spy(save).was_called_with({ lines = { { sku = "tea", qty = 1 } }, saved = false })
              end)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/draft"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertTrue(result.stdout.contains("1 passed, 0 failed"), result.stdout)
    }

    func testMisusedStoreCallsPointAtTheSpecsLine() throws {
        try spec(
            """
              it("a number", function() T.store("clock"):send(5) end)
              it("a dot", function() local s = T.store("clock"); s.send({ type = "tick" }) end)
              it("a change that is no function", function() T.store("clock"):send({ type = "tick" }, 5) end)
              it("an unknown option", function() T.store("clock", { exhaustve = false }) end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1)
        for (line, text) in [
            (4, "store:send(action [, change]): action must be a table"),
            (5, "store:send(...) must be called with a colon (store:send, not store.send)"),
            (6, "store:send: the change must be a function(state)"), (7, "T.store: unknown option 'exhaustve'"),
        ] {
            XCTAssertTrue(result.stdout.contains("clock_spec.lua:\(line): \(text)"), "line \(line): \(result.stdout)")
        }
        XCTAssertTrue(result.stdout.hasSuffix("0 passed, 4 failed\n"), result.stdout)
    }

    func testALeftoverTimerFailsFinishNamingItsAction() throws {
        try spec(
            """
              it("leaves a timer", function()
                local store = T.store("clock")
                store:send({ type = "tick", ms = 250 })
                store:finish()
              end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("clock_spec.lua:7: finish() found work left over:"), result.stdout)
        XCTAssertTrue(result.stdout.contains("started by action tick { ms = 250 }"), result.stdout)
    }

    func testAStubbedServiceIsUsedAndPassingSpecsExitZero() throws {
        try spec(
            """
              it("uses the stub", function()
                local calls = {}
                local store = T.store("clock", { services = { title = function(id) calls[#calls + 1] = id; return "stub " .. id end } })
                store:send({ type = "fetch", id = 7 }, function(s) s.title = "stub 7" end)
                assert.are.same({ 7 }, calls)
                store:finish()
              end)
              it("waits for the timer", function()
                local store = T.store("clock", { state = { ticks = 5, title = "x" } })
                store:send({ type = "tick", ms = 100 })
                store:advance(100)
                store:receive({ type = "ticked" }, function(s) s.ticks = 6 end)
                store:finish()
              end)
              pending("one day")
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.hasSuffix("2 passed, 0 failed, 1 skipped\n"), result.stdout)
    }

    func testJUnitAndTAPReportTheRightCounts() throws {
        try spec(
            """
              describe("nested", function()
                it("passes", function() assert.is_true(true) end)
                it("fails <here>", function() assert.are.equal(1, 2) end)
              end)
              it("errors", function() error("boom") end)
              pending("later")
            """)
        let result = try Moonflow.run(["test", "--junit", "report.xml"], in: scratch)
        XCTAssertEqual(result.status, 1)
        let data = try Data(contentsOf: scratch.appendingPathComponent("report.xml"))
        let xml = try XMLDocument(data: data)
        let suites = try xml.nodes(forXPath: "/testsuites").first as? XMLElement
        XCTAssertEqual(suites?.attribute(forName: "tests")?.stringValue, "4")
        XCTAssertEqual(suites?.attribute(forName: "failures")?.stringValue, "1")
        XCTAssertEqual(suites?.attribute(forName: "errors")?.stringValue, "1")
        XCTAssertNil(suites?.attribute(forName: "skipped"), "the xunit plugin's schema has no skipped on <testsuites>")
        let suite = try xml.nodes(forXPath: "/testsuites/testsuite").first as? XMLElement
        XCTAssertEqual(suite?.attribute(forName: "skipped")?.stringValue, "1")
        let failing = try xml.nodes(forXPath: "//testcase[failure]").first as? XMLElement
        XCTAssertEqual(failing?.attribute(forName: "name")?.stringValue, "fails <here>")
        XCTAssertEqual(failing?.attribute(forName: "classname")?.stringValue, "clock nested")

        let tap = try Moonflow.run(["test", "--tap"], in: scratch)
        let lines = tap.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "TAP version 13")
        XCTAssertEqual(lines.filter { $0.hasPrefix("ok ") }.count, 2, tap.stdout)
        XCTAssertEqual(lines.filter { $0.hasPrefix("not ok ") }.count, 2, tap.stdout)
        XCTAssertTrue(lines.contains("1..4"), tap.stdout)
        XCTAssertTrue(lines.contains("ok 4 - clock later # SKIP pending"), tap.stdout)
    }

    func testFilterRunsOnlyMatchingTests() throws {
        try spec(
            """
              it("first (a+b)", function() end)
              it("second", function() error("not run") end)
            """)
        let result = try Moonflow.run(["test", "--filter", "(a+b)"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("1 passed, 0 failed\n"), result.stdout)
        // A file with nothing selected prints no "0 passed" line of its own.
        try write(
            "plugins/clock/spec/other_spec.lua", "describe(\"other\", function() it(\"third\", function() end) end)\n")
        let one = try Moonflow.run(["test", "--filter", "(a+b)"], in: scratch)
        XCTAssertFalse(one.stdout.contains("other_spec.lua"), one.stdout)
        XCTAssertTrue(one.stdout.contains("✓ plugins/clock/spec/clock_spec.lua  1 passed"), one.stdout)
        // One that selects nothing fails, saying so.
        let none = try Moonflow.run(["test", "--filter", "fourth"], in: scratch)
        XCTAssertEqual(none.status, 1, none.stdout)
        XCTAssertTrue(none.stdout.contains("no test matched --filter \"fourth\" in 2 spec files"), none.stdout)
    }

    func testNewThenTestPassesAndNewRefusesToOverwrite() throws {
        let made = try Moonflow.run(["new", "todo"], in: scratch)
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertTrue(made.stdout.contains("moonflow test plugins/todo/spec"), made.stdout)
        let tested = try Moonflow.run(["test", "plugins/todo/spec"], in: scratch)
        XCTAssertEqual(tested.status, 0, tested.stdout)
        XCTAssertTrue(tested.stdout.hasSuffix("3 passed, 0 failed\n"), tested.stdout)
        let made_ = try String(contentsOf: scratch.appendingPathComponent("plugins/todo/init.lua"), encoding: .utf8)
        XCTAssertTrue(
            made_.contains("state = { ticks = \"integer\" }")
                && made_.contains("outputs = { tenth = { ticks = \"integer\" } }"),
            "declares state and outputs as the README recommends: \(made_)")
        let types = try Moonflow.run(["types", "--swift", "plugins/todo"], in: scratch)
        XCTAssertTrue(types.stdout.contains("TodoState") && types.stdout.contains("tenth"), types.stdout)
        XCTAssertEqual(
            try Moonflow.run(["check", "--strict", "plugins/todo"], in: scratch).status, 0,
            "what moonflow new writes passes luacheck")

        let before = try String(contentsOf: scratch.appendingPathComponent("plugins/todo/init.lua"), encoding: .utf8)
        let again = try Moonflow.run(["new", "todo"], in: scratch)
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("plugins/todo already exists; nothing was written"), again.stderr)
        XCTAssertEqual(
            try String(contentsOf: scratch.appendingPathComponent("plugins/todo/init.lua"), encoding: .utf8), before)
        XCTAssertEqual(try Moonflow.run(["new", "bad-name"], in: scratch).status, 2)
    }

    func testAMissingSpecPathIsAUsageError() throws {
        let result = try Moonflow.run(["test", "nowhere_spec.lua"], in: scratch)
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("nowhere_spec.lua does not exist"), result.stderr)
    }

    func testASpecThatDoesNotLoadIsReportedAsFailed() throws {
        try write("plugins/clock/spec/broken_spec.lua", "describe('x', function()\n  it('y', function() end\nend)\n")
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("broken_spec.lua:3: ')' expected (to close '(' at line 2)"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("0 passed, 1 failed\n"), result.stdout)
    }

    func testSandboxLimitsThePluginButNotTheSpec() throws {
        try write(
            "plugins/probe/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "probe", initial = { got = "" },
              actions = { probe = { what = "string" } }, mutations = { got = { v = "string" } },
              handle = function(a)
                local ok, r
                if a.what == "io" then ok, r = pcall(function() return io.open("/etc/hostname") end)
                else ok, r = pcall(require, "clock.init") end
                return { type = "got", v = tostring(ok) .. " " .. tostring(r) }
              end,
              reduce = function(s, m) s.got = m.v; return s end,
            }
            """)
        try write(
            "plugins/probe/spec/probe_spec.lua",
            """
            local T = require "moonflow.test"
            it("limits the plugin", function()
              assert.is_function(io.open)  -- the spec itself keeps the whole library
              local store = T.store("probe", { exhaustive = false })
              store:send({ type = "probe", what = "io" })
              assert.matches("attempt to index a nil value (global 'io')", store.state.got, 1, true)
              store:send({ type = "probe", what = "require" })
              assert.matches("can require only its own modules", store.state.got, 1, true)
            end)
            """)
        let sandboxed = try Moonflow.run(["test", "--sandbox", "plugins/probe/spec"], in: scratch)
        XCTAssertEqual(sandboxed.status, 0, sandboxed.stdout)
        let trusted = try Moonflow.run(["test", "plugins/probe/spec"], in: scratch)
        XCTAssertEqual(trusted.status, 1, "without --sandbox the plugin reads files: \(trusted.stdout)")
    }

    /// The spec in docs/testing.md passes as written, and the failure it shows is what `moonflow test` prints.
    func testTheReadmeSpecAndItsFailure() throws {
        let readme = try String(contentsOf: Moonflow.root.appendingPathComponent("docs/testing.md"), encoding: .utf8)
        let start = try XCTUnwrap(readme.range(of: "```lua\n-- plugins/counter/spec/counter_spec.lua\n"))
        let end = try XCTUnwrap(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let spec = String(readme[start.upperBound..<end.lowerBound])
        try write(
            "plugins/counter/init.lua",
            try String(contentsOf: Moonflow.root.appendingPathComponent("plugins/counter/init.lua"), encoding: .utf8))
        try write("plugins/counter/spec/counter_spec.lua", "-- plugins/counter/spec/counter_spec.lua\n" + spec)
        let passing = try Moonflow.run(["test", "plugins/counter/spec"], in: scratch)
        XCTAssertEqual(passing.status, 0, passing.stdout)

        var lines = ("-- plugins/counter/spec/counter_spec.lua\n" + spec).components(separatedBy: "\n")
        XCTAssertTrue(lines[7].contains("s.count = 9"), lines[7])
        lines[7] = lines[7].replacingOccurrences(of: "s.count = 9", with: "s.count = 10")
        try write("plugins/counter/spec/counter_spec.lua", lines.joined(separator: "\n"))
        let failing = try Moonflow.run(["test", "plugins/counter/spec"], in: scratch)
        let consoleStart = try XCTUnwrap(readme.range(of: "$ moonflow test plugins/counter/spec\n"))
        let consoleEnd = try XCTUnwrap(readme.range(of: "```", range: consoleStart.upperBound..<readme.endIndex))
        // The timing differs.
        let untimed = { (text: String) in
            text.replacingOccurrences(of: #"  \(\d+ ms\)"#, with: "", options: .regularExpression)
        }
        let shown = untimed(String(readme[consoleStart.upperBound..<consoleEnd.lowerBound]))
        XCTAssertEqual(untimed(failing.stdout), shown, "docs/testing.md shows:\n\(shown)\nactual:\n\(failing.stdout)")
    }

    func testExecRunsTimersAfterTheMainChunkThenExits() throws {
        try write(
            "timer.lua",
            """
            local mf = require "moonflow"
            mf.timer(50, "tick"):subscribe(print)
            mf.from({ 1, 2 }):map(function(x) return x * 10 end):subscribe(print)
            print(type(mf.feature), type(mf.compose))
            """)
        let started = Date()
        let result = try Moonflow.run(["exec", "timer.lua"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "10\n20\nfunction\tfunction\ntick\n")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.05, "tick comes after 50 ms of real time")
    }
}
