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
        for (what, field) in [
            ("top", "state.hacked"), ("nested", "state.items[1].title"), ("insert", "state.items[3]"),
        ] {
            let h = try harness()
            let before = h.state
            try h.send(["type": "poke", "what": .string(LuaString(what))])
            XCTAssertEqual(h.log.errors.count, 1, what)
            XCTAssertTrue(
                h.log.errors.first?.message.contains("\(field) is read-only here: the state changes only in reduce")
                    == true,
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

    /// A handler that declares no `state` parameter gets no view (it cannot reach the
    /// state); one that takes `...` can reach it, so it gets the read-only view.
    static let byParameters = """
        local mf = require "moonflow"
        return mf.feature {
          name = "params",
          initial = { count = 1 },
          actions = { bump = {}, sneak = {}, fx = {} },
          mutations = { add = { n = "integer" }, fx = {} },
          handle = function(action, ...)
            local state, env = ...
            if action.type == "sneak" then state.count = 99 end
            if action.type == "fx" then return { type = "fx" } end
            return { type = "add", n = state.count + (env and 1 or 0) }
          end,
          reduce = function(state, m)
            if m.type == "add" then state.count = state.count + m.n end
            if m.type == "fx" then return state, { type = "probe" } end
            return state
          end,
          effects = { probe = function(effect, ...) local state = ...; state.count = 7 end },
        }
        """

    func testAHandlerTakingDotsGetsTheReadOnlyStateAndEnv() throws {
        let h = try Harness(["params/init.lua": Self.byParameters])
        try h.load("params")
        try h.send(["type": "bump"])
        XCTAssertEqual(h.log.errors.count, 0, "\(h.log.errors)")
        XCTAssertEqual(h.state["count"], 3, "state.count (1) + 1 for env, added to 1")
        try h.send(["type": "sneak"])
        XCTAssertTrue(h.log.errors.first?.message.contains("state.count is read-only here") == true, "\(h.log.errors)")
        try h.send(["type": "fx"])
        XCTAssertTrue(h.log.errors.last?.message.contains("state.count is read-only here") == true, "\(h.log.errors)")
        XCTAssertEqual(h.state["count"], 3, "nothing entered the state")
    }

    func testAHandlerWithoutAStateParameterRunsAndLeavesViewsToOthers() throws {
        // The one-parameter handlers run without a view; a view kept by a later
        // two-parameter handler still fails after its call, as ever.
        let plugin = """
            local mf = require "moonflow"
            local kept
            return mf.feature {
              name = "one",
              initial = { count = 0 },
              actions = { bump = {}, keep = {}, use = {} },
              mutations = { add = { n = "integer" }, fx = {} },
              handle = function(action)
                if action.type == "bump" then return { type = "add", n = 2 } end
                return { type = "fx" }
              end,
              reduce = function(state, m)
                if m.type == "add" then state.count = state.count + m.n end
                if m.type == "fx" then return state, { type = "look" } end
                return state
              end,
              effects = {
                look = function(effect, state)
                  if kept then return mf.just { type = "add", n = kept.count } end
                  kept = state
                end,
              },
            }
            """
        let h = try Harness(["one/init.lua": plugin])
        try h.load("one")
        try h.send(["type": "bump"])
        try h.send(["type": "bump"])
        XCTAssertEqual(h.state["count"], 4)
        XCTAssertEqual(h.log.errors.count, 0, "\(h.log.errors)")
        try h.send(["type": "keep"])
        try h.send(["type": "use"])
        XCTAssertTrue(
            h.log.errors.first?.message.contains("kept after its effect handler call returned") == true,
            "an effect handler's view names its kind: \(h.log.errors)")
        XCTAssertEqual(h.state["count"], 4)
    }

    /// A Lua service may keep what it is handed (a draft to save later): the state it gets
    /// is a copy taken at the call, not a view that dies when `handle` returns. Before,
    /// reading it later failed with "this view of the state was kept after its handle call
    /// returned".
    func testALuaServiceKeepsTheStateItWasGivenAsItWasThen() throws {
        let plugin = """
            local mf = require "moonflow"
            local kept = {}
            return mf.feature {
              name = "one", initial = { cart = { lines = { { sku = "tea", qty = 1 } } }, total = 0 },
              actions = { keep = {}, add = {}, recall = {} },
              mutations = { added = {}, recalled = { qty = "integer" } },
              services = {
                keep = function(draft, wrapped) kept.draft, kept.wrapped = draft, wrapped; return true end,
                recall = function() return kept.draft.lines[1].qty + kept.wrapped.cart.lines[1].qty end,
              },
              handle = function(action, state, env)
                if action.type == "keep" then
                  return env.services.keep(state.cart, { cart = state.cart }):map(function() return nil end):filter(function() return false end)
                end
                if action.type == "add" then return { type = "added" } end
                return env.services.recall():map(function(q) return { type = "recalled", qty = q } end)
              end,
              reduce = function(state, m)
                if m.type == "added" then state.cart.lines[1].qty = state.cart.lines[1].qty + 1
                else state.total = m.qty end
                return state
              end,
            }
            """
        let h = try Harness(["one/init.lua": plugin])
        try h.load("one")
        try h.send(["type": "keep"])
        try h.send(["type": "add"])
        try h.send(["type": "recall"])
        XCTAssertEqual(h.log.errors.count, 0, "\(h.log.errors)")
        XCTAssertEqual(h.state["total"], 2, "the copies hold qty 1, as when kept (the state has 2 now)")
    }
}
