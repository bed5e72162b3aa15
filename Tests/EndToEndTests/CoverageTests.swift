import Foundation
import XCTest

/// `moonflow test --coverage`: the plugins' lines the specs ran, as a table and as lcov's
/// tracefile, on the built binary.
final class CoverageTests: ScratchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try write(
            "plugins/gauge/init.lua",
            """
            local mf = require "moonflow"
            local util = require "gauge.util"

            return mf.feature {
              name = "gauge",
              initial = { n = 0 },
              actions = { tick = {}, spin = {}, never = {} },
              mutations = { ticked = {} },
              handle = function(action)
                if action.type == "spin" then
                  while true do end
                elseif action.type == "never" then
                  return util.unused()
                end
                return { type = "ticked" }
              end,
              reduce = function(state)
                state.n = util.bump(state.n)
                return state
              end,
            }
            """)
        try write(
            "plugins/gauge/util.lua",
            """
            local M = {}

            function M.bump(n)
              return n + 1
            end

            function M.unused()
              local x = 1
              return { type = "ticked", x = x }
            end

            return M
            """)
        try write(
            "plugins/gauge/spec/gauge_spec.lua",
            """
            local T = require "moonflow.test"
            it("ticks after a call the time limit stopped", function()
              local store = T.store("gauge", { exhaustive = false })
              store:send({ type = "spin" })
              store:receiveError("time limit")
              store:send({ type = "tick" })
              assert.equal(1, store.state.n)
            end)
            """)
    }

    func testCoverageCountsThePluginsLinesAndWritesLcov() throws {
        let result = try Moonflow.run(["test", "--coverage", "--time-limit", "100"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(
            result.stdout.contains("coverage: lines of the plugins' Lua run by the specs and explorations"),
            result.stdout)
        XCTAssertNotNil(
            result.stdout.range(of: #"plugins/gauge/util\.lua +7/9 +77\.8%"#, options: .regularExpression),
            result.stdout)
        XCTAssertTrue(result.stdout.contains("wrote coverage/lcov.info (lcov)"), result.stdout)
        let lcov = try String(contentsOf: scratch.appendingPathComponent("coverage/lcov.info"), encoding: .utf8)
        let util = try XCTUnwrap(
            lcov.components(separatedBy: "end_of_record\n").first { $0.contains("SF:plugins/gauge/util.lua") })
        // Every line that can run, those never run with 0: the function no spec called too
        // (lines 3, 5, 7 and 10 are the main chunk's, which makes the functions). Each
        // function by the name its line gives, with how often it ran, for genhtml's table.
        XCTAssertEqual(
            util,
            """
            TN:
            SF:plugins/gauge/util.lua
            FN:3,M.bump
            FN:7,M.unused
            FNDA:1,M.bump
            FNDA:0,M.unused
            FNF:2
            FNH:1
            DA:1,1
            DA:3,1
            DA:4,1
            DA:5,1
            DA:7,1
            DA:8,0
            DA:9,0
            DA:10,1
            DA:12,1
            LF:9
            LH:7

            """)
        let main = try XCTUnwrap(
            lcov.components(separatedBy: "end_of_record\n").first { $0.contains("SF:plugins/gauge/init.lua") })
        // Lines after the watchdog stopped the spinning call still count: its hook gave the
        // line hook back (line 15 is the tick's mutation, run after the stop).
        XCTAssertTrue(main.contains("DA:15,1\n"), main)
        XCTAssertTrue(main.contains("DA:13,0\n"), "the never-sent action's line: \(main)")
        XCTAssertTrue(main.contains("FN:9,handle\nFN:17,reduce\n"), main)
        XCTAssertTrue(main.contains("FNDA:1,reduce\n"), main)
        XCTAssertFalse(lcov.contains("spec"), "spec files are not counted: \(lcov)")
        XCTAssertTrue(lcov.hasSuffix("end_of_record\n"), lcov)
    }

    /// The tracefile as Debian's `genhtml` (lcov 1.16, which scripts/setup installs) reads it:
    /// a report with a line and a function table for each plugin file, the function named.
    func testGenhtmlReadsTheTracefileWithItsFunctions() throws {
        let genhtml = URL(fileURLWithPath: "/usr/bin/genhtml")
        guard FileManager.default.isExecutableFile(atPath: genhtml.path) else {
            return XCTFail("genhtml is missing: scripts/setup installs Debian's lcov")
        }
        let result = try Moonflow.run(["test", "--coverage", "--time-limit", "100"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let html = try Moonflow.run(
            executable: genhtml, ["--output-directory", "html", "coverage/lcov.info"], in: scratch)
        XCTAssertEqual(html.status, 0, html.stdout + html.stderr)
        XCTAssertNotNil(
            html.stdout.range(
                of: #"functions\.\.: [0-9.]+% \([1-9][0-9]* of [1-9][0-9]* functions\)"#, options: .regularExpression),
            html.stdout)
        // genhtml names the page from the path past the files' common prefix.
        let pages = FileManager.default.enumerator(atPath: scratch.appendingPathComponent("html").path)
        let page = try XCTUnwrap(
            (pages?.allObjects as? [String])?.first { $0.hasSuffix("util.lua.func.html") }, "no function page")
        let functions = try String(
            contentsOf: scratch.appendingPathComponent("html").appendingPathComponent(page), encoding: .utf8)
        XCTAssertTrue(functions.contains("M.bump") && functions.contains("M.unused"), functions)
    }

    func testWithoutTheFlagNoHookIsSetAndNoFileWritten() throws {
        try write(
            "plugins/gauge/spec/hook_spec.lua",
            """
            it("has no hook", function() assert.is_nil(debug.gethook()) end)
            """)
        let result = try Moonflow.run(["test", "--time-limit", "100"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertFalse(result.stdout.contains("coverage:"), result.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("coverage").path))
    }
}
