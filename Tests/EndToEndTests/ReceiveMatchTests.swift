import Foundation
import XCTest

/// `store:receive("loaded")` and `store:receive("loaded", { page = 1 })`: a mutation received
/// by its type, or by the fields given (TCA's `receive(\.loaded)`), and the explorer printing
/// its receives by type; on the built binary.
final class ReceiveMatchTests: ScratchTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try write(
            "plugins/pager/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "pager",
              initial = { loaded = 0, broken = false },
              actions = { load = {}, clear = {} },
              mutations = { loaded = { page = "integer", note = "string" }, cleared = {} },
              invariants = { neverBroken = function(s) return not s.broken end },
              handle = function(action)
                if action.type == "load" then
                  return mf.timer(100, { type = "loaded", page = 1, note = "a payload no one asserts" })
                end
                return { type = "cleared" }
              end,
              reduce = function(state, m)
                if m.type == "loaded" then state.loaded = state.loaded + 1
                elseif state.loaded > 0 then state.broken = true end
                return state
              end,
            }
            """)
    }

    func testAMutationIsReceivedByTypeOrByTheFieldsGiven() throws {
        try write(
            "plugins/pager/spec/pager_spec.lua",
            """
            local T = require "moonflow.test"
            it("by type, then by a field", function()
              local store = T.store("pager")
              store:send({ type = "load" })
              store:advance(100)
              store:receive("loaded", function(s) s.loaded = 1 end)
              store:send({ type = "load" })
              store:advance(100)
              store:receive("loaded", { page = 1 }, function(s) s.loaded = 2 end)
              store:finish()
            end)
            it("a field that differs", function()
              local store = T.store("pager")
              store:send({ type = "load" })
              store:advance(100)
              store:receive("loaded", { page = 2 })
            end)
            it("another type", function()
              local store = T.store("pager", { exhaustive = false })
              store:send({ type = "load" })
              store:advance(100)
              store:receive("cleared")
            end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("✓ by type, then by a field"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains(
                """
                pager_spec.lua:16: receive(loaded): the next mutation does not match in the fields given (expected -, received +):
                """), result.stdout)
        XCTAssertTrue(result.stdout.contains("- mutation.page = 2\n    + mutation.page = 1"), result.stdout)
        XCTAssertFalse(result.stdout.contains("mutation.note"), "fields not given are not compared: \(result.stdout)")
        XCTAssertTrue(
            result.stdout.contains(
                "pager_spec.lua:22: receive(cleared): no received mutation matches cleared (its fields not compared); received:"
            ), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("1 passed, 2 failed\n"), result.stdout)
    }

    /// The explorer's spec to paste receives by type (its store is not exhaustive), and the
    /// pasted spec fails where the exploration did.
    func testTheExplorersSpecReceivesByType() throws {
        let found = try Moonflow.run(["test", "--explore", "pager", "--seed", "1"], in: scratch)
        XCTAssertEqual(found.status, 1, found.stdout)
        let lines = found.stdout.components(separatedBy: "\n").map { $0.hasPrefix("  ") ? String($0.dropFirst(2)) : $0 }
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("it(") }, found.stdout)
        let end = try XCTUnwrap(lines[start...].firstIndex { $0 == "end)" }, found.stdout)
        let spec = lines[start...end].joined(separator: "\n")
        XCTAssertTrue(spec.contains(#"  store:receive("loaded")"#), spec)
        XCTAssertFalse(spec.contains("a payload no one asserts"), spec)
        try write("plugins/pager/spec/repro_spec.lua", "local T = require \"moonflow.test\"\n" + spec + "\n")
        let replayed = try Moonflow.run(["test", "plugins/pager/spec"], in: scratch)
        XCTAssertEqual(replayed.status, 1, replayed.stdout)
        XCTAssertTrue(replayed.stdout.contains("invariant 'neverBroken' does not hold"), replayed.stdout)
        XCTAssertFalse(replayed.stdout.contains("receive("), "the receive matched: \(replayed.stdout)")
    }
}
