import Foundation
import LuaKit
import MoonflowHost
import XCTest

/// A feature the host composed with `mf.compose` takes JSON actions as its children do.
final class ComposedJSONActionTests: XCTestCase {
    func testACompositionTakesJSON() throws {
        let h = try Harness([
            "orders/init.lua": """
                local mf = require "moonflow"
                return mf.feature {
                  name = "orders", initial = { log = {} },
                  actions = { add = { n = "integer" } }, mutations = { added = { n = "integer" } },
                  handle = function(a) return { type = "added", n = a.n } end,
                  reduce = function(s, m) s.log[#s.log + 1] = m.n; return s end,
                }
                """,
            "shop/init.lua": """
                local mf = require "moonflow"
                return mf.compose { name = "shop", children = { orders = "orders" },
                  route = function(action) return "orders", action end,
                  combine = function(states) return { log = states.orders.log } end }
                """,
        ])
        let shop = try h.load("shop")
        try shop.send(json: #"{"type":"add","n":4}"#)
        h.settle()
        XCTAssertEqual(shop.state["log"], [4])
        XCTAssertThrowsError(try shop.send(json: #"{"type":"add","n":"four"}"#), "the child's schema refuses it")
        XCTAssertEqual(shop.state["log"], [4])
    }
}
