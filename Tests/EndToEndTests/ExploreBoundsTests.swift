import Foundation
import XCTest

/// `T.explore`'s numbers from outside (runs, length, firstRun, seed) are refused when they
/// cannot be run as given, and its report counts only the runs that ran.
final class ExploreBoundsTests: ScratchTestCase {
    func testBoundsThatOverflowAreRefusedAndTheReportCountsTheRunsThatRan() throws {
        try write(
            "plugins/calm/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "calm", initial = { n = 0 }, state = { n = "integer" },
              actions = { tick = {} }, mutations = { ticked = {} },
              handle = function() return { type = "ticked" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        try write("plugins/player/init.lua", ExploreTests.player)
        try write(
            "plugins/calm/spec/bounds_spec.lua",
            """
            local T = require "moonflow.test"
            it("a firstRun whose runs pass the largest integer", function()
              T.explore("calm", { firstRun = math.maxinteger - 5, runs = 10, length = 3, seed = 1 })
            end)
            it("a seed that is not a whole number", function()
              T.explore("calm", { seed = 0.5, runs = 1, length = 1 })
            end)
            it("the very last run number", function()
              local report = T.explore("calm", { firstRun = math.maxinteger, runs = 1, length = 3, seed = 1, quiet = true })
              assert.equal(1, report.runs)
            end)
            it("counts the runs up to the failing one", function()
              local report = T.explore("player", { firstRun = 1001, runs = 500, seed = 1, quiet = true, raise = false })
              assert.truthy(report.failure)
              assert.equal(report.failure.run - 1000, report.runs)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/calm/spec"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertFalse(result.stdout.contains("every check held"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✗ a firstRun whose runs pass the largest integer: "), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("opts.firstRun (9223372036854775802) + opts.runs (10) - 1 is past math.maxinteger"),
            result.stdout)
        XCTAssertTrue(result.stdout.contains("✗ a seed that is not a whole number: "), result.stdout)
        XCTAssertTrue(result.stdout.contains("T.explore: opts.seed must be a whole number (got 0.5)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✓ the very last run number"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✓ counts the runs up to the failing one"), result.stdout)
        XCTAssertTrue(result.stdout.contains("2 passed, 2 failed"), result.stdout)
    }
}
