import Foundation
import XCTest

/// How `moonflow run` takes its input and says what went wrong with it, on the built binary.
final class RunInputTests: ScratchTestCase {
    private func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    // MARK: piped input

    func testPipedStandardInputIsReadWithoutTheActionsFlag() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--format", "jsonl"],
            input: "{\"type\":\"increment\",\"by\":2}\n{\"type\":\"increment\"}\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        let out = lines(result.stdout)
        XCTAssertEqual(out.filter { $0.contains("\"event\":\"action\"") }.count, 2, result.stdout)
        XCTAssertTrue(out.last?.contains("\"state\":{\"count\":3}") == true, result.stdout)
    }

    func testPipedInputErrorsNameStdinAndItsLine() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--format", "jsonl", "--clock", "virtual"],
            input: "{\"type\":\"increment\"}\nincrement\n")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("\"where\":\"stdin:2\""), result.stdout)
        XCTAssertTrue(result.stdout.contains("not a JSON object"), "shorthand is for the prompt only: \(result.stdout)")
    }

    // MARK: timed lines and `at`

    private let scheduler = """
        local mf = require "moonflow"
        return mf.feature {
          name = "scheduler",
          initial = { at = 0 },
          actions = { schedule = { at = "integer" } },
          mutations = { set = { at = "integer" } },
          handle = function(a) return { type = "set", at = a.at } end,
          reduce = function(s, m) s.at = m.at return s end,
        }
        """

    func testAnActionWithAFieldNamedAtIsSentAsAnAction() throws {
        try write("scheduler/init.lua", scheduler)
        let input = try write(
            "in.jsonl",
            """
            {"type":"schedule","at":5}
            {"at":40,"send":{"type":"schedule","at":7}}

            """)
        let result = try Moonflow.run(
            ["run", "scheduler", "--actions", input, "--format", "jsonl", "--clock", "virtual"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertEqual(
            lines(result.stdout),
            [
                #"{"event":"state","t":0,"seq":0,"state":{"at":0}}"#,
                #"{"event":"action","t":0,"action":{"at":5,"type":"schedule"}}"#,
                #"{"event":"mutation","t":0,"seq":1,"mutation":{"at":5,"type":"set"}}"#,
                #"{"event":"state","t":0,"seq":1,"state":{"at":5}}"#,
                #"{"event":"action","t":40,"action":{"at":7,"type":"schedule"}}"#,
                #"{"event":"mutation","t":40,"seq":2,"mutation":{"at":7,"type":"set"}}"#,
                #"{"event":"state","t":40,"seq":2,"state":{"at":7}}"#,
            ])
        // Never ambiguous (a timed line has no `type`), so `check` has nothing to say about it.
        let check = try Moonflow.run(["check", "scheduler"], in: scratch)
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(check.stderr, "")
    }

    func testALineThatGoesBackInTimeIsSentWithAWarning() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--format", "jsonl", "--clock", "virtual"],
            input: "{\"at\":100,\"send\":{\"type\":\"increment\"}}\n{\"at\":50,\"send\":{\"type\":\"decrement\"}}\n")
        XCTAssertEqual(result.status, 0, "a warning, not an error: \(result.stdout)")
        let out = lines(result.stdout)
        let warning = try XCTUnwrap(out.firstIndex { $0.contains("\"event\":\"log\"") }, result.stdout)
        XCTAssertEqual(
            out[warning],
            #"{"event":"log","t":100,"message":"\"at\":50 is before the run's clock (100 ms), so the action is sent now; timed lines go in time order","where":"stdin:2"}"#
        )
        XCTAssertTrue(out[warning + 1].contains(#""t":100,"action":{"type":"decrement"}"#), result.stdout)
    }

    func testOnTheRealClockALineInTimeOrderIsNotLate() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--format", "jsonl"],
            input: "{\"at\":0,\"send\":{\"type\":\"increment\"}}\n{\"at\":20,\"send\":{\"type\":\"increment\"}}\n")
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertFalse(
            result.stdout.contains("\"event\":\"log\""), "no warning for lines in time order: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains("\"state\":{\"count\":2}"), result.stdout)
    }

    func testALineStartingWithAByteOrderMarkIsRead() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--format", "jsonl", "--clock", "virtual"],
            input: "\u{FEFF}{\"type\":\"increment\"}\n")
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertTrue(result.stdout.contains("\"state\":{\"count\":1}"), result.stdout)
    }

    func testAnUndeclaredFieldOfAnActionWithNoFieldsSaysSo() throws {
        let result = try Moonflow.run(
            ["run", "plugins/counter", "--format", "jsonl", "--clock", "virtual"],
            input: "{\"type\":\"reset\",\"to\":3}\n")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stdout.contains("action 'reset': undeclared field 'to'; it declares no fields"), result.stdout)
    }

    // MARK: composites

    func testAnErrorInAChildNamesTheActionSentAndWhereItWent() throws {
        try write(
            "plugins/inner/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "inner", initial = { n = 0 }, actions = { open = { id = "integer" } }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """)
        try write(
            "plugins/outer/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "outer",
              children = { inner = "inner" },
              route = function(action) return "inner", { type = "open", id = action.id } end,
              combine = function(states) return states.inner end,
            }
            """)
        let result = try Moonflow.run(
            ["run", "plugins/outer", "--format", "jsonl", "--clock", "virtual"], in: scratch,
            input: "{\"type\":\"select\",\"id\":\"x\"}\n")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stdout.contains(
                #"action 'select', routed to child 'inner' as 'open': action 'open': field 'id' must be an integer (got string \"x\")"#
            ), result.stdout)
        XCTAssertTrue(result.stdout.contains("\"where\":\"stdin:1\""), result.stdout)
    }

    func testMutationAndStateEventsOfACompositeSayWhichChildTheyCameFrom() throws {
        let result = try Moonflow.run(
            ["run", "plugins/user", "--format", "jsonl", "--clock", "virtual"],
            input: "{\"type\":\"loadPosts\",\"userId\":1}\n")
        XCTAssertEqual(result.status, 0, result.stdout)
        let out = lines(result.stdout)
        XCTAssertTrue(
            out[0].hasPrefix(#"{"event":"state","t":0,"seq":0,"state":"#),
            "the initial state comes from no child: \(out[0])")
        XCTAssertTrue(
            out.contains {
                $0.hasPrefix(#"{"event":"mutation","t":0,"seq":1,"from":"posts","mutation":{"type":"load""#)
            }, result.stdout)
        XCTAssertTrue(
            out.contains { $0.hasPrefix(#"{"event":"state","t":0,"seq":1,"from":"posts","state":"#) }, result.stdout)
        let pretty = try Moonflow.run(
            ["run", "plugins/user", "--clock", "virtual"], input: "{\"type\":\"loadPosts\",\"userId\":1}\n")
        XCTAssertTrue(pretty.stdout.contains("• load from posts { userId = 1 }"), pretty.stdout)
    }

    func testAPluginNotFoundNamesEachSearchedFolderOnce() throws {
        try write(
            "plugins/solo/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose { name = "solo", children = { gone = "gone" }, route = function() end, combine = function(s) return {} end }
            """)
        let result = try Moonflow.run(["run", "plugins/solo", "--format", "jsonl"], in: scratch)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stdout.contains("no plugin named 'gone' in plugins; expected plugins/gone/init.lua"), result.stdout)
    }

    // MARK: work in flight at the end of input

    private let waiter = """
        local mf = require "moonflow"
        return mf.feature {
          name = "waiter", initial = { n = 0 }, actions = { wait = {}, tick = {} }, mutations = { tick = {} },
          handle = function(a)
            if a.type == "wait" then return mf.never() end
            return { type = "tick" }
          end,
          reduce = function(s) s.n = s.n + 1 return s end,
        }
        """

    func testVirtualClockWithNeverRunsOnToUntil() throws {
        try write("waiter/init.lua", waiter)
        let result = try Moonflow.run(
            ["run", "waiter", "--format", "jsonl", "--clock", "virtual", "--until", "500"], in: scratch,
            input: "{\"type\":\"wait\"}\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        // It waits for the work in flight until the clock reaches --until, then says what was left.
        XCTAssertEqual(result.stderr, "moonflow: --until 500 ended the run at 500 ms with work in flight: wait #1\n")
    }

    func testVirtualClockWithNeverAndNoUntilSaysWhatIsStillInFlight() throws {
        try write("waiter/init.lua", waiter)
        let result = try Moonflow.run(
            ["run", "waiter", "--format", "jsonl", "--clock", "virtual"], in: scratch,
            input: "{\"type\":\"tick\"}\n{\"type\":\"wait\"}\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(
            result.stderr,
            "moonflow: the run ends at 0 ms with work in flight that nothing scheduled will finish (wait #2); pass --until MS to run the clock on to MS\n"
        )
    }

    func testRealClockWithNeverEndsAtUntil() throws {
        try write("waiter/init.lua", waiter)
        // Without --until this run would wait for Ctrl-C; Moonflow.run's own timeout catches a hang.
        let result = try Moonflow.run(
            ["run", "waiter", "--format", "jsonl", "--until", "100"], in: scratch,
            input: "{\"type\":\"wait\"}\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("\"action\":{\"type\":\"wait\"}"), result.stdout)
    }
}
