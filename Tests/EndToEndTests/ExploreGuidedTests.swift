import Foundation
import XCTest

/// Guided exploration (guide.lua): runs that reach something new are kept and built on, values
/// for actions are drawn from the state; `guided = false` draws every run uniformly. On the
/// built binary, with fixed seeds.
final class ExploreGuidedTests: ScratchTestCase {
    /// A wizard whose bug needs seven `next`s in a row: any edit sends it back to the first step.
    static let wizard = """
        local mf = require "moonflow"
        -- A sign-up wizard: `next` moves one step on; any edit sends it back to the first step.
        -- Its bug: the eighth step confirms without a price.
        return mf.feature {
          name = "wizard",
          initial = { step = "s1", confirmed = false, price = 0 },
          state = {
            step = { "enum", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8" },
            confirmed = "boolean", name = "string?", age = "integer?", price = "integer?",
          },
          actions = { next = {}, cancel = {}, rename = { name = "string" }, setAge = { age = "integer" }, help = {} },
          mutations = { moved = { to = "string" }, named = { name = "string" }, aged = { age = "integer" } },
          invariants = {
            confirmedHasPrice = function(s) return not s.confirmed or s.price ~= nil end,
          },
          handle = function(action, state)
            if action.type == "next" then
              local k = tonumber(state.step:sub(2))
              if k < 8 then return { type = "moved", to = "s" .. (k + 1) } end
            elseif action.type == "cancel" then return { type = "moved", to = "s1" }
            elseif action.type == "rename" then return { type = "named", name = action.name }
            elseif action.type == "setAge" then return { type = "aged", age = action.age }
            end
          end,
          reduce = function(state, m)
            if m.type == "moved" then
              state.step = m.to
              if m.to == "s8" then state.confirmed, state.price = true, nil end
            elseif m.type == "named" then state.name, state.step = m.name, "s1"
            elseif m.type == "aged" then state.age, state.step = m.age, "s1" end
            return state
          end,
        }
        """

    /// A shelf whose bug needs `remove` to name an id the feature handed out.
    static let shelf = """
        local mf = require "moonflow"
        -- A shelf of items named by ids the feature hands out; its bug: removing an item that is
        -- there forgets to lower the count.
        return mf.feature {
          name = "shelf",
          initial = { items = {}, count = 0, next = 1 },
          state = { items = { "list", of = { "record", id = "string", label = "string" } }, count = "integer", next = "integer" },
          actions = { add = { label = "string" }, remove = { id = "string" } },
          mutations = { added = { id = "string", label = "string" }, removed = { id = "string" } },
          invariants = {
            countMatches = function(s) return s.count == #s.items, ("count %d, %d items"):format(s.count, #s.items) end,
          },
          handle = function(action, state)
            if action.type == "add" then return { type = "added", id = "item" .. state.next, label = action.label } end
            for _, item in ipairs(state.items) do
              if item.id == action.id then return { type = "removed", id = action.id } end
            end
          end,
          reduce = function(state, m)
            if m.type == "added" then
              state.items[#state.items + 1] = { id = m.id, label = m.label }
              state.count, state.next = state.count + 1, state.next + 1
            elseif m.type == "removed" then
              for i, item in ipairs(state.items) do
                if item.id == m.id then table.remove(state.items, i); break end
              end
            end
            return state
          end,
        }
        """

    func testALongSpecificPathIsFoundGuidedAndNotUniformly() throws {
        try write("plugins/wizard/init.lua", Self.wizard)
        try write(
            "plugins/wizard/spec/path_spec.lua",
            """
            local T = require "moonflow.test"
            it("guided", function()
              local report = T.explore("wizard", { seed = 1, raise = false, quiet = true })
              assert.truthy(report.failure, "guided exploration finds the eighth step")
              assert.equal("invariant confirmedHasPrice", report.failure.check)
              print(("guided found it in run %d, %d runs reached something new"):format(report.failure.run, report.newRuns))
            end)
            it("uniform", function()
              local report = T.explore("wizard", { seed = 1, guided = false, raise = false, quiet = true })
              assert.falsy(report.failure, "uniform runs do not reach the eighth step with this seed")
              assert.equal(0, report.corpus)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/wizard/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("2 passed, 0 failed"), result.stdout)
    }

    func testTheSameSeedDrawsTheSameGuidedRuns() throws {
        try write("plugins/wizard/init.lua", Self.wizard)
        try write(
            "plugins/wizard/spec/again_spec.lua",
            """
            local T = require "moonflow.test"
            it("twice", function()
              local a = T.explore("wizard", { seed = 4, raise = false, quiet = true, shrink = false })
              local b = T.explore("wizard", { seed = 4, raise = false, quiet = true, shrink = false })
              assert.truthy(a.failure)
              assert.equal(a.failure.run, b.failure.run)
              assert.same(a.failure.steps, b.failure.steps)
              assert.equal(a.newRuns, b.newRuns)
              assert.equal(a.corpus, b.corpus)
              print("run " .. a.failure.run .. ", " .. #a.failure.steps .. " steps")
            end)
            """)
        let first = try Moonflow.run(["test", "plugins/wizard/spec"], in: scratch)
        let second = try Moonflow.run(["test", "plugins/wizard/spec"], in: scratch)
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        // Across processes too (Lua's string hashes are seeded per state): the same run, the same steps.
        let line = { (out: String) in
            out.components(separatedBy: "\n").first { $0.contains("steps") && $0.contains("run ") }
        }
        XCTAssertNotNil(line(first.stdout), first.stdout)
        XCTAssertEqual(line(first.stdout), line(second.stdout))
    }

    func testThePassingReportSaysHowManyRunsReachedSomethingNew() throws {
        try write(
            "plugins/wizard/init.lua",
            Self.wizard.replacingOccurrences(of: "state.price = true, nil", with: "state.price = true, 1"))
        let guided = try Moonflow.run(["test", "--explore", "wizard", "--seed", "2", "--runs", "30"], in: scratch)
        XCTAssertEqual(guided.status, 0, guided.stdout + guided.stderr)
        let line = try XCTUnwrap(
            guided.stdout.components(separatedBy: "\n").first { $0.contains("runs reached something new, corpus of") },
            guided.stdout)
        // Guided: every run that reached something new is kept.
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        XCTAssertEqual(numbers.count, 2, line)
        XCTAssertGreaterThan(numbers[0], 0, line)
        XCTAssertEqual(numbers[0], numbers[1], line)
        try write(
            "plugins/wizard/spec/report_spec.lua",
            """
            local T = require "moonflow.test"
            it("counts without keeping", function()
              local report = T.explore("wizard", { seed = 2, runs = 30, guided = false })
              assert.is_true(report.newRuns > 0)
              assert.equal(0, report.corpus)
            end)
            """)
        let uniform = try Moonflow.run(["test", "plugins/wizard/spec"], in: scratch)
        XCTAssertEqual(uniform.status, 0, uniform.stdout + uniform.stderr)
        XCTAssertTrue(uniform.stdout.contains("corpus of 0 (guided = false: every run uniform)"), uniform.stdout)
    }

    func testALineOfThePluginRunForTheFirstTimeCountsAsNew() throws {
        try write(
            "plugins/lines/init.lua",
            """
            local mf = require "moonflow"
            local zeros = 0
            return mf.feature {
              name = "lines", initial = { n = 0 }, state = { n = "integer" },
              actions = { set = { n = "integer" } }, mutations = { set = {} },
              handle = function(action)
                if action.n == 0 then
                  zeros = zeros + 1
                end
                return { type = "set" }
              end,
              reduce = function(state) return state end,
            }
            """)
        try write(
            "plugins/lines/spec/lines_spec.lua",
            """
            local T = require "moonflow.test"
            it("counts the line only a zero runs", function()
              local ones = T.explore("lines", { seed = 1, runs = 5, quiet = true, gen = { set = { n = T.gen.constant(1) } } })
              local zeros = T.explore("lines", { seed = 1, runs = 5, quiet = true, gen = { set = { n = T.gen.constant(0) } } })
              assert.equal(ones.lines + 1, zeros.lines)
              -- Only the first run reached anything: every later run runs the same lines.
              assert.equal(1, zeros.newRuns)
              assert.is_nil(T.explore("lines", { seed = 1, runs = 5, quiet = true, guided = false }).lines)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/lines/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("1 passed, 0 failed"), result.stdout)
    }

    func testAnActionNamesAnIdTheStateHolds() throws {
        try write("plugins/shelf/init.lua", Self.shelf)
        try write(
            "plugins/shelf/spec/ids_spec.lua",
            """
            local T = require "moonflow.test"
            it("guided", function()
              local report = T.explore("shelf", { seed = 1, raise = false, quiet = true })
              assert.truthy(report.failure, "a remove names an item that is there")
              local last = report.failure.steps[#report.failure.steps].send
              assert.equal("remove", last.type)
              assert.truthy(last.id:match("^item%d+$"), last.id)
            end)
            it("uniform", function()
              local report = T.explore("shelf", { seed = 1, guided = false, raise = false, quiet = true })
              assert.falsy(report.failure, "a drawn string never names an item")
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/shelf/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("2 passed, 0 failed"), result.stdout)
    }

    /// Free shipping from 500 units, but the code says `> 500`: a uniform draw (edge cases and
    /// -10 to 100) never orders exactly 500.
    static let pallet = """
        local mf = require "moonflow"
        return mf.feature {
          name = "pallet",
          initial = { units = 0, shipping = 0 },
          state = { units = "integer", shipping = "integer" },
          actions = { order = { units = "integer" }, clear = {} },
          mutations = { ordered = { units = "integer", shipping = "integer" }, cleared = {} },
          invariants = {
            freeFromFiveHundred = function(s) return s.units < 500 or s.shipping == 0, s.units end,
          },
          handle = function(action)
            if action.type == "clear" then return { type = "cleared" } end
            if action.units < 0 then return nil end
            return { type = "ordered", units = action.units, shipping = action.units > 500 and 0 or 900 }
          end,
          reduce = function(state, m)
            if m.type == "cleared" then state.units, state.shipping = 0, 0
            else state.units, state.shipping = m.units, m.shipping end
            return state
          end,
        }
        """

    /// Before, guided runs drew whole numbers as uniform ones do and missed 500 as they did.
    func testANumberTheCodeComparesWithIsDrawn() throws {
        try write("plugins/pallet/init.lua", Self.pallet)
        try write(
            "plugins/pallet/spec/dictionary_spec.lua",
            """
            local T = require "moonflow.test"
            it("guided", function()
              local report = T.explore("pallet", { seed = 1, raise = false, quiet = true })
              assert.truthy(report.failure, "guided exploration orders the 500 the code compares with")
              assert.equal("invariant freeFromFiveHundred", report.failure.check)
              assert.equal(500, report.failure.steps[#report.failure.steps].send.units)
            end)
            it("uniform", function()
              local report = T.explore("pallet", { seed = 1, guided = false, raise = false, quiet = true })
              assert.falsy(report.failure, "a uniform draw never orders exactly 500")
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/pallet/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("2 passed, 0 failed"), result.stdout)
    }

    /// The seeded-bug corpus's payment (bench/explore): charged twice only when the charge,
    /// made after six specific steps, answers 3 s late. A kept run that reached the review
    /// gets a fault planted at one of its calls; before, a guided run kept its parent's calls
    /// answering as they had, and seed 1 missed it (as uniform runs do).
    func testAFaultIsPlantedAtACallAKeptRunMade() throws {
        let payment = Moonflow.root.appendingPathComponent("bench/explore/payment").path
        try write(
            "spec/fault_spec.lua",
            """
            local T = require "moonflow.test"
            it("guided", function()
              local report = T.explore(\(String(reflecting: payment)), { seed = 1, raise = false, quiet = true })
              assert.truthy(report.failure, "guided exploration charges twice")
              assert.equal("invariant chargedOnce", report.failure.check)
            end)
            it("uniform", function()
              local report = T.explore(\(String(reflecting: payment)), { seed = 1, guided = false, raise = false, quiet = true })
              assert.falsy(report.failure, "uniform runs miss it with this seed")
            end)
            """)
        let result = try Moonflow.run(["test", "spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("2 passed, 0 failed"), result.stdout)
    }

    /// The seeded-bug corpus's bundle (bench/explore): a member's quantity of exactly 7 priced
    /// while the quote service fails. A guided run gives a quantity a number of the code and
    /// fails the call that step makes, at once; before, the 7 and the failure had to be drawn
    /// together by chance, and seed 2 missed it (as uniform runs do).
    func testANumberOfTheCodeMeetsAFaultAtItsOwnCall() throws {
        let bundle = Moonflow.root.appendingPathComponent("bench/explore/bundle").path
        try write(
            "spec/code_fault_spec.lua",
            """
            local T = require "moonflow.test"
            it("guided", function()
              local report = T.explore(\(String(reflecting: bundle)), { seed = 2, raise = false, quiet = true })
              assert.truthy(report.failure, "guided exploration prices a member's 7 while the service fails")
              assert.equal("invariant pricedByTier", report.failure.check)
              local last = report.failure.steps[#report.failure.steps].send
              assert.equal("qty", last.type)
              assert.equal(7, last.n)
              local failed = false
              for _, f in pairs(report.failure.plan) do failed = failed or f == "fail" end
              assert.is_true(failed, "the shrunk run keeps a failing call")
            end)
            it("uniform", function()
              local report = T.explore(\(String(reflecting: bundle)), { seed = 2, guided = false, raise = false, quiet = true })
              assert.falsy(report.failure, "uniform runs miss it with this seed")
            end)
            """)
        let result = try Moonflow.run(["test", "spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("2 passed, 0 failed"), result.stdout)
    }

    /// `moonflow test --no-guided`: every exploration of the run uniform, as `guided = false`,
    /// over a spec's own `guided = true` too.
    func testNoGuidedOnTheCommandLineDrawsEveryRunUniformly() throws {
        try write("plugins/wizard/init.lua", Self.wizard)
        let guided = try Moonflow.run(["test", "--explore", "wizard", "--seed", "1"], in: scratch)
        XCTAssertEqual(guided.status, 1, guided.stdout + guided.stderr)
        XCTAssertTrue(guided.stdout.contains("failed: invariant confirmedHasPrice"), guided.stdout)
        let uniform = try Moonflow.run(["test", "--explore", "wizard", "--seed", "1", "--no-guided"], in: scratch)
        XCTAssertEqual(uniform.status, 0, uniform.stdout + uniform.stderr)
        XCTAssertTrue(uniform.stdout.contains("(guided = false: every run uniform)"), uniform.stdout)
        try write(
            "plugins/wizard/spec/uniform_spec.lua",
            """
            local T = require "moonflow.test"
            it("uniform", function()
              local report = T.explore("wizard", { seed = 1, guided = true, raise = false, quiet = true })
              assert.equal(false, report.guided)
              assert.equal(0, report.corpus)
            end)
            """)
        let spec = try Moonflow.run(["test", "plugins/wizard/spec", "--no-guided"], in: scratch)
        XCTAssertEqual(spec.status, 0, spec.stdout + spec.stderr)
        XCTAssertTrue(spec.stdout.contains("1 passed, 0 failed"), spec.stdout)
    }

    func testGuidedIsABooleanOptionThatDefaultsToTrue() throws {
        try write("plugins/player/init.lua", ExploreTests.player)
        try write(
            "plugins/player/spec/guided_spec.lua",
            """
            local T = require "moonflow.test"
            it("takes guided = false", function()
              local report = T.explore("player", { guided = false, runs = 3, length = 2, seed = 1, quiet = true, raise = false })
              assert.equal(false, report.guided)
            end)
            it("is guided by default", function()
              local report = T.explore("player", { runs = 3, length = 2, seed = 1, quiet = true, raise = false })
              assert.equal(true, report.guided)
            end)
            it("refuses a guided that is not a boolean", function()
              T.explore("player", { guided = "yes", runs = 1, length = 1, seed = 1 })
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/player/spec"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("✓ takes guided = false"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✓ is guided by default"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✗ refuses a guided that is not a boolean: "), result.stdout)
        XCTAssertTrue(result.stdout.contains("T.explore: opts.guided must be a boolean"), result.stdout)
        XCTAssertTrue(result.stdout.contains("(got string)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("2 passed, 1 failed"), result.stdout)
    }
}
