import Foundation
import XCTest

/// Every effect visible in `moonflow run`: an internal effect and the repository calls its
/// handler makes are events under the step that caused them, and a declared invariant that
/// breaks is an event naming it and its step, in jsonl and pretty output alike.
final class EffectEventsTests: ScratchTestCase {
    private func copyPlugin(_ name: String) throws {
        try FileManager.default.createDirectory(
            at: scratch.appendingPathComponent("plugins"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Moonflow.root.appendingPathComponent("plugins/\(name)"),
            to: scratch.appendingPathComponent("plugins/\(name)"))
    }

    /// `saveDraft` → `drafts:put`: before, the jsonl run showed the `line` mutation and its
    /// state, and nothing of the draft being saved.
    func testAnInternalEffectAndTheCallItsHandlerMakesFollowTheirStep() throws {
        try copyPlugin("checkout")
        let result = try runJSONL(
            "checkout", [#"{"type":"add","sku":"tea"}"#, #"{"type":"load"}"#], ["--db", ":memory:"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let kinds = jsonlEvents(result.stdout).map { event -> String in
            let kind = event["event"] as? String ?? "?"
            switch kind {
            case "internal": return "internal " + ((event["effect"] as? [String: Any])?["type"] as? String ?? "?")
            case "call": return "call \(event["service"] as? String ?? "?") #\(event["call"] as? Int ?? 0)"
            default: return kind
            }
        }
        XCTAssertEqual(
            kinds,
            [
                "state",  // the first
                "action", "mutation", "state", "internal saveDraft", "call drafts:put #1",  // add
                "action", "call drafts:getAll #1", "mutation", "state",  // load: its answer restores the draft
            ],
            result.stdout)

        let pretty = try Moonflow.run(
            ["run", "plugins/checkout", "--actions", "in.jsonl", "--clock", "virtual", "--db", ":memory:"],
            in: scratch)
        XCTAssertEqual(pretty.status, 0, pretty.stderr)
        let lines = pretty.stdout.split(separator: "\n").map(String.init)
        let effect = try XCTUnwrap(lines.firstIndex { $0.hasSuffix("    ⇢ internal effect saveDraft") }, pretty.stdout)
        XCTAssertEqual(lines[effect + 1], "     0 ms      ↗ call drafts:put #1", pretty.stdout)
    }

    private let guarded = """
        local mf = require "moonflow"
        return mf.feature {
          name = "guarded",
          initial = { n = 0 },
          state = { n = "integer" },
          actions = { inc = {}, dec = {} },
          mutations = { add = { by = "integer" } },
          invariants = {
            notNegative = function(s) if s.n < 0 then return false, "n is " .. s.n end end,
            small = function(s) return s.n < 100 end,
          },
          handle = function(action) return { type = "add", by = action.type == "inc" and 1 or -1 } end,
          reduce = function(s, m) s.n = s.n + m.by return s end,
        }
        """

    /// Before, only the explorer checked invariants: a run went from -1 to -2 saying nothing.
    /// Now each break is one event (not one per state while it stays broken), and the run
    /// goes on to its end, exiting 1.
    func testABrokenInvariantIsAnEventNamingItAndItsStepAndTheRunGoesOn() throws {
        try write("plugins/guarded/init.lua", guarded)
        let actions = ["dec", "dec", "inc", "inc", "dec"].map { #"{"type":"\#($0)"}"# }
        let result = try runJSONL("guarded", actions)
        XCTAssertEqual(result.status, 1, "a broken invariant fails the run: \(result.stderr)")
        let broken = jsonlEvents(result.stdout).filter { $0["event"] as? String == "invariant" }
        XCTAssertEqual(broken.map { $0["seq"] as? Int }, [1, 5], result.stdout)
        XCTAssertEqual(broken.map { $0["invariant"] as? String }, ["notNegative", "notNegative"])
        XCTAssertEqual(broken.first?["reason"] as? String, "n is -1")
        XCTAssertEqual((broken.first?["action"] as? [String: Any])?["type"] as? String, "dec")
        XCTAssertEqual(jsonlLastState(result.stdout)?["n"] as? Int, -1, "the run went on to its last action")

        let pretty = try Moonflow.run(
            ["run", "plugins/guarded", "--actions", "in.jsonl", "--clock", "virtual"], in: scratch)
        XCTAssertEqual(pretty.status, 1)
        XCTAssertTrue(
            pretty.stdout.contains("     0 ms    ✗ invariant notNegative broken at step 1 after dec: n is -1"),
            pretty.stdout)
    }

    /// Two counters composed, whose composite keeps them within one of each other.
    private let pair = """
        local mf = require "moonflow"
        local function counter(name)
          return mf.feature {
            name = name,
            initial = { n = 0 },
            actions = { inc = {} },
            mutations = { add = {} },
            handle = function() return { type = "add" } end,
            reduce = function(s) s.n = s.n + 1 return s end,
          }
        end
        return mf.compose {
          name = "pair",
          children = { left = counter("left"), right = counter("right") },
          actions = { left = {}, right = {} },
          invariants = {
            balanced = function(s)
              if math.abs(s.left - s.right) > 1 then return false, ("%d against %d"):format(s.left, s.right) end
            end,
          },
          route = function(action) return action.type, { type = "inc" } end,
          combine = function(s) return { left = s.left.n, right = s.right.n } end,
        }
        """

    /// Before, a composite's own invariants went unchecked in a run: `pair` reached 2 against
    /// 0 and exited 0.
    func testACompositesOwnInvariantIsCheckedOverItsCombinedState() throws {
        try write("plugins/pair/init.lua", pair)
        let actions = ["left", "left", "right", "right"].map { #"{"type":"\#($0)"}"# }
        let result = try runJSONL("pair", actions)
        XCTAssertEqual(result.status, 1, "a broken invariant fails the run: \(result.stderr)")
        let broken = jsonlEvents(result.stdout).filter { $0["event"] as? String == "invariant" }
        XCTAssertEqual(broken.map { $0["invariant"] as? String }, ["balanced"], result.stdout)
        XCTAssertEqual(broken.first?["reason"] as? String, "2 against 0")
        // The action behind the state, as the child that changed got it (`left` routed as `inc`).
        XCTAssertEqual((broken.first?["action"] as? [String: Any])?["type"] as? String, "inc")
        XCTAssertEqual(broken.first?["seq"] as? Int, 2, result.stdout)
        XCTAssertEqual(jsonlLastState(result.stdout)?["right"] as? Int, 2, "the run went on to its last action")
    }

    /// A recording keeps the new events and a replay compares them; one made before they were
    /// events (no `effects` in its header) still replays identical.
    func testRecordingsKeepTheNewEventsAndOlderOnesStillReplay() throws {
        try copyPlugin("checkout")
        try write("in.jsonl", #"{"type":"add","sku":"tea"}"# + "\n")
        let recorded = try Moonflow.run(
            [
                "run", "plugins/checkout", "--actions", "in.jsonl", "--clock", "virtual", "--db", ":memory:",
                "--format", "jsonl", "--record", "new.jsonl",
            ], in: scratch)
        XCTAssertEqual(recorded.status, 0, recorded.stderr)
        let session = try String(contentsOf: scratch.appendingPathComponent("new.jsonl"), encoding: .utf8)
        XCTAssertTrue(session.contains(#"{"event":"call","t":0,"service":"drafts:put","call":1}"#), session)
        let replay = try Moonflow.run(["replay", "new.jsonl"], in: scratch)
        XCTAssertEqual(replay.stdout, "replay new.jsonl: identical (1 inputs, 2 states)\n", replay.stderr)

        let older = session.split(separator: "\n").filter {
            !$0.contains(#""event":"internal""#) && !$0.contains(#""event":"call""#)
        }.map { $0.replacingOccurrences(of: #","effects":true"#, with: "") }
        try write("old.jsonl", older.joined(separator: "\n") + "\n")
        let old = try Moonflow.run(["replay", "old.jsonl"], in: scratch)
        XCTAssertEqual(old.stdout, "replay old.jsonl: identical (1 inputs, 2 states)\n", old.stderr)
    }
}
