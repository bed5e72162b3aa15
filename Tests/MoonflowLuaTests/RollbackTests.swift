import LuaKit
import MoonflowLua
import XCTest

/// A reducer that fails in any way leaves the state exactly as it was before that mutation:
/// the snapshot, and the Lua table the next `handle` and `reduce` see.
final class RollbackTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        local function dump(v)
          if type(v) ~= "table" then return tostring(v) end
          local keys = {}
          for k in pairs(v) do keys[#keys + 1] = tostring(k) end
          table.sort(keys)
          local parts = {}
          for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. dump(v[k] == nil and v[tonumber(k)] or v[k]) end
          return "{" .. table.concat(parts, ",") .. "}"
        end
        local fail = {
          error = function(state) state.count = 99; state.items[2] = "x"; error("reducer broke") end,
          time = function(state) state.count = 99; state.items[2] = "x"; while true do end end,
          memory = function(state)
            state.count = 99
            state.junk = {}
            for i = 1, math.maxinteger do state.junk[i] = string.rep("x", 100) .. i end
          end,
          ["function"] = function(state) state.count = 99; state.cb = function() end; return state end,
          cycle = function(state) state.count = 99; state.self = state; return state end,
          nested = function(state) state.items[1] = { owner = print }; return state end,
          replaced = function(state) return { count = 99, items = {}, cb = print } end,
          nothing = function(state) state.count = 99 end,
          badEffect = function(state) state.count = 99; return state, { kind = "no type" } end,
          nan = function(s) s.count = 99; s.x = 0/0; return s end, boolKey = function(s) s.count = 99; s[true] = 1; return s end, metatable = function(s) s.count = 99; s.view = setmetatable({}, { __index = s }); return s end,
        }
        return mf.feature {
          name = "roll",
          initial = { count = 0, items = { "a" } },
          actions = { fail = { kind = "string" }, bump = {}, peek = {} },
          mutations = { fail = { kind = "string" }, bump = {}, inspect = { handle = "string" } },
          handle = function(action, state)
            if action.type == "peek" then return { type = "inspect", handle = dump(state) } end
            return action
          end,
          reduce = function(state, m)
            if m.type == "fail" then return fail[m.kind](state) end
            if m.type == "inspect" then return state, { type = "dump", handle = m.handle, reduce = dump(state) } end
            state.count = state.count + 1
            state.items[#state.items + 1] = "b" .. state.count
            return state
          end,
        }
        """

    /// Where `reduce` is defined in the plugin above: errors with no line of their own name it.
    static let reduceLine = "roll/init.lua:36"

    /// Bumps once, fails with `kind`, then checks the state, what Lua sees, and that the loop goes on.
    @discardableResult
    private func assertRollsBack(
        _ kind: String, timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512,
        line: UInt = #line
    ) throws -> (message: String, location: String?) {
        let h = try Harness(["roll/init.lua": Self.plugin], timeLimitMs: timeLimitMs, memoryLimitMB: memoryLimitMB)
        try h.load("roll")
        try h.send(["type": "bump"])
        let before: LuaValue = ["count": 1, "items": ["a", "b1"]]
        XCTAssertEqual(h.state, before, line: line)
        h.clearLog()
        try h.send(["type": "fail", "kind": .string(LuaString(kind))])
        XCTAssertEqual(h.log.errors.count, 1, "\(h.log.lines)", line: line)
        XCTAssertEqual(h.log.lines.filter { $0.hasPrefix("0 mutation") || $0.hasPrefix("0 state") }, [], line: line)
        XCTAssertEqual(h.state, before, "the snapshot", line: line)
        // The table handle and reduce see is the one from before the failed mutation.
        try h.send(["type": "peek"])
        XCTAssertEqual(
            h.log.lines.last,
            #"0 effect {"handle":"{count=1,items={1=a,2=b1}}","reduce":"{count=1,items={1=a,2=b1}}","type":"dump"}"#,
            line: line)
        try h.send(["type": "bump"])
        XCTAssertEqual(h.state, ["count": 2, "items": ["a", "b1", "b2"]], line: line)
        let error = h.log.errors.first
        return (error?.message ?? "", error?.location)
    }

    func testRaisedError() throws {
        let (message, location) = try assertRollsBack("error")
        XCTAssertTrue(
            message.hasSuffix("roll/init.lua:12: reducer broke")
                || message.contains("roll/init.lua:12: reducer broke\n"), message)
        XCTAssertTrue(location?.hasSuffix("roll/init.lua:12") == true, "\(location ?? "nil")")
        XCTAssertTrue(message.contains("stack traceback:"), "errors carry a Lua traceback: \(message)")
    }

    func testTimeLimit() throws {
        let (message, location) = try assertRollsBack("time", timeLimitMs: 50)
        XCTAssertTrue(message.hasPrefix("time limit of 50 ms exceeded"), message)
        XCTAssertTrue(location?.hasSuffix("roll/init.lua:13") == true, "\(location ?? "nil")")
    }

    func testMemoryLimit() throws {
        // No time limit: under a sanitizer on a busy machine filling 16 MB can take longer than one.
        let (message, location) = try assertRollsBack("memory", timeLimitMs: nil, memoryLimitMB: 16)
        XCTAssertTrue(message.hasPrefix("not enough memory: the script went over its 16 MB budget"), message)
        XCTAssertTrue(
            location?.hasSuffix(Self.reduceLine) == true, "names the reducer's file:line: \(location ?? "nil")")
    }

    func testNaNABooleanKeyAndAMetatableAreRefusedAndRolledBack() throws {
        for (kind, text) in [
            ("nan", "state.x: NaN (not a number)"), ("boolKey", "state: a key of type boolean (true)"),
            ("metatable", "state.view: a table with a metatable"),
        ] {
            let (message, location) = try assertRollsBack(kind)
            XCTAssertTrue(message.hasPrefix(text), "\(kind): \(message)")
            XCTAssertTrue(
                location?.hasSuffix(Self.reduceLine) == true,
                "\(kind) names the reducer's file:line: \(location ?? "nil")")
        }
    }

    func testAFunctionInStateNamesItsPath() throws {
        let (message, location) = try assertRollsBack("function")
        XCTAssertTrue(message.hasPrefix("state.cb: "), message)
        XCTAssertTrue(
            location?.hasSuffix(Self.reduceLine) == true, "names the reducer's file:line: \(location ?? "nil")")
    }

    func testACycleNamesItsPath() throws {
        let (message, location) = try assertRollsBack("cycle")
        XCTAssertTrue(message.hasPrefix("state.self: "), message)
        XCTAssertTrue(
            location?.hasSuffix(Self.reduceLine) == true, "names the reducer's file:line: \(location ?? "nil")")
    }

    func testANestedFunctionNamesItsPath() throws {
        let (message, _) = try assertRollsBack("nested")
        XCTAssertTrue(message.hasPrefix("state.items[1].owner: "), message)
    }

    func testARejectedNewTableDoesNotReplaceTheState() throws {
        let (message, _) = try assertRollsBack("replaced")
        XCTAssertTrue(message.hasPrefix("state.cb: "), message)
    }

    func testAReducerThatReturnsNothing() throws {
        let (message, location) = try assertRollsBack("nothing")
        XCTAssertEqual(message, "roll.reduce must return the state table (got no value); end it with `return state`")
        XCTAssertTrue(
            location?.hasSuffix(Self.reduceLine) == true, "names the reducer's file:line: \(location ?? "nil")")
    }

    func testAnEffectWithoutAType() throws {
        let (message, _) = try assertRollsBack("badEffect")
        XCTAssertEqual(
            message, "an effect must be a table with a string 'type', or a list of them (got { kind = \"no type\" })")
    }
}
