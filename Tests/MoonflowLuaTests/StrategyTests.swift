import LuaKit
import MoonflowLua
import XCTest

/// `strategy = { action = "latest" | "concat" | "exhaust" }`: how the streams of one action
/// type combine (merge when absent); each action type is independent of the others.
final class StrategyTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "strat",
          initial = {},
          actions = { m = { id = "string" }, l = { id = "string" }, c = { id = "string" }, x = { id = "string" } },
          mutations = { got = { text = "string" } },
          strategy = { l = "latest", c = "concat", x = "exhaust" },
          handle = function(a)
            return mf.concat(mf.timer(100, { type = "got", text = a.id .. "1" }),
                             mf.timer(100, { type = "got", text = a.id .. "2" }))
          end,
          reduce = function(state, m) return state end,
        }
        """

    /// Sends `first` at 0 and `second` at 50; returns the reduced texts with their times.
    private func run(_ first: LuaValue, _ second: LuaValue) throws -> [String] {
        let h = try Harness(["strat/init.lua": Self.plugin])
        try h.load("strat")
        try h.send(first)
        try h.send(second, at: 50)
        h.advance(to: 1000)
        return h.log.mutations("text")
    }

    func testMergeIsTheDefault() throws {
        XCTAssertEqual(
            try run(["type": "m", "id": "a"], ["type": "m", "id": "b"]), ["100:a1", "150:b1", "200:a2", "250:b2"])
    }

    func testLatestCancelsTheEarlierStreamOfTheSameType() throws {
        XCTAssertEqual(
            try run(["type": "l", "id": "a"], ["type": "l", "id": "b"]), ["150:b1", "250:b2"],
            "b at 50 cancels a before a1 is due")
    }

    func testConcatQueuesTheLaterStream() throws {
        XCTAssertEqual(
            try run(["type": "c", "id": "a"], ["type": "c", "id": "b"]), ["100:a1", "200:a2", "300:b1", "400:b2"])
    }

    func testExhaustDropsTheLaterActionWhileOneRuns() throws {
        XCTAssertEqual(try run(["type": "x", "id": "a"], ["type": "x", "id": "b"]), ["100:a1", "200:a2"])
    }

    func testStrategiesApplyPerActionType() throws {
        XCTAssertEqual(
            try run(["type": "l", "id": "a"], ["type": "m", "id": "b"]), ["100:a1", "150:b1", "200:a2", "250:b2"],
            "a merge action does not cancel a latest one")
        XCTAssertEqual(
            try run(["type": "x", "id": "a"], ["type": "c", "id": "b"]), ["100:a1", "150:b1", "200:a2", "250:b2"])
    }
}
