import Foundation
import XCTest

/// An exploration's budget (steps, seconds) is its own; stopped by it, or by the test's time
/// limit, it still reports the failure it found and the best shrink so far.
final class ExploreBudgetTests: ScratchTestCase {
    /// A counter that ticks; with `limit`, an invariant that breaks once it passes `limit`.
    private func counter(_ name: String, limit: Int? = nil) -> String {
        """
        local mf = require "moonflow"
        return mf.feature {
          name = "\(name)", initial = { n = 0 }, state = { n = "integer" },
          actions = { tick = {} }, mutations = { ticked = {} },
          invariants = { \(limit.map { "belowLimit = function(s) return s.n < \($0) end" } ?? "") },
          handle = function() return { type = "ticked" } end,
          reduce = function(s) s.n = s.n + 1 return s end,
        }
        """
    }

    func testAShrinkCutByTheStepBudgetStillPrintsTheFailureAndTheBestShrinkSoFar() throws {
        // Twenty ticks fail; the first run finds them within its 50 steps, and the budget of 40
        // ends the shrinking after its first run.
        try write("plugins/ticks/init.lua", counter("ticks", limit: 20))
        let result = try Moonflow.run(["test", "--explore", "ticks", "--seed", "1", "--steps", "40"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("run 1 failed: invariant belowLimit"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("stopped by its budget of 40 steps: the best shrink so far); to reproduce, paste:"),
            result.stdout)
        XCTAssertTrue(
            result.stdout.contains("store:checkInvariants()  -- fails: invariant 'belowLimit'"), result.stdout)
    }

    func testARunThatPassesIsStoppedBeforeTheTestsLimitAndByItsOwnSeconds() throws {
        try write("plugins/calm/init.lua", counter("calm"))
        try write(
            "plugins/calm/spec/budget_spec.lua",
            """
            local T = require "moonflow.test"
            it("stops before the test's limit", function()
              local report = T.explore("calm", { seed = 1, runs = 100000000, quiet = true })
              assert.equal("test", report.stopped)
              assert.is_true(report.runs < 100000000)
            end)
            it("stops at its own seconds", function()
              local report = T.explore("calm", { seed = 1, runs = 100000000, seconds = 0.2, quiet = true })
              assert.equal("seconds", report.stopped)
            end)
            """)
        // A test limit of 1 s (ten times --time-limit): a hundred million runs would pass it.
        let result = try Moonflow.run(
            ["test", "--time-limit", "100", "plugins/calm/spec", "--filter", "the test's limit"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("1 passed, 0 failed"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("every check held in the "), result.stdout)
        XCTAssertTrue(result.stdout.contains("stopped it"), result.stdout)
        // Its own budget of seconds ends it quietly, within the test's default limit.
        let own = try Moonflow.run(["test", "plugins/calm/spec", "--filter", "own seconds"], in: scratch)
        XCTAssertEqual(own.status, 0, own.stdout + own.stderr)
        XCTAssertTrue(own.stdout.contains("1 passed, 0 failed"), own.stdout)
    }

    func testBudgetsOutOfRangeAreRefused() throws {
        try write("plugins/calm/init.lua", counter("calm"))
        let steps = try Moonflow.run(["test", "--explore", "calm", "--steps", "0"], in: scratch)
        XCTAssertNotEqual(steps.status, 0)
        XCTAssertTrue(steps.stderr.contains("--steps 0: give 1 or more steps"), steps.stderr)
        let seconds = try Moonflow.run(["test", "--explore", "calm", "--seconds", "0"], in: scratch)
        XCTAssertNotEqual(seconds.status, 0)
        XCTAssertTrue(seconds.stderr.contains("--seconds 0.0: give more than 0"), seconds.stderr)
    }
}
