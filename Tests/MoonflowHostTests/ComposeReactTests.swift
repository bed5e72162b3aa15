import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowTesting
import PluginFixtures
import XCTest

/// An `mf.compose`'s `react`: a child's effect turned into actions for children, in Lua, in a
/// defined order, checked before any of it runs, kept across a reload, and seen by the test
/// store as steps of their own.
final class ComposeReactTests: XCTestCase {
    /// A cart, a payment whose `pay` answers with a `receipt` effect 100 ms later (or at once),
    /// and a shop over them whose `react` is `react`.
    static func plugins(react: String) -> [String: String] {
        [
            "cart/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "cart", initial = { n = 0 },
              actions = { add = {}, clear = {} }, mutations = { added = {}, cleared = {} },
              outputs = { emptied = {} },
              handle = function(a) return { type = a.type == "add" and "added" or "cleared" } end,
              reduce = function(s, m)
                if m.type == "added" then s.n = s.n + 1; return s end
                s.n = 0
                return s, { type = "emptied" }
              end,
            }
            """,
            "payment/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "payment", initial = { paid = 0 },
              actions = { pay = { now = "boolean?" } }, mutations = { paid = {} },
              outputs = { receipt = { id = "string" } },
              handle = function(a)
                if a.now then return { type = "paid" } end
                return mf.timer(100, { type = "paid" })
              end,
              reduce = function(s, m) s.paid = s.paid + 1; return s, { type = "receipt", id = "r" .. s.paid } end,
            }
            """,
            "shop/init.lua": """
            local mf = require "moonflow"
            return mf.compose { name = "shop", children = { cart = "cart", payment = "payment" },
              route = function(action) return action.type == "pay" and "payment" or "cart", action end,
              react = \(react),
              combine = function(s) return { n = s.cart.n, paid = s.payment.paid } end }
            """,
        ]
    }

    static let clearsTheCart = """
        function(child, effect)
            if child == "payment" and effect.type == "receipt" then return "cart", { type = "clear" }, mf.out end
          end
        """

    private func load(react: String = clearsTheCart) throws -> (Harness, any RunningFeature) {
        let h = try Harness(Self.plugins(react: react))
        let shop = try h.load("shop")
        return (h, shop)
    }

    /// The receipt (a timer's) clears the cart after the payment's step, then goes out: the
    /// pairs run in order, each action's step (the cart's own effect too) before the next.
    func testAReceiptClearsTheCartAfterThePaymentsStepThenGoesOut() throws {
        let (h, shop) = try load()
        try shop.send(["type": "add"])
        try shop.send(["type": "pay"])
        h.settle()
        h.log.clear()
        h.advance(to: 100)
        XCTAssertEqual(shop.state, ["n": 0, "paid": 1])
        XCTAssertEqual(
            h.log.lines,
            [
                #"100 mutation#2 {"type":"paid"}"#, #"100 state#2 {"n":1,"paid":1}"#,
                #"100 action(cart) {"type":"clear"} react(payment) {"id":"r1","type":"receipt"}"#,
                #"100 mutation#3 {"type":"cleared"}"#, #"100 state#3 {"n":0,"paid":1}"#,
                #"100 effect(cart) {"type":"emptied"}"#,
                #"100 effect(payment) {"id":"r1","type":"receipt"}"#,
            ])
    }

    /// An effect that comes at once reacts before the clock moves.
    func testAReactionToAnEffectAtOnceIsDoneBeforeTheClockMoves() throws {
        let (h, shop) = try load()
        try shop.send(["type": "add"])
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertEqual(shop.state, ["n": 0, "paid": 1])
        XCTAssertEqual(h.log.errors.count, 0)
    }

    /// Without an answer from `react` the effect goes out as before, and `mf.out` alone passes it.
    func testAnEffectReactLeavesAloneGoesOutUnchanged() throws {
        let (h, shop) = try load(react: "function() end")
        try shop.send(["type": "add"])
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertEqual(shop.state, ["n": 1, "paid": 1])
        XCTAssertEqual(h.log.lines.last, #"0 effect(payment) {"id":"r1","type":"receipt"}"#)
    }

    /// Pairs without `mf.out` keep the effect inside.
    func testAReactionWithoutOutKeepsTheEffectIn() throws {
        let (h, shop) = try load(
            react: #"function(child) if child == "payment" then return "cart", { type = "clear" } end end"#)
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertFalse(
            h.log.lines.contains { $0.contains("receipt") && $0.contains("effect(payment)") }, "\(h.log.lines)")
        XCTAssertTrue(h.log.lines.contains(#"0 effect(cart) {"type":"emptied"}"#), "\(h.log.lines)")
    }

    /// An unknown child: an error naming react's line, the child and the children; nothing
    /// of the reaction is done (not even the effect going out).
    func testAnUnknownChildIsAnErrorAndNothingIsDone() throws {
        let (h, shop) = try load(
            react: #"function(child) if child == "payment" then return mf.out, nil, "kart", { type = "clear" } end end"#
        )
        try shop.send(["type": "add"])
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertEqual(shop.state, ["n": 1, "paid": 1])
        let errors = h.log.errors.map(\.message)
        XCTAssertEqual(errors.count, 1, "\(errors)")
        let message = errors.first ?? ""
        XCTAssertTrue(message.contains("shop.react: effect 'receipt' from child 'payment'"), message)
        XCTAssertTrue(message.contains("unknown child 'kart'; children: cart, payment"), message)
        XCTAssertTrue(h.log.errors.first?.location?.contains("shop/init.lua:") ?? false, "\(h.log.errors)")
        XCTAssertFalse(h.log.lines.contains { $0.contains("effect(payment)") }, "\(h.log.lines)")
    }

    /// An action the child refuses: checked before anything runs, named with the child's declared ones.
    func testAnActionTheChildRefusesIsAnErrorAndNothingIsDone() throws {
        let (h, shop) = try load(
            react:
                #"function(child) if child == "payment" then return "cart", { type = "clear" }, "cart", { type = "empty" } end end"#
        )
        try shop.send(["type": "add"])
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertEqual(shop.state, ["n": 1, "paid": 1], "the first, good action was not sent either")
        let message = h.log.errors.first?.message ?? ""
        XCTAssertTrue(message.contains("sends child 'cart' action 'empty', which it refuses"), message)
        XCTAssertTrue(message.contains("declared actions: add, clear"), message)
    }

    /// Children whose effects react on each other forever are stopped, with an error saying so.
    func testACycleOfReactionsStops() throws {
        let (h, shop) = try load(
            react:
                #"function(child) if child == "cart" then return "payment", { type = "pay", now = true } else return "cart", { type = "clear" } end end"#
        )
        try shop.send(["type": "pay", "now": true])
        h.settle()
        let message = h.log.errors.first?.message ?? ""
        XCTAssertTrue(message.contains("sent 1000 actions in a row"), message)
        XCTAssertEqual(shop.state["paid"], 501)
    }

    /// A reload swaps `react` with the rest of the code (it is looked up by name).
    func testAReloadRunsTheNewReact() throws {
        let (h, shop) = try load(react: "function() end")
        try shop.send(["type": "add"])
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertEqual(shop.state, ["n": 1, "paid": 1])
        try Self.plugins(react: Self.clearsTheCart)["shop/init.lua"]!.write(
            toFile: h.path("shop/init.lua"), atomically: true, encoding: .utf8)
        try h.host.reload(shop)
        try shop.send(["type": "pay", "now": true])
        h.settle()
        XCTAssertEqual(shop.state, ["n": 0, "paid": 2])
    }

    /// The Swift test store: the reaction's mutations are received in order, exhaustively,
    /// with the reaction's action as their cause.
    func testTheTestStoreReceivesTheReactionsMutations() throws {
        let folder = try PluginFolder(Self.plugins(react: Self.clearsTheCart))
        let store = try FeatureStore("shop", searchPaths: [folder.dir])
        try store.send(["type": "add"]) { $0["n"] = 1 }
        try store.send(["type": "pay"])
        store.advance(by: 100)
        try store.receive(["type": "paid"]) { $0["paid"] = 1 }
        XCTAssertEqual(store.log.mutations.last?.cause, ["type": "clear"])
        try store.receive(["type": "cleared"]) { $0["n"] = 0 }
        try store.receiveEffect(["type": "emptied"], from: "cart")
        try store.receiveEffect(["type": "receipt", "id": "r1"], from: "payment")
        try store.finish()
    }
}
