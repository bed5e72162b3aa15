import Foundation
import XCTest

/// `T.store(plugin, { state = {...} })` and `T.explore`'s `state`: the fields given replace
/// `initial`'s, the others come from it (one level deep); on the built binary.
final class StartingStateTests: ScratchTestCase {
    func testTheStateGivenFillsInFromInitial() throws {
        try write(
            "plugins/inbox/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "inbox",
              initial = { unread = 3, filter = { folder = "all", flagged = false }, title = "Inbox" },
              state = { unread = "integer", filter = { folder = "string", flagged = "boolean?" }, title = "string" },
              actions = { read = {} },
              mutations = { read = {} },
              handle = function() return { type = "read" } end,
              reduce = function(state) state.unread = state.unread - 1; return state end,
            }
            """)
        try write(
            "plugins/inbox/spec/inbox_spec.lua",
            """
            local T = require "moonflow.test"
            it("starts from the fields given and initial's others", function()
              local store = T.store("inbox", { state = { unread = 1 } })
              assert.same({ unread = 1, filter = { folder = "all", flagged = false }, title = "Inbox" }, store.state)
              store:send({ type = "read" }, function(s) s.unread = 0 end)
            end)
            it("replaces a table field whole", function()
              local store = T.store("inbox", { state = { filter = { folder = "work" } } })
              assert.same({ unread = 3, filter = { folder = "work" }, title = "Inbox" }, store.state)
            end)
            """)
        let result = try Moonflow.run(["test"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.hasSuffix("2 passed, 0 failed\n"), result.stdout)
    }
}
