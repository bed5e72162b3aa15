import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// `moonflow test` cannot hang (a dropped store's call, a looping test), and
/// scales: `--jobs`, `--shard`, results as each test ends, TAP's closing count.
final class SpecRunnerLimitsTests: ScratchTestCase {
    /// A plugin over a declared SQLite repository: `load` is a Swift-side call.
    private func writeItemsPlugin() throws {
        try write(
            "plugins/items/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "items",
              initial = { items = {}, spins = 0 },
              actions = { load = {}, spin = {}, pick = { id = "integer" } },
              mutations = { loaded = { items = "table" }, spun = {}, picked = { item = "table" } },
              repositories = { items = { sqlite = "items.db", seed = { { id = 1, name = "a" }, { id = 2, name = "b" } } } },
              handle = function(action, state, env)
                if action.type == "spin" then return { type = "spun" } end
                if action.type == "pick" then
                  return env.services.items:get { id = action.id }:map(function(item) return { type = "picked", item = item } end)
                end
                return env.services.items:getAll {}:map(function(items) return { type = "loaded", items = items } end)
              end,
              reduce = function(state, m)
                if m.type == "spun" then while true do end end
                if m.type == "picked" then return state end
                state.items = m.items
                return state
              end,
            }
            """)
    }

    func testAStoreDroppedWithACallInFlightDoesNotBlockTheNextTest() throws {
        try writeItemsPlugin()
        try write(
            "plugins/items/spec/items_spec.lua",
            """
            local T = require "moonflow.test"
            describe("items", function()
              it("fails before receive", function()
                local store = T.store("items")
                store:send({ type = "load" })
                assert.are.equal(1, 2)
              end)
              it("advances a fresh store", function()
                local store = T.store("items")
                store:advance(100)
              end)
            end)
            """)
        // Before, the second test waited forever for the first store's answer.
        let result = try Moonflow.run(["test", "--tap"], in: scratch, timeout: 60)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("not ok 1 - items fails before receive"), result.stdout)
        XCTAssertTrue(result.stdout.contains("ok 2 - items advances a fresh store"), result.stdout)
        XCTAssertEqual(result.stdout.split(separator: "\n").last, "# 1 passed, 1 failed", result.stdout)
    }

    func testALoopingTestFailsWhereItWasStoppedAndTheNextOneRuns() throws {
        try writeItemsPlugin()
        try write(
            "plugins/items/spec/loops_spec.lua",
            """
            local T = require "moonflow.test"
            describe("loops", function()
              it("spins", function() while true do end end)
              it("spins in pcall", function()
                while true do pcall(function() while true do end end) end
              end)
              it("reducer spins", function()
                local store = T.store("items")
                store:send({ type = "spin" })
                store:receiveError("nothing")
              end)
              it("runs after", function() assert.are.equal(1, 1) end)
            end)
            """)
        let result = try Moonflow.run(["test", "--time-limit", "50"], in: scratch, timeout: 60)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        let limit =
            "test exceeded its time limit of 500 ms (ten times --time-limit: raise it with moonflow test --time-limit MS)"
        XCTAssertTrue(
            result.stdout.contains("✗ loops spins: plugins/items/spec/loops_spec.lua:3: " + limit), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("✗ loops spins in pcall: plugins/items/spec/loops_spec.lua:5: " + limit),
            result.stdout)
        // A feature call inside a test keeps its own limit and message.
        XCTAssertTrue(
            result.stdout.contains(
                "time limit of 50 ms exceeded: the script ran too long (raise it with --time-limit MS) (plugins/items/init.lua:"
            ), result.stdout)
        XCTAssertTrue(result.stdout.contains("  ✓ loops runs after"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("1 passed, 3 failed\n"), result.stdout)
    }

    /// A test's limit counts its thread's CPU time, as a call's does: on a loaded machine a
    /// healthy test is run less, not stopped (three runs in ten of the examples' explorations
    /// failed there). Time it spends waiting (here a sleep, as a service's answer would be)
    /// counts only against the wall-clock backstop, three times the limit.
    func testATestsLimitCountsCPUTimeAndWaitingOnlyAgainstTheBackstop() throws {
        try writeItemsPlugin()
        try write(
            "plugins/items/spec/waits_spec.lua",
            """
            describe("waits", function()
              it("works, then waits past the limit's wall time", function()
                local start = os.clock()
                while os.clock() - start < 0.05 do end
                os.execute("sleep 0.5")
              end)
              it("waits past the backstop", function()
                os.execute("sleep 2")
              end)
            end)
            """)
        let result = try Moonflow.run(["test", "--time-limit", "20"], in: scratch, timeout: 60)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("✓ waits works, then waits past the limit's wall time"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("✗ waits waits past the backstop: plugins/items/spec/waits_spec.lua:"), result.stdout
        )
        XCTAssertTrue(result.stdout.contains("test exceeded its time limit of 200 ms"), result.stdout)
    }

    /// A loop anywhere in a spec file, not only in an `it`, stops at the limit and fails at
    /// its line: the top level, a describe body, setup, teardown, before_each, after_each,
    /// a `finally`. Before, each hung the whole run.
    func testALoopOutsideAnItStopsAtTheLimitInEveryPlace() throws {
        try writeItemsPlugin()
        let places = [
            "top": "while true do end\ndescribe('x', function() it('t', function() end) end)",
            "describe": "describe('x', function() while true do end end)",
            "setup": "describe('x', function() setup(function() while true do end end) it('t', function() end) end)",
            "teardown":
                "describe('x', function() teardown(function() while true do end end) it('t', function() end) end)",
            "before":
                "describe('x', function() before_each(function() while true do end end) it('t', function() end) end)",
            "after":
                "describe('x', function() after_each(function() while true do end end) it('t', function() end) end)",
            "finally":
                "describe('x', function() it('t', function() finally(function() while true do end end) end) end)",
        ]
        for (name, body) in places { try write("plugins/items/spec/\(name)_spec.lua", body + "\n") }
        try write(
            "plugins/items/spec/zz_spec.lua", "describe('after all', function() it('runs', function() end) end)\n")
        let result = try Moonflow.run(["test", "--time-limit", "20"], in: scratch, timeout: 120)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        for name in places.keys {
            XCTAssertTrue(
                result.stdout.contains("plugins/items/spec/\(name)_spec.lua:1: test exceeded its time limit of 200 ms"),
                "\(name): \(result.stdout)")
        }
        XCTAssertTrue(result.stdout.contains("✓ after all runs"), result.stdout)
    }

    func testAFailingSpecOverServiceCallsReadsTheSameOnEveryRun() throws {
        try writeItemsPlugin()
        try write(
            "plugins/items/spec/pick_spec.lua",
            """
            local T = require "moonflow.test"
            describe("items", function()
              it("picks", function()
                local store = T.store("items")
                store:send({ type = "pick", id = 1 })
                store:send({ type = "pick", id = 2 })
                store:receive({ type = "picked", item = { id = 9 } })
              end)
            end)
            """)
        // The answers race on their threads; they come in the order the calls were made, after the sends.
        var outputs = Set<String>()
        for _ in 1...10 {
            let result = try Moonflow.run(["test"], in: scratch)
            outputs.insert(
                result.stdout.replacingOccurrences(of: #"\(\d+ ms\)"#, with: "", options: .regularExpression))
        }
        XCTAssertEqual(outputs.count, 1, outputs.joined(separator: "\n----\n"))
        let output = try XCTUnwrap(outputs.first)
        XCTAssertTrue(output.contains("pick_spec.lua:7: receive(picked): the next mutation does not match"), output)
        XCTAssertTrue(output.contains("+ mutation.item.id = 1"), output)
    }

    /// Three spec files, one failing.
    private func writeThreeFiles() throws {
        try writeItemsPlugin()
        for (name, body) in [
            ("a", "assert.are.equal(1, 1)"), ("b", "assert.are.equal(1, 2)"), ("c", "print('from c')"),
        ] {
            try write(
                "plugins/items/spec/\(name)_spec.lua",
                """
                describe("\(name)", function()
                  it("one", function() \(body) end)
                  it("two", function() assert.is_true(true) end)
                end)
                """)
        }
    }

    /// The output without its timings.
    private func untimed(_ text: String) -> String {
        text.replacingOccurrences(of: #"  \(\d+ ms\)"#, with: "", options: .regularExpression)
    }

    func testJobsKeepEachFilesLinesTogetherAndInFileOrder() throws {
        try writeThreeFiles()
        let one = try Moonflow.run(["test", "--jobs", "1"], in: scratch)
        let three = try Moonflow.run(["test", "--jobs", "3", "--junit", "report.xml"], in: scratch)
        XCTAssertEqual(three.status, 1)
        XCTAssertEqual(untimed(three.stdout), untimed(one.stdout))
        // Each test's line comes as it ends, before its file's line.
        let lines = untimed(one.stdout).split(separator: "\n").map(String.init)
        XCTAssertEqual(
            Array(lines.prefix(3)), ["  ✓ a one", "  ✓ a two", "✓ plugins/items/spec/a_spec.lua  2 passed"], one.stdout)
        XCTAssertTrue(lines.contains("from c"), one.stdout)
        let xml = try XMLDocument(data: Data(contentsOf: scratch.appendingPathComponent("report.xml")))
        XCTAssertEqual(try xml.nodes(forXPath: "//testsuite").count, 3)
        XCTAssertEqual(
            (try xml.nodes(forXPath: "/testsuites").first as? XMLElement)?.attribute(forName: "tests")?.stringValue, "6"
        )

        let tap = try Moonflow.run(["test", "--jobs", "3", "--tap"], in: scratch)
        let numbers = tap.stdout.split(separator: "\n").compactMap { line -> Int? in
            let words = line.split(separator: " ")
            if line.hasPrefix("ok ") { return Int(words[1]) }
            if line.hasPrefix("not ok ") { return Int(words[2]) }
            return nil
        }
        XCTAssertEqual(numbers, Array(1...6), tap.stdout)
        XCTAssertEqual(tap.stdout.split(separator: "\n").suffix(2), ["1..6", "# 5 passed, 1 failed"], tap.stdout)
    }

    func testShardsSplitTheFilesWithoutOverlapAndABadShardIsAUsageError() throws {
        try writeThreeFiles()
        func files(_ result: Moonflow.Result) -> [String] {
            result.stdout.split(separator: "\n").filter { $0.hasPrefix("✓ ") || $0.hasPrefix("✗ ") }
                .map { String($0.split(separator: " ")[1]) }
        }
        var seen: [String] = []
        for i in 1...3 {
            let result = try Moonflow.run(["test", "--shard", "\(i)/3"], in: scratch)
            seen += files(result)
            // The same shard again runs the same files.
            XCTAssertEqual(files(try Moonflow.run(["test", "--shard", "\(i)/3"], in: scratch)), files(result))
            XCTAssertEqual(
                result.status, files(result).contains("plugins/items/spec/b_spec.lua") ? 1 : 0, result.stdout)
        }
        XCTAssertEqual(
            seen.sorted(),
            ["plugins/items/spec/a_spec.lua", "plugins/items/spec/b_spec.lua", "plugins/items/spec/c_spec.lua"])

        let bad = try Moonflow.run(["test", "--shard", "4/3"], in: scratch)
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("--shard 4/3: give I/N with 1 ≤ I ≤ N"), bad.stderr)
    }
}
