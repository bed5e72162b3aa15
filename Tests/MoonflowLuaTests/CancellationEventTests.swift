import LuaKit
import MoonflowLua
import PluginFixtures
import XCTest

/// `env.cancel(id)` stops the streams marked `env.cancellable(id, ...)` and says so: a
/// `cancelled` event with the id and the action that cancelled, in loop order.
final class CancellationEventTests: XCTestCase {
    private static let feed = """
        local mf = require "moonflow"
        return mf.feature {
          name = "feed",
          initial = { page = 0, saved = 0 },
          actions = { more = {}, refresh = {}, save = {}, discard = {} },
          mutations = { appended = {}, replaced = {}, saving = {}, saved = {} },
          effects = {
            -- An effect handler's stream is cancellable too, by any action's handler.
            save = function(_, _, env) return env.cancellable("save", mf.timer(200, { type = "saved" })) end,
          },
          handle = function(action, state, env)
            if action.type == "more" then
              return env.cancellable("more", mf.timer(100, { type = "appended" }))
            elseif action.type == "refresh" then
              return mf.concat(env.cancel("more"), mf.timer(30, { type = "replaced" }))
            elseif action.type == "save" then
              return { type = "saving" }
            else
              return env.cancel("save", "nothing runs under this id")
            end
          end,
          reduce = function(state, m)
            if m.type == "appended" or m.type == "replaced" then state.page = state.page + 1 end
            if m.type == "saving" then return state, { type = "save" } end
            if m.type == "saved" then state.saved = state.saved + 1 end
            return state
          end,
        }
        """

    func testARefreshCancelsTheStaleMoreWithAnEventNamingIt() throws {
        let h = try Harness(["feed/init.lua": Self.feed])
        try h.load("feed")
        try h.send(["type": "more"])
        try h.send(["type": "refresh"], at: 50)
        h.advance(to: 400)
        let lines = h.log.lines.filter { !$0.contains(" state#") }
        XCTAssertEqual(
            lines,
            [
                #"0 action {"type":"more"}"#,
                #"50 action {"type":"refresh"}"#,
                #"50 cancelled more by {"type":"refresh"}"#,
                #"80 mutation#1 {"type":"replaced"}"#,
            ])
        XCTAssertEqual(h.state["page"], 1, "the page the stale `more` was loading never arrives")
    }

    func testAnActionCancelsAnEffectHandlersStream() throws {
        let h = try Harness(["feed/init.lua": Self.feed])
        try h.load("feed")
        try h.send(["type": "save"])
        try h.send(["type": "discard"], at: 20)
        h.advance(to: 500)
        let cancelled = h.log.lines.filter { $0.contains("cancelled") }
        XCTAssertEqual(
            cancelled, [#"20 cancelled save by {"type":"discard"}"#], "only an id with work running is reported")
        XCTAssertEqual(h.state["saved"], 0)
        XCTAssertTrue(h.feature.isIdle)
        XCTAssertEqual(h.feature.liveCancellableIDs, [])
    }
}
