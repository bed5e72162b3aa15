import Foundation
import XCTest

/// Each exploration run, and each run of the shrinker, starts from a fresh load of everything the
/// plugin defines: its Lua services too, not only `handle` and `reduce`.
final class ExploreIsolationTests: ScratchTestCase {
    /// A ticket counter whose fake backend numbers tickets in an upvalue of its Lua service: in a
    /// fresh load the first ticket is 1, so the last ticket is always the count of tickets taken.
    static let tickets = """
        local mf = require "moonflow"
        local issued = 0  -- the fake backend's own state
        local function nextTicket()
          issued = issued + 1
          return mf.just(issued)
        end
        return mf.feature {
          name = "tickets",
          initial = { taken = 0, last = 0 },
          state = { taken = "integer", last = "integer" },
          actions = { take = {} },
          mutations = { took = { n = "integer" } },
          -- One call at a time, so a late answer cannot overtake another.
          strategy = { take = "concat" },
          services = { nextTicket = nextTicket },
          invariants = {
            numberedFromOne = function(s)
              if s.last ~= s.taken then return false, ("ticket %d after %d taken"):format(s.last, s.taken) end
            end,
          },
          handle = function(_, _, env)
            return env.services.nextTicket()
              :map(function(n) return { type = "took", n = n } end)
              :catchError(function() return mf.empty() end)
          end,
          reduce = function(s, m) s.taken, s.last = s.taken + 1, m.n; return s end,
        }
        """

    func testALuaServiceStartsFreshInEveryRun() throws {
        try write("plugins/tickets/init.lua", Self.tickets)
        // Service faults on (the default): every call goes through the explorer's wrapper.
        let result = try Moonflow.run(
            ["test", "--explore", "tickets", "--seed", "1", "--runs", "20", "--length", "10"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("1 passed, 0 failed"), result.stdout)
    }

    func testTheShrinkersRunsStartFreshSoThePrintedSpecFailsAsTheRunDid() throws {
        // A backend that runs out after three tickets: a fourth take fails the invariant. Shared
        // by the shrinker's runs, the backend would be empty after the first, and a shorter run
        // would seem to fail the same way.
        try write(
            "plugins/tickets/init.lua",
            Self.tickets.replacingOccurrences(
                of: "issued = issued + 1",
                with: "if issued == 3 then return mf.just(99) end\n  issued = issued + 1"))
        try write(
            "plugins/tickets/spec/explore_spec.lua",
            """
            local T = require "moonflow.test"
            it("finds the fourth take", function()
              local report = T.explore("tickets", { seed = 1, raise = false, quiet = true, faults = { fail = 0, late = 0.2 } })
              assert.is_table(report.failure, "no failure found")
              local sends = 0
              for _, step in ipairs(report.failure.steps) do if step.send then sends = sends + 1 end end
              assert.equal(4, sends, report.failure.text)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/tickets/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("1 passed, 0 failed"), result.stdout)
    }
}
