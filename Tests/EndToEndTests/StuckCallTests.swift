import Foundation
import XCTest

/// The last resort, a call no hook reaches (a blocking C call): the state is left behind
/// and the feature rebuilt with its last state, and stuck states do not pile up.
final class StuckCallTests: ScratchTestCase {
    /// A plugin whose `block` action calls a C function that blocks (os.execute, trusted
    /// profile) for longer than the watchdog waits: nothing inside Lua can stop it.
    private func writeBlockingPlugin() throws {
        try write(
            "plugins/blocking/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "blocking", initial = { count = 0 },
              actions = { bump = {}, block = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "block" then os.execute("exec sleep 6 </dev/null >/dev/null 2>&1") end
                return { type = "bump" }
              end,
              reduce = function(s) s.count = s.count + 1 return s end,
            }
            """)
    }

    func testAStuckCallIsLeftBehindAndTheFeatureRebuiltWithItsLastStateOnEitherClock() throws {
        try writeBlockingPlugin()
        let lines = [
            #"{"type":"bump"}"#, #"{"type":"bump"}"#, #"{"type":"block"}"#, #"{"type":"bump"}"#, #"{"type":"bump"}"#,
        ]
        for clock in ["virtual", "real"] {
            try write("in.jsonl", lines.joined(separator: "\n") + "\n")
            let result = try Moonflow.run(
                [
                    "run", "plugins/blocking", "--actions", "in.jsonl", "--format", "jsonl",
                    "--clock", clock, "--time-limit", "200",
                ], in: scratch, timeout: 30)
            XCTAssertEqual(result.status, 1, "the stuck call is an error of the run (\(clock)): \(result.stderr)")
            let stuck = jsonlErrors(result.stdout).filter { $0.contains("cannot be interrupted") }
            XCTAssertEqual(stuck.count, 1, "one report of the stuck call (\(clock)): \(result.stdout)")
            XCTAssertTrue(
                stuck.first?.contains("loaded again from plugins/blocking with its last state") == true,
                stuck.first ?? "")
            XCTAssertEqual(
                jsonlLastState(result.stdout)?["count"] as? Int, 4,
                "the two bumps before kept, the two after counted by the rebuilt feature (\(clock)): \(result.stdout)")
            if clock == "real" {
                // (The harness itself waits for the blocking child process, which outlives the run.)
                let lastT = jsonlEvents(result.stdout).last?["t"] as? Int ?? .max
                XCTAssertLessThan(
                    lastT, 5000, "the run went on without waiting for the blocking call to end: \(result.stdout)")
            }
        }
    }

    func testARebuildThatBlocksAsItLoadsEndsTheRun() throws {
        // The first load passes (the marker file is absent); the rebuild finds it and blocks too.
        try write(
            "plugins/blockload/init.lua",
            """
            local mf = require "moonflow"
            local f = io.open("rebuilt", "r")
            if f then f:close() os.execute("exec sleep 6 </dev/null >/dev/null 2>&1") end
            return mf.feature {
              name = "blockload", initial = { n = 0 }, actions = { block = {} }, mutations = {},
              handle = function() io.open("rebuilt", "w"):close() os.execute("exec sleep 6 </dev/null >/dev/null 2>&1") end,
              reduce = function(s) return s end,
            }
            """)
        let result = try runJSONL(
            "blockload", [#"{"type":"block"}"#, #"{"type":"block"}"#], ["--time-limit", "200"], timeout: 30)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(
            jsonlErrors(result.stdout).contains { $0.contains("loading plugins/blockload again got stuck as well") },
            result.stdout)
    }

    func testATestStuckInABlockingCallFailsAndTheTestsAfterItRunInAFreshState() throws {
        try writeBlockingPlugin()
        try write(
            "plugins/blocking/spec/blocking_spec.lua",
            """
            local test = require "moonflow.test"
            describe("blocking", function()
              it("counts before", function()
                test.store("blocking"):send({ type = "bump" }, function(s) s.count = 1 end)
              end)
              it("blocks", function()
                test.store("blocking"):send { type = "block" }
              end)
              it("counts after", function()
                test.store("blocking"):send({ type = "bump" }, function(s) s.count = 1 end)
              end)
            end)
            """)
        let result = try Moonflow.run(
            ["test", "--time-limit", "200", "plugins/blocking/spec"], in: scratch, timeout: 30)
        let fileMs =
            result.stdout.firstMatch(of: /blocking_spec\.lua  2 passed, 1 failed  \((\d+) ms\)/).flatMap { Int($0.1) }
            ?? .max
        XCTAssertLessThan(fileMs, 5000, "the runner did not wait for the blocking call: \(result.stdout)")
        XCTAssertEqual(result.status, 1, result.stdout)
        XCTAssertTrue(
            result.stdout.contains("ERROR blocking blocks\n  stuck in a call that ran on past the time limit (200 ms)"),
            result.stdout)
        XCTAssertTrue(result.stdout.contains("at plugins/blocking/spec/blocking_spec.lua:6"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("✓ blocking counts after"),
            "the test after it ran in a fresh state: \(result.stdout)")
        XCTAssertTrue(result.stdout.hasSuffix("2 passed, 1 failed\n"), result.stdout)
    }

    func testExecEndsWithAMessageWhenTheScriptIsStuckInABlockingCall() throws {
        try write(
            "blocks.lua",
            """
            print("before")
            os.execute("exec sleep 6 </dev/null >/dev/null 2>&1")
            print("after")
            """)
        let result = try Moonflow.run(["exec", "--time-limit", "200", "blocks.lua"], in: scratch, timeout: 30)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(
            result.stdout, "before\n", "the script's thread is left behind: nothing after the blocking call runs")
        XCTAssertEqual(
            result.stderr,
            "moonflow: a call ran on past the time limit of 200 ms in code that cannot be interrupted (a blocking C or Swift function, such as os.execute or io.read); the program ends without waiting for it\n"
        )
    }

    /// Each stuck call left its thread and whole Lua state behind for good, and the run
    /// rebuilt without end (12 stuck calls of a 30 MB state: 120 MB -> 983 MB). A run keeps at
    /// most 4 states stuck at once: the fourth ends it, saying so.
    func testARunEndsWhenFourStatesAreStuckAtOnceSayingSo() throws {
        try write(
            "plugins/blocking/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "blocking", initial = { count = 0 },
              actions = { bump = {}, block = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "block" then os.execute(\(Self.untilMoonflowEnds)) end
                return { type = "bump" }
              end,
              reduce = function(s) s.count = s.count + 1 return s end,
            }
            """)
        let lines = [#"{"type":"bump"}"#] + Array(repeating: #"{"type":"block"}"#, count: 5) + [#"{"type":"bump"}"#]
        let result = try runJSONL("blocking", lines, ["--time-limit", "50"], timeout: 60)
        XCTAssertEqual(result.status, 1, result.stderr)
        let stuck = jsonlErrors(result.stdout).filter { $0.contains("cannot be interrupted") }
        XCTAssertEqual(stuck.count, 4, result.stdout)
        XCTAssertEqual(
            stuck.filter { $0.contains("freed once the call returns), and the feature is loaded again") }.count, 3,
            result.stdout)
        XCTAssertTrue(
            stuck.last?.contains("4 Lua states stuck so are left behind now, the most a run keeps") == true,
            stuck.last ?? "")
        XCTAssertTrue(stuck.last?.hasSuffix("the run ends") == true, stuck.last ?? "")
    }

    /// `test` too: each stuck test left its state behind and the file went on in a fresh one.
    /// With 4 left behind at once, the file's later tests do not run, and the failure says so.
    func testASpecFileStopsMakingStatesAtTheCapSayingSo() throws {
        try write(
            "plugins/blocking/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "blocking", initial = { count = 0 }, actions = { block = {} }, mutations = {},
              handle = function() os.execute(\(Self.untilMoonflowEnds)) end,
              reduce = function(s) return s end,
            }
            """)
        try write(
            "plugins/blocking/spec/blocking_spec.lua",
            """
            local test = require "moonflow.test"
            describe("blocking", function()
              for i = 1, 5 do
                it("blocks " .. i, function() test.store("blocking"):send { type = "block" } end)
              end
            end)
            """)
        let result = try Moonflow.run(
            ["test", "--time-limit", "50", "plugins/blocking/spec"], in: scratch, timeout: 60)
        XCTAssertEqual(result.status, 1, result.stdout)
        for i in 1...4 {
            XCTAssertTrue(
                result.stdout.contains("✗ blocking blocks \(i): stuck in a call that ran on past the time limit"),
                result.stdout)
        }
        XCTAssertTrue(
            result.stdout.contains(
                "4 Lua states stuck so are left behind now, the most a run keeps (each holds its memory "
                    + "until its call returns): the tests after it in this file do not run"), result.stdout)
        XCTAssertFalse(result.stdout.contains("blocks 5"), "the fifth test did not run: \(result.stdout)")
    }
}
