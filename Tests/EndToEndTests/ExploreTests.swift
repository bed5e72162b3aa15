import Foundation
import XCTest

/// `moonflow test --explore` and `T.explore`: random runs of a feature's declared actions,
/// checked after every step, a failure shrunk and printed as a spec, on the built binary.
final class ExploreTests: ScratchTestCase {
    /// A player whose `stop` while paused breaks it: three actions deep.
    static let player = """
        local mf = require "moonflow"
        return mf.feature {
          name = "player",
          initial = { mode = "stopped", position = 0, volume = 5 },
          state = { mode = { "enum", "stopped", "playing", "paused", "broken" }, position = "integer", volume = "integer" },
          actions = { play = {}, pause = {}, stop = {}, seek = { to = "integer" }, volume = { level = "integer?" } },
          mutations = { mode = { mode = "string" }, position = { at = "integer" }, volume = { level = "integer" }, never = {} },
          invariants = {
            neverBroken = function(s) return s.mode ~= "broken" end,
          },
          handle = function(action, state)
            if action.type == "play" then return { type = "mode", mode = "playing" }
            elseif action.type == "pause" then
              if state.mode == "playing" then return { type = "mode", mode = "paused" } end
            elseif action.type == "stop" then
              if state.mode == "paused" then return { type = "mode", mode = "broken" } end
              return { type = "mode", mode = "stopped" }
            elseif action.type == "seek" then return { type = "position", at = action.to }
            elseif action.type == "volume" then return mf.timer(100, { type = "volume", level = action.level or 5 })
            end
          end,
          reduce = function(state, m)
            if m.type == "mode" then state.mode = m.mode
            elseif m.type == "position" then state.position = m.at
            elseif m.type == "volume" then state.volume = m.level end
            return state
          end,
        }
        """

    private func failureBlock(_ stdout: String) -> String {
        stdout.components(separatedBy: "\nFAIL ").dropFirst().joined(separator: "\nFAIL ")
    }

    /// The spec lines of the shrunk run the failure printed, from `it(` to `end)`.
    private func printedSpec(_ stdout: String) throws -> String {
        let lines = stdout.components(separatedBy: "\n").map { $0.hasPrefix("  ") ? String($0.dropFirst(2)) : $0 }
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("it(") }, stdout)
        let end = try XCTUnwrap(lines[start...].firstIndex { $0 == "end)" }, stdout)
        return lines[start...end].joined(separator: "\n")
    }

    func testABugThreeActionsDeepIsFoundAndShrunkToThoseThree() throws {
        try write("plugins/player/init.lua", Self.player)
        let result = try Moonflow.run(["test", "--explore", "player", "--seed", "7"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout)
        let failure = failureBlock(result.stdout)
        XCTAssertTrue(failure.contains("seed 7, 100 runs × 50 steps: run "), failure)
        XCTAssertTrue(failure.contains("invariant 'neverBroken' does not hold"), failure)
        XCTAssertTrue(failure.contains("state = { mode = \"broken\", position = 0, volume = 5 }"), failure)
        let spec = try printedSpec(result.stdout)
        XCTAssertEqual(
            spec,
            """
            it("plugins/player: invariant neverBroken", function()
              local store = T.store("plugins/player", { exhaustive = false })
              store:send({ type = "play" })
              store:send({ type = "pause" })
              store:send({ type = "stop" })
              store:checkInvariants()  -- fails: invariant 'neverBroken' does not hold
            end)
            """)
        XCTAssertTrue(failure.contains("or run again with --seed 7"), failure)
        // The shrunk run as input for `moonflow run --record`, whose recording replays it.
        let inputs = failure.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            $0.hasPrefix("{\"at\":")
        }
        XCTAssertEqual(
            inputs,
            [
                #"{"at":0,"send":{"type":"play"}}"#, #"{"at":0,"send":{"type":"pause"}}"#,
                #"{"at":0,"send":{"type":"stop"}}"#,
            ])
        let recorded = try Moonflow.run(
            ["run", "plugins/player", "--clock", "virtual", "--record", "run.jsonl"], in: scratch,
            input: inputs.joined(separator: "\n") + "\n")
        // The run checks the invariant too: it names it and the step, and exits 1.
        XCTAssertEqual(recorded.status, 1, recorded.stdout + recorded.stderr)
        XCTAssertTrue(
            recorded.stdout.contains("✗ invariant neverBroken broken at step 3 after stop"), recorded.stdout)
        let recording = try String(contentsOf: scratch.appendingPathComponent("run.jsonl"), encoding: .utf8)
        XCTAssertTrue(recording.contains(#""state":{"mode":"broken","position":0,"volume":5}"#), recording)
        let replayed = try Moonflow.run(["replay", "run.jsonl"], in: scratch)
        XCTAssertEqual(replayed.status, 0, replayed.stdout)
        XCTAssertTrue(replayed.stdout.contains("identical (3 inputs"), replayed.stdout)
    }

    func testTheSameSeedDrawsTheSameRunsAndAnotherSeedIsPrinted() throws {
        try write("plugins/player/init.lua", Self.player)
        let first = try Moonflow.run(
            ["test", "--explore", "player", "--seed", "11", "--runs", "5", "--length", "30"], in: scratch)
        let again = try Moonflow.run(
            ["test", "--explore", "player", "--seed", "11", "--runs", "5", "--length", "30"], in: scratch)
        XCTAssertEqual(first.status, 1, first.stdout)
        XCTAssertEqual(failureBlock(first.stdout), failureBlock(again.stdout))
        let unseeded = try Moonflow.run(["test", "--explore", "player"], in: scratch)
        XCTAssertNotNil(
            unseeded.stdout.range(of: #"seed \d+, 100 runs × 50 steps"#, options: .regularExpression), unseeded.stdout)
    }

    func testThePrintedSpecReproducesTheFailureWhenPasted() throws {
        try write("plugins/player/init.lua", Self.player)
        let found = try Moonflow.run(["test", "--explore", "player", "--seed", "3"], in: scratch)
        let spec = try printedSpec(found.stdout)
        try write("plugins/player/spec/repro_spec.lua", "local T = require \"moonflow.test\"\n" + spec + "\n")
        let replayed = try Moonflow.run(["test", "plugins/player/spec"], in: scratch)
        XCTAssertEqual(replayed.status, 1, replayed.stdout)
        XCTAssertTrue(
            replayed.stdout.contains("repro_spec.lua:7: invariant 'neverBroken' does not hold"), replayed.stdout)
    }

    func testASpecExploresWithGeneratorsWeightsAndItsOwnInvariantsShrinkingValues() throws {
        try write("plugins/player/init.lua", Self.player)
        try write(
            "plugins/player/spec/explore_spec.lua",
            """
            local T = require "moonflow.test"
            it("keeps the position within the track", function()
              local report = T.explore("player", {
                seed = 5, raise = false,
                weights = { stop = 0 },                        -- the known bug is left out
                gen = { volume = { level = T.gen.integer { min = 1, max = 9 } } },
                invariants = { withinTrack = function(s) return s.position <= 1000, "past the end" end },
              })
              assert.is_table(report.failure)
              assert.equal("invariant withinTrack", report.failure.check)
              assert.equal(1, #report.failure.steps)
              assert.same({ send = { type = "seek", to = 1001 } }, report.failure.steps[1])
              assert.matches('store:send({ type = "seek", to = 1001 })', report.failure.spec, 1, true)
              assert.matches("store:checkInvariants(invariants)", report.failure.spec, 1, true)
            end)
            it("passes with the bug and the seeks left out, and says what it reached", function()
              local report = T.explore("player", { seed = 5, runs = 20, weights = { stop = 0, seek = 0 } })
              assert.is_nil(report.failure)
              assert.matches("state.mode 3/4", table.concat(report.reached, "; "), 1, true)
              local never = table.concat(report.never, ", ")
              assert.matches("action seek", never, 1, true)
              assert.matches("mutation never", never, 1, true)
              assert.matches('state.mode = "broken"', never, 1, true)
            end)
            it("draws from T.gen generators", function()
              local g = T.gen.integer { min = 1, max = 9 }
              assert.is_function(g.draw)
              local s = T.gen.oneOf { "a", "b" }
              assert.is_function(s.shrink)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/player/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout)
        XCTAssertTrue(
            result.stdout.contains("explore player: seed 5, 20 runs × 50 steps: every check held"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains(
                "never reached: action seek, action stop, mutation never, mutation position, state.mode = \"broken\""),
            result.stdout)
    }

    func testErrorsFailUnlessAllowedAndTimersInFlightAreChecked() throws {
        try write(
            "plugins/meter/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "meter",
              initial = { level = 0 },
              actions = { set = { level = "integer" }, watch = {} },
              mutations = { level = { level = "integer" } },
              handle = function(action)
                if action.type == "watch" then return mf.never() end
                return { type = "level", level = action.level }
              end,
              reduce = function(state, m)
                if m.level > 100 then error("level too high") end
                state.level = m.level
                return state
              end,
            }
            """)
        try write(
            "plugins/meter/spec/meter_spec.lua",
            """
            local T = require "moonflow.test"
            it("an error fails the run", function()
              local report = T.explore("meter", { seed = 1, raise = false, weights = { watch = 0 } })
              assert.equal("no error", report.failure.check)
              assert.matches("level too high", report.failure.message, 1, true)
              assert.same({ { send = { type = "set", level = 101 } } }, report.failure.steps)
            end)
            it("an allowed error does not", function()
              local report = T.explore("meter", { seed = 1, runs = 10, quiet = true, weights = { watch = 0 }, allowErrors = { set = "too high" } })
              assert.is_nil(report.failure)
            end)
            it("work left in flight after every timer fails, unless allowed", function()
              local report = T.explore("meter", { seed = 1, raise = false, allowErrors = true })
              assert.equal("nothing in flight at the end", report.failure.check)
              assert.same({ { send = { type = "watch" } } }, report.failure.steps)
              assert.matches("assert.same({}, store.inFlight)", report.failure.spec, 1, true)
              assert.is_nil(T.explore("meter", { seed = 1, runs = 5, quiet = true, allowErrors = true, allowInFlight = true }).failure)
            end)
            """)
        let result = try Moonflow.run(["test", "plugins/meter/spec"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout)
    }

    func testServicesFailAndAnswerLateAndTheSpecPrintsThoseAnswers() throws {
        try write(
            "plugins/feed/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "feed",
              initial = { items = 0 },
              actions = { load = {} },
              mutations = { loaded = { count = "integer" } },
              services = { fetch = function() return mf.timer(10, 3) end },
              handle = function(_, _, env)
                return env.services.fetch():map(function(n) return { type = "loaded", count = n } end)
              end,
              reduce = function(state, m) state.items = m.count return state end,
            }
            """)
        let result = try Moonflow.run(["test", "--explore", "feed", "--seed", "2"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout)
        let spec = try printedSpec(result.stdout)
        XCTAssertTrue(spec.contains(#"services = T.faults("plugins/feed", { ["#), spec)
        XCTAssertTrue(spec.contains(#"= "fail" })"#), spec)
        XCTAssertTrue(
            spec.contains("store:finish()  -- fails: an error after action load: the service 'fetch' failed"), spec)
        try write(
            "plugins/feed/spec/feed_spec.lua",
            "local T = require \"moonflow.test\"\n" + spec + "\n"
                + "it(\"passes with faults off\", function() T.explore(\"feed\", { seed = 2, faults = false }) end)\n")
        let pasted = try Moonflow.run(["test", "plugins/feed/spec"], in: scratch)
        XCTAssertTrue(pasted.stdout.contains("the service 'fetch' failed (call "), pasted.stdout)
        XCTAssertTrue(pasted.stdout.contains("1 passed, 1 failed"), pasted.stdout)
    }

    func testACompositeIsSkippedByTheCommandLineAndExploredWithActionsFromASpec() throws {
        try write(
            "plugins/leaf/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "leaf", initial = { n = 0 },
              actions = { bump = {} }, mutations = { bumped = {} },
              handle = function() return { type = "bumped" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        try write(
            "plugins/pair/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "pair",
              children = { left = "leaf", right = "leaf" },
              route = function(action) return action.side, { type = "bump" } end,
              combine = function(s) return { total = s.left.n + s.right.n } end,
              invariants = { small = function(s) return s.total < 3 end },
            }
            """)
        try write(
            "plugins/pair/spec/pair_spec.lua",
            """
            local T = require "moonflow.test"
            it("finds the third bump", function()
              local report = T.explore("pair", { seed = 1, raise = false, actions = { bump = { side = { "enum", "left", "right" } } } })
              assert.equal("invariant small", report.failure.check)
              assert.equal(3, #report.failure.steps)
            end)
            """)
        let cli = try Moonflow.run(["test", "--explore", "pair"], in: scratch)
        XCTAssertEqual(cli.status, 0, cli.stdout)
        XCTAssertTrue(cli.stdout.contains("explore plugins/pair: skipped: it declares no actions"), cli.stdout)
        let spec = try Moonflow.run(["test", "plugins/pair/spec"], in: scratch)
        XCTAssertEqual(spec.status, 0, spec.stdout)
    }

    func testInvariantsMustBeFunctionsAndShardsSplitExplorations() throws {
        try write(
            "plugins/player/init.lua",
            Self.player.replacingOccurrences(
                of: "neverBroken = function(s) return s.mode ~= \"broken\" end,", with: "neverBroken = true,"))
        let check = try Moonflow.run(["check", "plugins/player"], in: scratch)
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertTrue(
            (check.stdout + check.stderr).contains("invariants.neverBroken must be a function (got boolean)"),
            check.stdout + check.stderr)
        try write("plugins/player/init.lua", Self.player)
        try write(
            "plugins/other/init.lua",
            Self.player.replacingOccurrences(of: "name = \"player\"", with: "name = \"other\""))
        let one = try Moonflow.run(["test", "--explore", "--shard", "1/2", "--seed", "1"], in: scratch)
        let two = try Moonflow.run(["test", "--explore", "--shard", "2/2", "--seed", "1"], in: scratch)
        for plugin in ["plugins/player", "plugins/other"] {
            let shards = [one, two].filter { $0.stdout.contains("FAIL explore \(plugin)") }
            XCTAssertEqual(shards.count, 1, "\(plugin) is explored in one shard: \(one.stdout)\n\(two.stdout)")
        }
    }

    func testBadOptionsAreUsageErrors() throws {
        try write("plugins/player/init.lua", Self.player)
        let runs = try Moonflow.run(["test", "--explore", "--runs", "0"], in: scratch)
        XCTAssertEqual(runs.status, 2, runs.stderr)
        let notPlugin = try Moonflow.run(["test", "--explore", "nothing"], in: scratch)
        XCTAssertEqual(notPlugin.status, 2, notPlugin.stderr)
        XCTAssertTrue(notPlugin.stderr.contains("nothing is not a plugin"), notPlugin.stderr)
    }
}
