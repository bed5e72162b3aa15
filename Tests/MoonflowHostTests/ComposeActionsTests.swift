import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import XCTest

/// An `mf.compose` that declares `actions`, as a feature does: each action is checked before
/// `route`, and one it does not declare is refused naming the declared ones.
final class ComposeActionsTests: XCTestCase {
    static func plugins(actions: String) -> [String: String] {
        [
            "orders/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "orders", initial = { log = {} },
              actions = { add = { n = "integer" }, reset = {} }, mutations = { added = { n = "integer" } },
              handle = function(a) return { type = "added", n = a.n or 0 } end,
              reduce = function(s, m) s.log[#s.log + 1] = m.n; return s end,
            }
            """,
            "shop/init.lua": """
            local mf = require "moonflow"
            return mf.compose { name = "shop", children = { orders = "orders" },
              \(actions)
              route = function(action) return "orders", action end,
              combine = function(states) return { log = states.orders.log } end }
            """,
        ]
    }

    func testAnUndeclaredActionIsRefusedBeforeRouteNamingTheDeclaredOnes() throws {
        let h = try Harness(Self.plugins(actions: "actions = { add = { n = \"integer\" }, pay = {} },"))
        let shop = try h.load("shop")
        try shop.send(["type": "add", "n": 4])
        h.settle()
        XCTAssertEqual(shop.state["log"], [4])
        // `reset` is the child's, but the composite does not declare it: route never runs.
        XCTAssertThrowsError(try shop.send(["type": "reset"])) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("undeclared action 'reset'"), message)
            XCTAssertTrue(message.contains("declared actions: add, pay"), message)
        }
        XCTAssertThrowsError(try shop.send(["type": "add", "n": "four"])) { error in
            XCTAssertTrue("\(error)".contains("field 'n' must be an integer"), "\(error)")
        }
        h.settle()
        XCTAssertEqual(shop.state["log"], [4])
        XCTAssertEqual(shop.declaredActions?.names, ["add", "pay"])
    }

    func testWithoutADeclarationRouteDecidesAsBefore() throws {
        let h = try Harness(Self.plugins(actions: ""))
        let shop = try h.load("shop")
        try shop.send(["type": "reset"])
        h.settle()
        XCTAssertEqual(shop.state["log"], [0])
        XCTAssertNil(shop.declaredActions)
    }

    func testAMalformedDeclarationIsADefinitionError() throws {
        let h = try Harness(Self.plugins(actions: "actions = { pay = \"now\" },"))
        XCTAssertThrowsError(try h.load("shop")) { error in
            XCTAssertTrue("\(error)".contains("action 'pay': declare its fields as a table"), "\(error)")
        }
    }
}
