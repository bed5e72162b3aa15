import LuaKit
import MoonflowLua
import XCTest

/// Outside `reduce` the state is read-only: `handle` and effect handlers read
/// it freely, a write fails naming the field, and nothing enters the state unannounced.
final class ReadOnlyStateTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "ro",
          initial = { count = 1, items = { { title = "a" }, { title = "b" } }, empty = mf.array() },
          actions = { poke = { what = "string" }, read = {}, copy = {}, fx = {} },
          mutations = { seen = { text = "string" }, items = { items = "table" }, fx = {} },
          handle = function(action, state)
            if action.type == "poke" then
              if action.what == "top" then state.hacked = true end
              if action.what == "nested" then state.items[1].title = "hacked" end
              if action.what == "insert" then table.insert(state.items, { title = "c" }) end
              return nil
            elseif action.type == "read" then
              local titles = {}
              for _, item in ipairs(state.items) do titles[#titles + 1] = item.title end
              local keys = {}
              for k in pairs(state) do keys[#keys + 1] = k end
              table.sort(keys)
              return { type = "seen", text = table.concat(titles, ",") .. " #" .. #state.items
                .. " " .. table.concat(keys, ",") .. " empty:" .. tostring(next(state.empty) == nil)
                .. " next:" .. tostring(next(state) ~= nil) }
            elseif action.type == "copy" then
              return { type = "items", items = state.items }
            end
            return { type = "fx" }
          end,
          reduce = function(state, m)
            if m.type == "items" then state.items = m.items end
            if m.type == "fx" then return state, { type = "probe" } end
            return state
          end,
          effects = { probe = function(effect, state) state.count = 2 end },
        }
        """

    private func harness() throws -> Harness {
        let h = try Harness(["ro/init.lua": Self.plugin])
        try h.load("ro")
        return h
    }

    func testAWriteInHandleFailsNamingTheFieldAndLeavesTheState() throws {
        for (what, field) in [("top", "state.hacked"), ("nested", "state.items[1].title"), ("insert", "state.items[3]")] {
            let h = try harness()
            let before = h.state
            try h.send(["type": "poke", "what": .string(LuaString(what))])
            XCTAssertEqual(h.log.errors.count, 1, what)
            XCTAssertTrue(h.log.errors.first?.message.contains("\(field) is read-only here: the state changes only in reduce") == true,
                          "\(what): \(h.log.errors.first?.message ?? "no error")")
            XCTAssertEqual(h.state, before, "nothing entered the state")
        }
    }

    func testHandleReadsTheStateAsUsual() throws {
        let h = try harness()
        try h.send(["type": "read"])
        XCTAssertEqual(h.log.mutations("text"), ["0:a,b #2 count,empty,items empty:true next:true"])
    }

    func testAViewPassedOnInAMutationIsCopiedAsThePlainTable() throws {
        let h = try harness()
        try h.send(["type": "copy"])
        XCTAssertEqual(h.log.errors.count, 0, "\(h.log.errors)")
        XCTAssertEqual(h.state["items"], [["title": "a"], ["title": "b"]])
    }

    func testEffectHandlersGetAReadOnlyStateToo() throws {
        let h = try harness()
        try h.send(["type": "fx"])
        XCTAssertTrue(h.log.errors.first?.message.contains("state.count is read-only here") == true, "\(h.log.errors)")
        XCTAssertEqual(h.state["count"], 1)
    }
}
